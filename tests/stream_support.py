"""Helpers for streaming tests: drain an adapter's stream, generate neutral turns."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import TypeVar

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
