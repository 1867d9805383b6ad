"""Shared pieces for the adapter tests: tools, a neutral conversation, fake HTTP.

The fakes live at the httpx transport level only: the official SDK builds
the request, retries, and parses the response exactly as in production.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx2

from weakprompt.messages import AssistantTurn, Message, ToolCall, Usage
from weakprompt.model import CompiledContext, ModelRequest, ModelSettings, ToolChoice
from weakprompt.parts import ReasoningPart
from weakprompt.tools import ToolContext, ToolResult, tool


@dataclass(frozen=True)
class WeatherParams:
    city: str
    unit: Literal["celsius", "fahrenheit"] = "celsius"


@tool
def get_weather(params: WeatherParams, *, context: ToolContext) -> ToolResult[str]:
    """Current weather for a city."""
    return ToolResult.ok(f"18 degrees {params.unit} in {params.city}")


@dataclass(frozen=True)
class SearchParams:
    query: str
    limit: int = 3


@tool
def search_notes(params: SearchParams, *, context: ToolContext) -> ToolResult[list[str]]:
    """Search the user's notes."""
    return ToolResult.ok([params.query])


TOOLS = (get_weather, search_notes)


def make_request(
    messages: Sequence[Message],
    *,
    tools: Sequence[Any] = (),
    tool_choice: ToolChoice = "auto",
    output_schema: dict[str, Any] | None = None,
    output_name: str | None = None,
    max_output_tokens: int | None = None,
    settings: ModelSettings | None = None,
) -> ModelRequest:
    return ModelRequest(
        context=CompiledContext(messages=tuple(messages)),
        tools=tuple(tools),
        tool_choice=tool_choice,
        output_schema=output_schema,
        output_name=output_name,
        max_output_tokens=max_output_tokens,
        settings=settings or ModelSettings(),
    )


# The scripted neutral conversation every adapter must carry unchanged.
SYSTEM = Message(role="system", content="You answer weather questions in one sentence.")
USER = Message(role="user", content="What is the weather in Paris?")
TOOL_TURN = AssistantTurn(
    text="",
    tool_calls=(ToolCall(id="call_w1", name="get_weather", arguments='{"city":"Paris"}'),),
    usage=Usage(input_tokens=40, output_tokens=9, model_calls=1),
    finish_reason="tool_calls",
)
TOOL_RESULT = Message(
    role="tool", content="18 degrees celsius in Paris", tool_call_id="call_w1", name="get_weather"
)
ANSWER_TURN = AssistantTurn(
    text="It is 18 degrees and mild in Paris.",
    usage=Usage(input_tokens=70, output_tokens=11, model_calls=1),
    finish_reason="stop",
)


def assistant_message(turn: AssistantTurn) -> Message:
    return Message(role="assistant", content=turn.text, tool_calls=turn.tool_calls)


FIRST_PROMPT = (SYSTEM, USER)
SECOND_PROMPT = (SYSTEM, USER, assistant_message(TOOL_TURN), TOOL_RESULT)


# ---------------------------------------------------------------- wire encoders (provider side)


def openai_completion_body(turn: AssistantTurn, *, model: str = "test-model") -> dict[str, Any]:
    """What a Chat Completions server would answer to produce ``turn``."""
    message: dict[str, Any] = {"role": "assistant", "content": turn.text or None}
    if turn.tool_calls:
        message["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {
                    "name": call.name,
                    "arguments": call.arguments
                    if isinstance(call.arguments, str)
                    else json.dumps(dict(call.arguments)),
                },
            }
            for call in turn.tool_calls
        ]
    finish = {"stop": "stop", "tool_calls": "tool_calls", "length": "length"}.get(
        turn.finish_reason, "content_filter"
    )
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 1700000000,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": {
            "prompt_tokens": turn.usage.input_tokens,
            "completion_tokens": turn.usage.output_tokens,
            "total_tokens": turn.usage.total_tokens,
            "prompt_tokens_details": {"cached_tokens": turn.usage.cached_input_tokens},
        },
    }


def anthropic_message_body(turn: AssistantTurn, *, model: str = "claude-test") -> dict[str, Any]:
    """What the Messages API would answer to produce ``turn``."""
    content: list[dict[str, Any]] = [anthropic_reasoning_block(part) for part in turn.reasoning]
    if turn.text:
        content.append({"type": "text", "text": turn.text})
    for call in turn.tool_calls:
        arguments = json.loads(call.arguments) if isinstance(call.arguments, str) else dict(call.arguments)
        content.append({"type": "tool_use", "id": call.id, "name": call.name, "input": arguments})
    stop = {"stop": "end_turn", "tool_calls": "tool_use", "length": "max_tokens"}.get(
        turn.finish_reason, "refusal"
    )
    cached = turn.usage.cached_input_tokens
    return {
        "id": "msg_test",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {
            "input_tokens": turn.usage.input_tokens - cached - turn.usage.cache_write_tokens,
            "output_tokens": turn.usage.output_tokens,
            "cache_read_input_tokens": cached,
            "cache_creation_input_tokens": turn.usage.cache_write_tokens,
        },
    }


def anthropic_reasoning_block(part: ReasoningPart) -> dict[str, Any]:
    """A reasoning part as the Messages API returns it (thinking, or redacted thinking)."""
    if part.redacted:
        return {"type": "redacted_thinking", "data": part.encrypted}
    return {"type": "thinking", "thinking": part.text, "signature": part.signature}


def anthropic_error_body(kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}


def openai_error_body(message: str, kind: str, code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


# ---------------------------------------------------------------- wire decoders (back to neutral)


def decode_openai_messages(wire: Sequence[Mapping[str, Any]]) -> list[Message]:
    """Chat Completions request messages -> neutral messages."""
    out: list[Message] = []
    for m in wire:
        if m["role"] == "tool":
            name = _call_name(out, m["tool_call_id"])
            out.append(Message(role="tool", content=m["content"], tool_call_id=m["tool_call_id"], name=name))
            continue
        calls = tuple(
            ToolCall(id=c["id"], name=c["function"]["name"], arguments=c["function"]["arguments"])
            for c in m.get("tool_calls") or ()
        )
        out.append(Message(role=m["role"], content=m.get("content") or "", tool_calls=calls))
    return out


def decode_anthropic_request(body: Mapping[str, Any]) -> list[Message]:
    """Messages API request body -> neutral messages (tool names recovered from tool_use ids)."""
    out: list[Message] = []
    if body.get("system"):
        out.append(Message(role="system", content=body["system"]))
    for m in body["messages"]:
        blocks = m["content"] if isinstance(m["content"], list) else [{"type": "text", "text": m["content"]}]
        if m["role"] == "assistant":
            text = "".join(b["text"] for b in blocks if b["type"] == "text")
            calls = tuple(
                ToolCall(id=b["id"], name=b["name"], arguments=json.dumps(b["input"]))
                for b in blocks
                if b["type"] == "tool_use"
            )
            out.append(Message(role="assistant", content=text, tool_calls=calls))
            continue
        for b in blocks:
            if b["type"] == "tool_result":
                out.append(
                    Message(
                        role="tool",
                        content=b["content"],
                        tool_call_id=b["tool_use_id"],
                        name=_call_name(out, b["tool_use_id"]),
                        is_error=b.get("is_error", False),
                    )
                )
            else:
                out.append(Message(role="user", content=b["text"]))
    return out


def _call_name(history: Sequence[Message], call_id: str) -> str | None:
    for message in history:
        for call in message.tool_calls:
            if call.id == call_id:
                return call.name
    return None


def normalized(messages: Sequence[Message], *, keep_errors: bool = True) -> list[tuple[Any, ...]]:
    """Messages with tool-call arguments compared as parsed JSON (providers differ in spacing).

    ``keep_errors=False`` for OpenAI-shaped wires, which have no failure flag on
    tool results (the failure is in the result text).
    """
    return [
        (
            m.role,
            m.content,
            tuple((c.id, c.name, _args(c.arguments)) for c in m.tool_calls),
            m.tool_call_id,
            m.name if m.role == "tool" else None,
            m.is_error if keep_errors else None,
        )
        for m in messages
    ]


def normalized_turn(turn: AssistantTurn) -> tuple[Any, ...]:
    return (
        turn.text,
        tuple((c.id, c.name, _args(c.arguments)) for c in turn.tool_calls),
        turn.usage,
        turn.finish_reason,
    )


def _args(arguments: str | Mapping[str, Any]) -> Any:
    if isinstance(arguments, str):
        try:
            return json.loads(arguments)
        except ValueError:
            return arguments
    return dict(arguments)


# ---------------------------------------------------------------- fake HTTP


@dataclass
class FakeServer:
    """Answers requests from a queue of (status, JSON body, headers) and records them."""

    responses: list[tuple[int, Any, dict[str, str]]] = field(default_factory=list)
    requests: list[httpx2.Request] = field(default_factory=list)
    fail_with: Callable[[httpx2.Request], Exception] | None = None

    def reply(self, status: int, body: Any, **headers: str) -> FakeServer:
        self.responses.append((status, body, headers))
        return self

    def always(self, status: int, body: Any, count: int, **headers: str) -> FakeServer:
        for _ in range(count):
            self.reply(status, body, **headers)
        return self

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        if self.fail_with is not None:
            raise self.fail_with(request)
        if not self.responses:
            raise AssertionError(f"unexpected request #{len(self.requests)} to {request.url}")
        status, body, headers = self.responses.pop(0)
        return httpx2.Response(status, json=body, headers=headers)

    def bodies(self) -> list[dict[str, Any]]:
        return [json.loads(r.content) for r in self.requests]

    def client(self) -> httpx2.Client:
        return httpx2.Client(transport=httpx2.MockTransport(self))


# Retry quickly: both SDKs honour retry-after-ms.
FAST_RETRY = {"retry-after-ms": "1"}
