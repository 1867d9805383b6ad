"""One model reply, streamed where the adapter can, reported as run events.

An adapter with ``stream(request)`` is read event by event; one without is
asked ``complete(request)`` on a worker thread (a blocking SDK call must not
stall the event loop) and reported as one text delta and its tool calls.
Either way the loop gets one :class:`AssistantTurn`, the reply the
transcript records.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any, cast

from ..errors import ProviderError
from ..messages import AssistantTurn
from .run_events import RunEvent, TextDelta, ToolCallArgumentsDelta, ToolCallCompleted, ToolCallStarted

if TYPE_CHECKING:
    from ..model import ModelRequest, ProviderAdapter

__all__ = ["model_reply"]

Emit = Callable[[RunEvent[Any]], Awaitable[None]]


async def model_reply(
    adapter: ProviderAdapter, request: ModelRequest, *, turn: int, emit: Emit
) -> AssistantTurn:
    """The adapter's reply to ``request``; its pieces are handed to ``emit`` as they arrive."""
    stream = getattr(adapter, "stream", None)
    if stream is None:
        reply = await asyncio.to_thread(adapter.complete, request)
        if reply.text:
            await emit(TextDelta(turn=turn, text=reply.text))
        for index, call in enumerate(reply.tool_calls):
            await emit(ToolCallStarted(turn=turn, index=index, call_id=call.id, name=call.name))
            await emit(ToolCallCompleted(turn=turn, index=index, call=call))
        return reply
    events = cast("AsyncIterator[object]", stream(request))
    async for event in events:
        completed = _translate(event, turn)
        if isinstance(completed, AssistantTurn):
            return completed
        if completed is not None:
            await emit(completed)
    raise ProviderError(
        f"{adapter.name}: the reply stream ended without a completed reply", provider=adapter.name
    )


def _translate(event: object, turn: int) -> RunEvent[Any] | AssistantTurn | None:
    """A model stream event as a run event (or the completed reply); usage is reported by the loop."""
    kind = type(event).__name__
    if kind == "ReplyCompleted":
        return cast("AssistantTurn", _field(event, "turn"))
    if kind == "TextDelta":
        return TextDelta(turn=turn, text=_field(event, "text"))
    if kind == "ToolCallStarted":
        return ToolCallStarted(
            turn=turn,
            index=_field(event, "index"),
            call_id=_field(event, "call_id"),
            name=_field(event, "name"),
        )
    if kind == "ToolCallDelta":
        return ToolCallArgumentsDelta(
            turn=turn, index=_field(event, "index"), arguments_delta=_field(event, "arguments_delta")
        )
    if kind == "ToolCallReady":
        return ToolCallCompleted(turn=turn, index=_field(event, "index"), call=_field(event, "call"))
    return None


def _field(event: object, name: str) -> Any:
    return getattr(event, name)
