"""Shared pieces for the cache-layout tests: a tool-using script over the SDKs' fake transports."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import anthropic
import openai

from stream_support import StreamServer, anthropic_stream_events, openai_stream_chunks, sse_data, sse_events
from weakprompt.adapters.anthropic import AnthropicAdapter
from weakprompt.adapters.openai import OpenAIAdapter
from weakprompt.messages import AssistantTurn, ToolCall, Usage
from weakprompt.prompt import MarkdownSection, PromptTemplate
from weakprompt.tools import ToolContext, ToolResult, tool

MARK = b"<turn-context>"


@dataclass(frozen=True)
class Status:
    step: int


@dataclass(frozen=True)
class Who:
    name: str


@dataclass(frozen=True)
class Q:
    q: str


@tool(name="lookup", description="Look a fact up.")
def lookup(params: Q, *, context: ToolContext) -> ToolResult[None]:
    return ToolResult(message=f"fact about {params.q}")


@tool(name="note", description="Write a note down.")
def note(params: Q, *, context: ToolContext) -> ToolResult[None]:
    return ToolResult(message="noted")


def cache_template() -> PromptTemplate[None]:
    """A turn section declared first, a stable role with tools, a session section."""
    return PromptTemplate(
        ns="tests/cache",
        key="loop",
        sections=[
            MarkdownSection(
                title="Status",
                key="status",
                template="Step $step of 20.",
                params_type=Status,
                volatility="turn",
            ),
            MarkdownSection(
                title="Role", key="role", template="You answer with one fact.", tools=[lookup, note]
            ),
            MarkdownSection(
                title="User", key="user", template="The user is $name.", params_type=Who, volatility="session"
            ),
        ],
    )


def tool_turn(n: int) -> AssistantTurn:
    call = ToolCall(id=f"call_{n}", name="lookup", arguments=json.dumps({"q": f"topic {n}"}))
    return AssistantTurn(text="", tool_calls=(call,), usage=Usage(10, 2), finish_reason="tool_calls")


def answer_turn(n: int) -> AssistantTurn:
    return AssistantTurn(text=f"answer {n}", usage=Usage(12, 3), finish_reason="stop")


def script_openai(server: StreamServer, turns: int) -> StreamServer:
    """Each run: a lookup call, then an answer."""
    for n in range(turns):
        for turn in (tool_turn(n), answer_turn(n)):
            server.stream(sse_data(*openai_stream_chunks(turn), "[DONE]"))
    return server


def script_anthropic(server: StreamServer, turns: int) -> StreamServer:
    for n in range(turns):
        for turn in (tool_turn(n), answer_turn(n)):
            server.stream(sse_events(*anthropic_stream_events(turn)))
    return server


def openai_adapter(server: StreamServer, **options: Any) -> OpenAIAdapter:
    client = openai.OpenAI(
        api_key="sk-test", base_url="http://fake.test/v1", http_client=server.sync_client(), max_retries=0
    )
    return OpenAIAdapter("gpt-test", client=client, **options)


def anthropic_adapter(server: StreamServer, **options: Any) -> AnthropicAdapter:
    client = anthropic.Anthropic(
        api_key="sk-ant-test", base_url="http://fake.test", http_client=server.sync_client(), max_retries=0
    )
    return AnthropicAdapter("claude-test", client=client, **options)


def stable_prefix(raw: bytes) -> bytes:
    """A request's bytes before its first volatile byte: up to the trailing turn-context message."""
    at = raw.index(MARK)
    return raw[: raw.rindex(b"{", 0, at)]
