"""Calling one tool handler and taking what it hands back, for the dispatcher.

The dispatcher prepares a call (a :class:`Ready`), runs the handler here, on
this thread or without blocking the event loop, and settles the outcome into a
:class:`Settled` whose event it publishes later. Kept apart so the dispatcher
reads as the transaction around the call.
"""

from __future__ import annotations

import contextvars
import functools
import inspect
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import TYPE_CHECKING, cast

import attrs

from ..messages import ToolCall
from ..tools import AnyTool, ToolContext, ToolResult, is_async_handler
from .blocking import block_on

if TYPE_CHECKING:
    import asyncio

    from ..resources import ResourceRegistry, ResourceSnapshot
    from ..session import SessionSnapshot
    from .tracing import ToolSpan

__all__ = [
    "Ready",
    "Settled",
    "call_async",
    "call_sync",
    "traced",
    "wait_out",
]


@attrs.frozen
class Ready:
    """A call that passed steps 1-7: what the handler gets and what restores its state."""

    tool: AnyTool
    call: ToolCall
    params: object
    started: datetime
    context: ToolContext
    resources: ResourceRegistry | None
    session_snapshot: SessionSnapshot
    resource_snapshot: ResourceSnapshot | None
    span: ToolSpan | None = None


@attrs.frozen
class Settled:
    """A finished call whose event is not published yet (concurrent calls publish in call order)."""

    call: ToolCall
    params: object
    result: ToolResult[object]
    message: str
    started: datetime
    finished: datetime
    escalate: BaseException | None


def traced(
    span: ToolSpan, call: Callable[[Ready], tuple[object, BaseException | None]], ready: Ready
) -> tuple[object, BaseException | None]:
    with span.activated():
        return call(ready)


def call_sync(ready: Ready) -> tuple[object, BaseException | None]:
    """Run the handler here; an awaitable it returns is run to completion."""
    try:
        outcome = ready.tool.handler(ready.params, context=ready.context)
        if inspect.isawaitable(outcome):
            awaitable: Awaitable[object] = outcome

            async def finish() -> object:
                return await awaitable

            outcome = block_on(finish)
    except BaseException as exc:  # sorted out by the dispatcher, once the state is restored
        return None, exc
    return outcome, None


async def call_async(ready: Ready, *, drain: bool) -> tuple[object, BaseException | None]:
    """Run the handler without blocking the loop: awaited if async, on a worker thread if not.

    With ``drain``, a cancellation waits for a sync handler's thread to end
    before it is reported, so the rollback that follows sees the handler's
    last write (the thread cannot be stopped, and it writes to the real session).
    """
    import asyncio  # on first use: keeps importing this module cheap

    handler = cast("Callable[..., object]", ready.tool.handler)
    try:
        if is_async_handler(handler):
            outcome = await cast("Awaitable[object]", handler(ready.params, context=ready.context))
        else:
            # A plain future, not a task: an interrupt the handler raises must reach the dispatcher
            # (which settles the call), not escape the event loop from a task of its own.
            context = contextvars.copy_context()
            call = functools.partial(context.run, handler, ready.params, context=ready.context)
            worker: asyncio.Future[object] = asyncio.get_running_loop().run_in_executor(None, call)
            try:
                outcome = await asyncio.shield(worker)
            except asyncio.CancelledError:
                if drain:
                    await wait_out(worker)
                raise
        if inspect.isawaitable(outcome):  # a sync callable that handed back a coroutine
            outcome = await cast("Awaitable[object]", outcome)
    except BaseException as exc:  # sorted out by the dispatcher, once the state is restored
        return None, exc
    return outcome, None


async def wait_out(worker: asyncio.Future[object]) -> None:
    """Wait for ``worker`` to finish, whatever cancellations arrive meanwhile."""
    import asyncio  # on first use: keeps importing this module cheap

    while not worker.done():
        try:
            await asyncio.shield(worker)
        except asyncio.CancelledError:
            continue
        except BaseException:
            return
