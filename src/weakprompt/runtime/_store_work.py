"""Where a run does its blocking work (store reads and writes, sync tool handlers): off the loop, or on it.

An event loop that other tasks share must not wait on SQLite or on a sync
handler, so by default a run hands that work to one worker thread of its
own (one thread, so one held SQLite connection serves the whole run). A
thread hop costs tens of microseconds, several times per round trip, which
is most of a tool round trip's cost when the model and the tools are fast.

:func:`evaluate` runs the loop on an event loop that exists for that one
run (``asyncio.run`` in this thread, or on a thread of its own): there is
no other task for the work to block, so the first run started on such a
loop (:func:`on_private_loop`) does the work inline instead. Any other run,
including one nested inside it, uses its worker thread.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

__all__ = ["StoreWork", "claim_private_loop", "on_private_loop"]

T = TypeVar("T")


class _Claim:
    """A loop made for one run; the first run that starts on it takes it."""

    __slots__ = ("loop", "taken")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.taken = False


_PRIVATE: contextvars.ContextVar[_Claim | None] = contextvars.ContextVar(
    "weakprompt_private_loop", default=None
)


async def on_private_loop(work: Awaitable[T]) -> T:
    """Await ``work``, telling the first run it starts that the running loop serves it alone."""
    _PRIVATE.set(_Claim(asyncio.get_running_loop()))
    return await work


def claim_private_loop() -> bool:
    """Whether the running loop was made for this run (and no other run has claimed it yet)."""
    claim = _PRIVATE.get()
    if claim is None or claim.taken or claim.loop is not asyncio.get_running_loop():
        return False
    claim.taken = True
    return True


class StoreWork:
    """Runs a run's blocking steps: inline, or on one worker thread, in the run's context."""

    def __init__(self, *, inline: bool) -> None:
        self.inline = inline
        self._thread = (
            None if inline else ThreadPoolExecutor(max_workers=1, thread_name_prefix="weakprompt-store")
        )

    async def __call__(self, work: Callable[[], T]) -> T:
        """``work()``, off the loop unless inline; a cancellation meanwhile does not wait for it."""
        if self._thread is None:
            return work()
        context = contextvars.copy_context()
        return await asyncio.get_running_loop().run_in_executor(self._thread, context.run, work)

    async def settled(self, work: Callable[[], T]) -> T:
        """``work()``, waited for to the end even through a cancellation, which is re-raised after.

        For work that must not be left running behind the caller's back: a
        turn's write, or a tool call whose changes a rollback must see.
        """
        if self._thread is None:
            return work()  # no await point: nothing can interrupt it
        context = contextvars.copy_context()
        future = asyncio.get_running_loop().run_in_executor(self._thread, context.run, work)
        cancelled = False
        while True:
            try:
                result = await asyncio.shield(future)
            except asyncio.CancelledError:
                if future.done():
                    raise
                cancelled = True
                continue
            break
        if cancelled:
            raise asyncio.CancelledError
        return result

    def close(self) -> None:
        if self._thread is not None:
            self._thread.shutdown(wait=False)
