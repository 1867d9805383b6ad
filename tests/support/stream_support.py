"""Helpers for streaming tests: drain an adapter's stream, generate neutral turns."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx2
from hypothesis import strategies as st

from weakprompt.messages import AssistantTurn, ToolCall, Usage
from weakprompt.model import ModelEvent, ModelRequest, ProviderAdapter, ReplyCompleted

E = TypeVar("E")


async def drain(events: AsyncIterator[ModelEvent]) -> list[ModelEvent]:
    return [event async for event in events]


def collect(adapter: ProviderAdapter, request: ModelRequest) -> list[ModelEvent]:
    """Every event of one streamed reply (runs its own event loop)."""
    return asyncio.run(drain(adapter.stream(request)))


def collect_until_error(
    adapter: ProviderAdapter, request: ModelRequest
) -> tuple[list[ModelEvent], Exception]:
    """The events seen before the stream raised, and what it raised."""
    seen: list[ModelEvent] = []

    async def run() -> Exception:
        try:
            async for event in adapter.stream(request):
                seen.append(event)
        except Exception as exc:
            return exc
        raise AssertionError(f"the stream ended without an error after {seen!r}")

    return seen, asyncio.run(run())


def final_turn(events: list[ModelEvent]) -> AssistantTurn:
    last = events[-1]
    assert isinstance(last, ReplyCompleted), f"last event is {last!r}"
    assert sum(isinstance(event, ReplyCompleted) for event in events) == 1
    return last.turn


def of_type(events: list[ModelEvent], kind: type[E]) -> list[E]:
    return [event for event in events if isinstance(event, kind)]


_json_scalars = st.none() | st.booleans() | st.integers(-1000, 1000) | st.text(max_size=8)
_arguments = st.dictionaries(st.text(min_size=1, max_size=6), _json_scalars, max_size=3) | st.text(
    max_size=30
)
_usages = st.builds(
    Usage,
    input_tokens=st.integers(0, 5000),
    output_tokens=st.integers(0, 5000),
    cached_input_tokens=st.integers(0, 100),
    model_calls=st.just(1),
)


@st.composite
def turns(draw: st.DrawFn) -> AssistantTurn:
    """Any neutral reply: text (whitespace-only too), tool calls with mapping or raw arguments."""
    count = draw(st.integers(0, 3))
    calls = tuple(
        ToolCall(
            id=f"call_{index}_{draw(st.text('abc', max_size=3))}",
            name=draw(st.sampled_from(["a", "b_c"])),
            arguments=draw(_arguments),
        )
        for index in range(count)
    )
    text = draw(st.sampled_from(["", " ", "\n\n"]) | st.text(max_size=40))
    finish = draw(st.sampled_from(["stop", "tool_calls", "length", "content_filter", "other"]))
    return AssistantTurn(text=text, tool_calls=calls, usage=draw(_usages), finish_reason=finish)


# ---------------------------------------------------------------- server-sent events over a fake transport


def sse_data(*payloads: object) -> bytes:
    """Data-only SSE (Chat Completions): ``data: {...}`` blocks; a str payload is sent as is ([DONE])."""
    out = b""
    for payload in payloads:
        text = payload if isinstance(payload, str) else json.dumps(payload)
        out += b"data: " + text.encode() + b"\n\n"
    return out


def sse_events(*events: tuple[str, object]) -> bytes:
    """Named SSE events (Messages API): ``event: name`` then ``data: {...}``."""
    return b"".join(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode() for name, data in events)


@dataclass
class StreamServer:
    """Answers each request with the next queued (status, body bytes or broken stream, headers)."""

    responses: list[tuple[int, bytes | list[bytes], dict[str, str]]] = field(default_factory=list)
    requests: list[httpx2.Request] = field(default_factory=list)
    threads: list[threading.Thread] = field(default_factory=list)
    before_answer: Callable[[], object] | None = None

    def stream(self, body: bytes, status: int = 200, **headers: str) -> StreamServer:
        self.responses.append((status, body, {"content-type": "text/event-stream", **headers}))
        return self

    def broken(self, *pieces: bytes) -> StreamServer:
        """Sends ``pieces`` then loses the connection."""
        self.responses.append((200, list(pieces), {"content-type": "text/event-stream"}))
        return self

    def json(self, status: int, body: object, **headers: str) -> StreamServer:
        self.responses.append(
            (status, json.dumps(body).encode(), {"content-type": "application/json", **headers})
        )
        return self

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        if not self.responses:
            raise AssertionError(f"unexpected request #{len(self.requests)} to {request.url}")
        status, body, headers = self.responses.pop(0)
        if isinstance(body, list):
            return httpx2.Response(status, headers=headers, content=_broken_stream(body))
        return httpx2.Response(status, headers=headers, content=body)

    def bodies(self) -> list[dict[str, Any]]:
        return [json.loads(r.content) for r in self.requests]

    def async_client(self) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(transport=httpx2.MockTransport(self))

    def sync_client(self) -> httpx2.Client:
        """For a sync SDK client; the body is read piece by piece, recording the reading threads."""
        return httpx2.Client(transport=httpx2.MockTransport(self._sync_response))

    def _sync_response(self, request: httpx2.Request) -> httpx2.Response:
        self.threads.append(threading.current_thread())
        if self.before_answer is not None:
            self.before_answer()
        response = self(request)
        body = response.content
        return httpx2.Response(response.status_code, headers=response.headers, content=self._pieces(body))

    def _pieces(self, body: bytes) -> Iterator[bytes]:
        for line in body.splitlines(keepends=True):
            self.threads.append(threading.current_thread())
            yield line


async def _broken_stream(pieces: list[bytes]) -> AsyncIterator[bytes]:
    for piece in pieces:
        yield piece
    raise httpx2.ReadError("connection reset by peer")


# ---------------------------------------------------------------- Chat Completions chunks (provider side)

_OPENAI_FINISH = {
    "stop": "stop",
    "tool_calls": "tool_calls",
    "length": "length",
    "content_filter": "content_filter",
}


def openai_chunk(delta: dict[str, Any] | None, finish: str | None = None, **extra: Any) -> dict[str, Any]:
    choices = (
        [] if delta is None else [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]
    )
    return {
        "id": "chatcmpl-stream",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": "gpt-test",
        "choices": choices,
        "usage": None,
        **extra,
    }


def openai_usage_chunk(usage: Usage) -> dict[str, Any]:
    return openai_chunk(
        None,
        usage={
            "prompt_tokens": usage.input_tokens,
            "completion_tokens": usage.output_tokens,
            "total_tokens": usage.total_tokens,
            "prompt_tokens_details": {"cached_tokens": usage.cached_input_tokens},
        },
    )


def pieces_of(text: str, size: int = 4) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def openai_stream_chunks(
    turn: AssistantTurn, *, interleave: bool = False, finish: bool = True, usage: bool = True
) -> list[dict[str, Any]]:
    """The chunks a Chat Completions server streams for ``turn`` (arguments as raw strings).

    With ``interleave`` every call starts first and the argument pieces of all
    calls then alternate, as parallel calls may.
    """
    chunks = [openai_chunk({"role": "assistant", "content": "", "refusal": None})]
    chunks += [openai_chunk({"content": piece}) for piece in pieces_of(turn.text)]
    starts = [
        openai_chunk(
            {
                "tool_calls": [
                    {
                        "index": i,
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": ""},
                    }
                ]
            }
        )
        for i, c in enumerate(turn.tool_calls)
    ]
    argument_chunks = [
        [
            openai_chunk({"tool_calls": [{"index": i, "function": {"arguments": p}}]})
            for p in pieces_of(c.arguments_json())
        ]
        for i, c in enumerate(turn.tool_calls)
    ]
    if interleave:
        chunks += starts
        longest = max((len(a) for a in argument_chunks), default=0)
        chunks += [a[k] for k in range(longest) for a in argument_chunks if k < len(a)]
    else:
        for start, arguments in zip(starts, argument_chunks, strict=True):
            chunks += [start, *arguments]
    if finish:
        chunks.append(openai_chunk({}, _OPENAI_FINISH[turn.finish_reason]))
    if usage:
        chunks.append(openai_usage_chunk(turn.usage))
    return chunks


# ---------------------------------------------------------------- Messages API stream events (provider side)

_ANTHROPIC_STOP = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "length": "max_tokens",
    "content_filter": "refusal",
}


def anthropic_stream_events(
    turn: AssistantTurn, *, stop: bool = True
) -> list[tuple[str, dict[str, Any]]]:
    """The named events the Messages API streams for ``turn`` (arguments must be JSON objects)."""
    cached = turn.usage.cached_input_tokens
    start_usage = {
        "input_tokens": turn.usage.input_tokens - cached - turn.usage.cache_write_tokens,
        "output_tokens": 1,
        "cache_read_input_tokens": cached,
        "cache_creation_input_tokens": turn.usage.cache_write_tokens,
    }
    message = {
        "id": "msg_stream",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": start_usage,
    }
    events: list[tuple[str, dict[str, Any]]] = [
        ("message_start", {"type": "message_start", "message": message})
    ]
    blocks: list[list[tuple[str, dict[str, Any]]]] = []
    for part in turn.reasoning:
        if part.redacted:
            blocks.append([("content_block_start", {"type": "redacted_thinking", "data": part.encrypted})])
        else:
            blocks.append(
                [("content_block_start", {"type": "thinking", "thinking": "", "signature": ""})]
                + [
                    ("content_block_delta", {"type": "thinking_delta", "thinking": p})
                    for p in pieces_of(part.text)
                ]
                + [("content_block_delta", {"type": "signature_delta", "signature": part.signature})]
            )
    if turn.text:
        blocks.append(
            [("content_block_start", {"type": "text", "text": ""})]
            + [("content_block_delta", {"type": "text_delta", "text": p}) for p in pieces_of(turn.text)]
        )
    for call in turn.tool_calls:
        blocks.append(
            [("content_block_start", {"type": "tool_use", "id": call.id, "name": call.name, "input": {}})]
            + [
                ("content_block_delta", {"type": "input_json_delta", "partial_json": p})
                for p in pieces_of(call.arguments_json(), 5)
            ]
        )
    for index, block in enumerate(blocks):
        for name, body in block:
            key = "content_block" if name == "content_block_start" else "delta"
            events.append((name, {"type": name, "index": index, key: body}))
            if index == 0 and name == "content_block_start":
                events.append(("ping", {"type": "ping"}))
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    if stop:
        events.append(
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": _ANTHROPIC_STOP[turn.finish_reason], "stop_sequence": None},
                    "usage": {"output_tokens": turn.usage.output_tokens},
                },
            )
        )
    events.append(("message_stop", {"type": "message_stop"}))
    return events
