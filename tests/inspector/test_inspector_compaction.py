"""The inspector shows where a session was compacted and which commits each compaction covers."""

from __future__ import annotations

from pathlib import Path

import pytest

from compaction_support import LongSession, make_lookup, summarizer
from weakprompt import Agent, CompactionSettings, Store
from weakprompt.adapters.testing import FunctionAdapter
from weakprompt.transcript import COMPACTION_KEY, Transcript

pytest.importorskip("starlette")

from starlette.testclient import TestClient

from weakprompt.inspector import create_app


def test_session_page_shows_compaction_boundaries_and_what_a_summary_covers(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    store = Store.open(f"sqlite:///{db}")
    agent = Agent(
        FunctionAdapter(LongSession(steps=30)), instructions="Look.", tools=[make_lookup()], max_turns=40
    )
    settings = CompactionSettings(context_window=4096, summarizer=summarizer(), keep_recent_turns=2)
    agent.run_sync("go", store=store, session="long", compaction=settings)
    summary = next(
        c
        for c in Transcript(store, "long").log()
        if (c.metadata.get(COMPACTION_KEY) or {}).get("tier") == "summary"  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType]
    )
    store.close()
    with TestClient(create_app(str(db)), base_url="http://127.0.0.1") as client:
        page = client.get("/session", params={"id": "long"}, follow_redirects=True).text
    assert 'class="compaction" data-tier="summary"' in page
    assert 'class="compaction" data-tier="slim"' in page
    assert "[Summary of the" in page
    covered = summary.metadata[COMPACTION_KEY]["covers"][0]  # pyright: ignore[reportIndexIssue, reportArgumentType, reportCallIssue, reportUnknownVariableType]
    assert covered[:12] in page  # pyright: ignore[reportUnknownArgumentType]
