"""The loop sends the stable prefix, the conversation, then the turn text: earlier bytes never change.

Requests go through the official OpenAI SDK over a fake transport; the
recorded bodies are compared turn to turn, byte for byte.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

from cache_support import Status, Who, cache_template, openai_adapter, script_openai, stable_prefix
from stream_support import StreamServer
from weakprompt.agent import Agent
from weakprompt.model import TURN_CONTEXT_KEY
from weakprompt.session import Session
from weakprompt.store import Store
from weakprompt.transcript import Transcript


def test_turn_state_change_keeps_every_earlier_request_byte_identical(tmp_path: Path) -> None:
    server = script_openai(StreamServer(), 3)
    with Store.open(tmp_path / "cache.db") as store:
        agent = Agent(openai_adapter(server), template=cache_template(), store=store)
        session = Session(session_id="s-1")
        for step in range(3):
            agent.run_sync(f"question {step}", session=session, params=[Status(step), Who("Ada")])
        raws = [request.content for request in server.requests]
        assert len(raws) == 6
        for before, after in itertools.pairwise(raws):
            assert after.startswith(stable_prefix(before))
        bodies = server.bodies()
        assert all(body["messages"][-1]["content"].count("Step ") == 1 for body in bodies)
        assert "Step 2 of 20." in bodies[-1]["messages"][-1]["content"]
        assert all("Step" not in body["messages"][0]["content"] for body in bodies)
        assert len({json.dumps(body["tools"]) for body in bodies}) == 1
        # the turn text is never a commit: the transcript holds the conversation only
        context = Transcript(store, "s-1").compile()
        assert not any("<turn-context>" in message.content for message in context.messages)
        assistant = [m for m in context.messages if m.role == "assistant"]
        assert assistant[-1].metadata[TURN_CONTEXT_KEY] == "## 3. Status\n\nStep 2 of 20."


def test_sessions_of_one_template_version_share_the_stable_prefix(tmp_path: Path) -> None:
    server = script_openai(StreamServer(), 2)
    with Store.open(tmp_path / "cache.db") as store:
        agent = Agent(openai_adapter(server), template=cache_template(), store=store)
        agent.run_sync("hello", session=Session(session_id="a"), params=[Status(1), Who("Ada")])
        agent.run_sync("hello", session=Session(session_id="b"), params=[Status(7), Who("Grace")])
    first, second = server.requests[0].content, server.requests[2].content
    shared = first.index(b"The user is")
    assert first[:shared] == second[:shared]
    assert b"You answer with one fact." in first[:shared]
