"""Cancelling a parent run cancels the agents it is running as tools, and the store stays consistent."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from weakprompt import Agent, FunctionAdapter, ModelRequest, Store
from weakprompt.adapters.testing import tool_call, tool_call_turn
from weakprompt.messages import AssistantTurn
from weakprompt.transcript import Transcript


def test_cancelling_the_parent_cancels_the_child_and_leaves_both_sessions_consistent(tmp_path: Path) -> None:
    started = asyncio.Event()
    child_cancelled: list[bool] = []
    gate = asyncio.Event()  # never set: the child's model waits until it is cancelled

    async def slow_child(_request: ModelRequest) -> AssistantTurn:
        started.set()
        try:
            await gate.wait()
        except asyncio.CancelledError:
            child_cancelled.append(True)
            raise
        return AssistantTurn(text="never")  # pragma: no cover - the gate never opens

    def parent_model(request: ModelRequest) -> AssistantTurn:
        if any(m.role == "tool" for m in request.context.messages):
            return AssistantTurn(text="parent done")
        return tool_call_turn(tool_call("kid", {"input": "work"}, id="c1"))

    child = Agent(FunctionAdapter(slow_child), instructions="You are slow.")
    parent = Agent(
        FunctionAdapter(parent_model),
        instructions="You delegate.",
        tools=[child.as_tool(name="kid", description="Ask the child.")],
    )
    store = Store.open(f"sqlite:///{tmp_path / 'runs.db'}")

    async def main() -> None:
        task = asyncio.ensure_future(parent.run("go", store=store, session="root"))
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert child_cancelled == [True]
    # nothing of the cancelled turn is stored: the parent's tool call has no half turn, the child none
    roles = [c.content.role for c in Transcript(store, "root").log()]
    assert "tool" not in roles and roles.count("assistant") == 0
    assert [c.content.role for c in Transcript(store, "root/kid:c1").log()] == ["system", "user"]

    # the sessions are free again (no lease held): the same conversation runs to its end
    gate.set()
    replay = Agent(
        FunctionAdapter(parent_model),
        instructions="You delegate.",
        tools=[
            Agent(FunctionAdapter(lambda _r: "quick"), instructions="Quick.").as_tool(
                name="kid", description="K."
            )
        ],
    )
    response = replay.run_sync("again", store=store, session="root")
    assert response.text == "parent done"
    assert "root/kid:c1#2" in store.session_ids()  # the new call got a conversation of its own
    quick = Agent(FunctionAdapter(lambda _r: "resumed by hand"), instructions="Quick.")
    assert quick.run_sync("go on", store=store, session="root/kid:c1").text == "resumed by hand"
