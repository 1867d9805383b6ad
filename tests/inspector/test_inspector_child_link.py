"""The inspector follows a tool result's link to the session of the agent the call ran."""

from __future__ import annotations

from pathlib import Path

import pytest

from weakprompt import Agent, ScriptedAdapter, Store
from weakprompt.adapters.testing import tool_call, tool_call_turn
from weakprompt.messages import AssistantTurn

pytest.importorskip("starlette")

from starlette.testclient import TestClient

from weakprompt.inspector import create_app


def test_session_page_links_an_agent_calls_result_to_the_child_session(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    child = Agent(ScriptedAdapter([AssistantTurn(text="child answer")]), instructions="You answer.")
    parent = Agent(
        ScriptedAdapter(
            [tool_call_turn(tool_call("kid", {"input": "hi"}, id="c1")), AssistantTurn(text="ok")]
        ),
        instructions="You delegate.",
        tools=[child.as_tool(name="kid", description="Ask the child agent.")],
    )
    store = Store.open(f"sqlite:///{db}")
    parent.run_sync("go", store=store, session="root")
    store.close()
    with TestClient(create_app(str(db)), base_url="http://127.0.0.1") as client:
        page = client.get("/session", params={"id": "root"}).text
        assert 'class="child-link mono" href="/session?id=root%2Fkid%3Ac1"' in page
        child_page = client.get("/session", params={"id": "root/kid:c1"})
        assert child_page.status_code == 200
        assert "child answer" in child_page.text
