"""One model reply, read from the adapter's stream and reported as run events.

The loop reads ``adapter.stream(request)`` (the contract in
:mod:`weakprompt.model.stream`) event by event: each text or tool-call piece
is handed on to the run's listener as it arrives (the same event class,
its ``turn`` set), and every event is folded by a
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
    """The adapter's event as the run reports it: the same class, its ``turn`` set.

    Built directly rather than with ``attrs.evolve``, which costs three times
    as much, once per streamed piece. Usage and the completion: not reported
    from here (the loop reports the call's usage once it is recorded, and
    records the turn).
    """
    if isinstance(event, model.TextDelta):
        return model.TextDelta(event.text, turn=turn)
    if isinstance(event, model.ReasoningDelta):
        return model.ReasoningDelta(
            event.index,
            event.text,
            issuer=event.issuer,
            signature=event.signature,
            encrypted=event.encrypted,
            id=event.id,
            redacted=event.redacted,
            turn=turn,
        )
    if isinstance(event, model.ToolCallDelta):
        return model.ToolCallDelta(event.index, event.arguments_delta, turn=turn)
    if isinstance(event, model.ToolCallStarted):
        return model.ToolCallStarted(event.index, event.call_id, event.name, turn=turn)
    if isinstance(event, model.ToolCallReady):
        return model.ToolCallReady(event.index, event.call, turn=turn)
    return None
