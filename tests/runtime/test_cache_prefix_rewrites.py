"""What rewrites or repeats history keeps the prefix: approval and resume, a resume after a failed
run, and a fallback within one provider send the same bytes before the turn text.

Bodies recorded through the official OpenAI SDK over a fake transport.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from adapters_support import openai_error_body
from cache_support import (
    Q,
    Status,
    Who,
    answer_turn,
    openai_adapter,
    script_openai,
    stable_prefix,
    tool_turn,
)
from stream_support import StreamServer, openai_stream_chunks, sse_data
from weakprompt.adapters import FallbackAdapter
from weakprompt.agent import Agent
from weakprompt.errors import AdapterError
from weakprompt.prompt import MarkdownSection, PromptTemplate
from weakprompt.runtime import Approve, PausedRun
from weakprompt.store import Store
from weakprompt.tools import ToolContext, ToolResult, tool


@tool(name="lookup", description="Look a fact up.", requires_approval=True)
def guarded_lookup(params: Q, *, context: ToolContext) -> ToolResult[None]:
    return ToolResult(message=f"fact about {params.q}")


def guarded_template() -> PromptTemplate[None]:
    return PromptTemplate(
        ns="tests/cache",
        key="guarded",
        sections=[
            MarkdownSection(
                title="Status", key="status", template="Step $step.", params_type=Status, volatility="turn"
            ),
            MarkdownSection(
                title="Role", key="role", template="Answer with one fact.", tools=[guarded_lookup]
            ),
            MarkdownSection(
                title="User", key="user", template="The user is $name.", params_type=Who, volatility="session"
            ),
        ],
    )


def test_approval_pause_and_resume_send_the_paused_requests_bytes_first(tmp_path: Path) -> None:
    server = script_openai(StreamServer(), 1)
    with Store.open(tmp_path / "cache.db") as store:
        agent = Agent(openai_adapter(server), template=guarded_template(), store=store)
        params = [Status(1), Who("Ada")]
        first = agent.run_sync("question", session="s", params=params)
        assert first.paused is not None
        decisions = [Approve(waiting.call_id, waiting.token) for waiting in first.paused.pending]
        done = agent.resume_sync("s", decisions, params=params)
        assert done.text == "answer 0"
    before, after = (request.content for request in server.requests)
    assert after.startswith(stable_prefix(before))


def test_a_resume_after_a_failed_call_sends_the_failed_requests_bytes(tmp_path: Path) -> None:
    server = StreamServer()
    server.stream(sse_data(*openai_stream_chunks(tool_turn(0)), "[DONE]"))
    server.json(400, openai_error_body("bad gateway today", "invalid_request_error"))
    server.stream(sse_data(*openai_stream_chunks(answer_turn(0)), "[DONE]"))
    template = guarded_template()
    with Store.open(tmp_path / "cache.db") as store:
        agent = Agent(openai_adapter(server), template=template, store=store, approve=_approve_all)
        params = [Status(1), Who("Ada")]
        with pytest.raises(AdapterError):
            agent.run_sync("question", session="s", params=params)
        done = agent.resume_sync("s", params=params)
        assert done.text == "answer 0"
    _, failed, resumed = (request.content for request in server.requests)
    assert resumed == failed


def test_a_fallback_within_one_provider_sends_the_same_bytes(tmp_path: Path) -> None:
    failing = StreamServer()
    for _ in range(2):  # every call fails over, the tool turn and the answer
        failing.json(500, openai_error_body("overloaded", "server_error"))
    answering = script_openai(StreamServer(), 1)
    adapter = FallbackAdapter([openai_adapter(failing), openai_adapter(answering)])
    with Store.open(tmp_path / "cache.db") as store:
        agent = Agent(adapter, template=guarded_template(), store=store, approve=_approve_all)
        agent.run_sync("question", session="s", params=[Status(1), Who("Ada")])
    assert [r.content for r in failing.requests] == [r.content for r in answering.requests]
    assert len(answering.requests) == 2


def _approve_all(paused: PausedRun) -> list[Approve]:
    return [Approve(waiting.call_id, waiting.token) for waiting in paused.pending]
