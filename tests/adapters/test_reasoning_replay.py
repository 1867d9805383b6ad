"""The replay-to-issuer rule across providers, pauses and crashes, through real SDK transports and SQLite."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest
from anthropic.types import MessageParam
from openai.types.responses import ResponseInputItemParam
from pydantic import TypeAdapter

from adapters_support import anthropic_error_body
from stream_support import StreamServer, anthropic_stream_events, sse_events
from weakprompt import Agent, Approve, Store, tool
from weakprompt.adapters import AnthropicAdapter, FallbackAdapter, OpenAIResponsesAdapter
from weakprompt.messages import AssistantTurn, ToolCall, Usage
from weakprompt.model import ModelSettings
from weakprompt.parts import ReasoningPart
from weakprompt.transcript import Transcript

MESSAGE = TypeAdapter(MessageParam)
ITEM = TypeAdapter(ResponseInputItemParam)
THINKING = {
    "type": "thinking",
    "thinking": 'Ünïcode "quotes"\n\tand </tags> \\ to keep: the city is Paris.',
    "signature": "EqQBCkYIBxgCKkA+/=sig==",
}
HIDDEN = {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/+=="}
THINKS = ModelSettings(thinking_budget=2048)
THOUGHT = ReasoningPart(THINKING["thinking"], issuer="anthropic:claude-test", signature=THINKING["signature"])
REDACTED = ReasoningPart(issuer="anthropic:claude-test", encrypted=HIDDEN["data"], redacted=True)


def _calling(*reasoning: ReasoningPart, name: str, call_id: str, arguments: dict[str, Any]) -> bytes:
    """The Messages API stream of a reply that thinks, then calls one tool."""
    turn = AssistantTurn(
        tool_calls=(ToolCall(call_id, name, arguments),),
        usage=Usage(input_tokens=30, output_tokens=60, model_calls=1),
        finish_reason="tool_calls",
        parts=reasoning,
    )
    return sse_events(*anthropic_stream_events(turn))


def _answering(text: str) -> bytes:
    turn = AssistantTurn(text=text, usage=Usage(input_tokens=30, output_tokens=6, model_calls=1))
    return sse_events(*anthropic_stream_events(turn))


def _anthropic(server: StreamServer) -> AnthropicAdapter:
    client = anthropic.AsyncAnthropic(
        api_key="k", base_url="http://fake.test", http_client=server.async_client()
    )
    return AnthropicAdapter("claude-test", async_client=client, settings=THINKS, retries=0)


def _valid_anthropic(body: dict[str, Any]) -> list[dict[str, Any]]:
    for message in body["messages"]:
        MESSAGE.validate_python(message)
    return body["messages"]


@tool
def weather(city: str) -> str:
    """The weather in a city."""
    return f"18 degrees in {city}"


@tool(requires_approval=True)
def remove(path: str) -> str:
    """Remove a file."""
    return f"removed {path}"


# ---------------------------------------------------------------- fallback between providers


def _responses_stream() -> bytes:
    """A Responses stream that reasons (encrypted) and calls the weather tool for Oslo."""
    reasoning = {"id": "rs_1", "type": "reasoning", "summary": [], "encrypted_content": "gAAAA"}
    call = {
        "id": "fc_1",
        "type": "function_call",
        "call_id": "call_2",
        "name": "weather",
        "arguments": '{"city":"Oslo"}',
        "status": "completed",
    }
    response = {
        "id": "resp_1",
        "object": "response",
        "created_at": 1,
        "model": "o4-test",
        "status": "completed",
        "output": [reasoning, call],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": 30,
            "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
            "output_tokens": 40,
            "output_tokens_details": {"reasoning_tokens": 20},
            "total_tokens": 70,
        },
    }
    events = [
        {"type": "response.output_item.done", "output_index": 0, "item": reasoning},
        {"type": "response.output_item.done", "output_index": 1, "item": call},
        {"type": "response.completed", "response": response},
    ]
    return sse_events(*((e["type"], {**e, "sequence_number": n}) for n, e in enumerate(events)))


def test_a_fallback_that_switches_provider_mid_run_sends_valid_requests_to_both(tmp_path: Path) -> None:
    claude = StreamServer()
    claude.stream(_calling(THOUGHT, name="weather", call_id="toolu_1", arguments={"city": "Paris"}))
    claude.json(529, anthropic_error_body("overloaded_error", "Overloaded"))
    claude.stream(_answering("Mild in both."))
    gpt = StreamServer().stream(_responses_stream())
    responses = OpenAIResponsesAdapter(
        "o4-test",
        async_client=openai.AsyncOpenAI(
            api_key="k", base_url="https://api.test/v1", http_client=gpt.async_client()
        ),
        settings=ModelSettings(reasoning_effort="low"),
    )
    adapter = FallbackAdapter([_anthropic(claude), responses])
    with Store.open(tmp_path / "runs.db") as store:
        agent = Agent(adapter, instructions="Weather in Paris and Oslo.", tools=[weather], store=store)
        assert agent.run_sync("Go.", session="fb").text == "Mild in both."

    (to_gpt,) = gpt.bodies()
    for item in to_gpt["input"]:
        ITEM.validate_python(item)
    kinds = [item["type"] for item in to_gpt["input"]]
    assert kinds == [
        "message",
        "message",
        "function_call",
        "function_call_output",
    ]  # Claude's thinking: dropped
    first, _, third = claude.bodies()
    assert first["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    messages = _valid_anthropic(third)
    assert messages[1]["content"][0] == THINKING  # its own thinking, verbatim
    assert [block["type"] for block in messages[3]["content"]] == ["tool_use"]  # OpenAI's reasoning: dropped
    # the tool-use turn went on without thinking (OpenAI's part of it had none): thinking stays off for it
    assert "thinking" not in third


# ---------------------------------------------------------------- approval pause, then resume


def test_approval_pause_and_resume_send_the_thinking_blocks_back_byte_identical(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    asking = StreamServer().stream(
        _calling(THOUGHT, REDACTED, name="remove", call_id="toolu_9", arguments={"path": "a.txt"})
    )
    with Store.open(db) as store:
        agent = Agent(_anthropic(asking), instructions="Tidy.", tools=[remove], store=store)
        first = agent.run_sync("Tidy.", session="p1")
    assert first.paused is not None
    (waiting,) = first.paused.pending

    answering = StreamServer().stream(_answering("Removed."))
    with Store.open(db) as store:  # another store handle: only what the store kept carries the blocks
        agent = Agent(_anthropic(answering), instructions="Tidy.", tools=[remove], store=store)
        done = agent.resume_sync("p1", [Approve(waiting.call_id, waiting.token)])
    assert done.text == "Removed."
    (body,) = answering.bodies()
    messages = _valid_anthropic(body)
    assert messages[1]["content"][:2] == [THINKING, HIDDEN]
    raw = answering.requests[0].content
    assert json.dumps(THINKING["signature"]).encode() in raw and json.dumps(HIDDEN["data"]).encode() in raw
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}


# ---------------------------------------------------------------- crash, then resume


@tool(idempotent=True)
def crashing_weather(city: str) -> str:
    """The weather in a city (the process dies while it runs, once)."""
    if os.environ.get("REASONING_CRASH") == "1":
        os.kill(os.getpid(), signal.SIGKILL)
    return f"18 degrees in {city}"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_crash_resume_sends_the_thinking_block_back_byte_identical(tmp_path: Path) -> None:
    db = tmp_path / "crash.db"
    pid = os.fork()
    if pid == 0:  # the child: the model asks for the tool, the process dies inside it
        try:
            os.environ["REASONING_CRASH"] = "1"
            server = StreamServer().stream(
                _calling(THOUGHT, name="crashing_weather", call_id="toolu_c", arguments={"city": "Rome"})
            )
            with Store.open(db) as store:
                agent = Agent(
                    _anthropic(server), instructions="Weather.", tools=[crashing_weather], store=store
                )
                agent.run_sync("Rome?", session="c1")
        finally:
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status)

    answering = StreamServer().stream(_answering("Warm in Rome."))
    with Store.open(db) as store:
        agent = Agent(_anthropic(answering), instructions="Weather.", tools=[crashing_weather], store=store)
        assert agent.resume_sync("c1").text == "Warm in Rome."
        stored = Transcript(store, "c1").compile().messages
    messages = _valid_anthropic(answering.bodies()[0])
    assert messages[1]["content"][0] == THINKING
    said = next(m for m in stored if m.role == "assistant")
    assert said.parts[0] == THOUGHT
