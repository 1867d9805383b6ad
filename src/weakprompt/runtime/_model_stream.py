"""One model reply, read from the adapter's stream and reported as run events.

The loop reads ``adapter.stream(request)`` (the contract in
:mod:`weakprompt.model.stream`) event by event: each text or tool-call piece
is handed on as a run event as it arrives, and every event is folded by a
:class:`~weakprompt.model.ReplyAssembler`, which checks the stream keeps the
contract. The turn the loop records is the one in ``ReplyCompleted``; the
usage a stream reports on the way is not reported here, because the loop
reports each call's usage once, after recording the turn.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeAlias

from .. import model
from ..messages import AssistantTurn

if TYPE_CHECKING:
    from ..model import ModelRequest, ProviderAdapter
    from .run_events import RunEvent

    Emit: TypeAlias = Callable[[RunEvent[Any]], Awaitable[None]]

__all__ = ["model_reply"]


async def model_reply(
    adapter: ProviderAdapter, request: ModelRequest, *, turn: int, emit: Emit | None
) -> AssistantTurn:
    """The adapter's reply to ``request``; its pieces are handed to ``emit`` as they arrive.

    A stream that breaks the contract, or ends without ``ReplyCompleted``,
    is an :class:`~weakprompt.errors.AdapterError`; a provider error raised
    mid-stream propagates as it is. The stream is closed either way. With
    no ``emit`` (nobody listens), no run event is built, and an adapter
    that can give the reply whole (``complete_async``) is asked that way.
    """
    if emit is None:
        return await model.complete_async(adapter, request)
    assembler = model.ReplyAssembler(provider=adapter.name)
    events = adapter.stream(request)
    try:
        async for event in events:
            assembler.add(event)
            if emit is not None:
                reported = _as_run_event(event, turn)
                if reported is not None:
                    await emit(reported)
    finally:
        # Close an async generator now (it may hold a connection), not when it is collected.
        aclose = getattr(events, "aclose", None)
        if aclose is not None:
            await aclose()
    return assembler.result()


def _as_run_event(event: model.ModelEvent, turn: int) -> RunEvent[Any] | None:
    """A model stream event as the run event it is reported as (usage and completion: none)."""
    from .run_events import TextDelta, ToolCallArgumentsDelta, ToolCallCompleted, ToolCallStarted

    if isinstance(event, model.TextDelta):
        return TextDelta(turn=turn, text=event.text)
    if isinstance(event, model.ToolCallStarted):
        return ToolCallStarted(turn=turn, index=event.index, call_id=event.call_id, name=event.name)
    if isinstance(event, model.ToolCallDelta):
        return ToolCallArgumentsDelta(turn=turn, index=event.index, arguments_delta=event.arguments_delta)
    if isinstance(event, model.ToolCallReady):
        return ToolCallCompleted(turn=turn, index=event.index, call=event.call)
    if isinstance(event, model.UsageReported):
        return None  # the assembler keeps it; the loop reports the call's usage once it is recorded
    return None  # ReplyCompleted: the loop records the turn
