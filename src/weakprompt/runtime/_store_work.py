"""Where a run does its blocking work (store reads and writes, sync tool handlers): off the loop, or on it.

An event loop that other tasks share must not wait on SQLite or on a sync
handler, so by default a run hands that work to a worker thread: one of a
few *lanes* the whole process shares. A run keeps its lane from start to
end, so its steps run one after another on one thread and one held SQLite
connection serves them all. Lanes are started once: starting a thread per
run cost more than the run itself with a thousand sessions at once (each
start waits for the new thread to be scheduled, on the event loop). A
thread hop still costs tens of microseconds, so a run takes as few as it
can (see the loop).

Store work on an in-memory database never waits: there is no disk to read
and no other process's lock to wait for, only the CPU, which a worker thread
would have to take from the loop's thread under the GIL anyway. So a run
whose store is in memory (the default store, a private one) does its store
work inline, and only work that may take its time (a sync handler, a
``tool_result`` hook) goes to a thread. Measured with 100 concurrent
sessions, that halved the wall time against lanes. Where the work runs is
decided by the store and the loop alone: there is no switch to choose.

:func:`evaluate` runs the loop on an event loop that exists for that one
run (``asyncio.run`` in this thread, or on a thread of its own): there is
no other task for the work to block, so the first run started on such a
loop (:func:`on_private_loop`) does all of its work inline. Any other run,
including one nested inside it, uses threads as above.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import threading
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Generic, TypeVar, cast

if TYPE_CHECKING:
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

__all__ = ["LANES", "StoreWork", "claim_private_loop", "on_private_loop"]

T = TypeVar("T")

LANES = 4
"""Worker threads shared by every run of the process (more would only contend for the GIL)."""


class _Lanes:
    """The shared worker threads, and how many runs use each."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pid = -1
        self._threads: list[ThreadPoolExecutor] = []
        self._users: list[int] = []

    def take(self) -> tuple[int, ThreadPoolExecutor]:
        """The least used lane, now used by one more run."""
        with self._lock:
            if self._pid != os.getpid():  # none yet, or inherited by a forked child without its threads
                from concurrent.futures import ThreadPoolExecutor  # on first use: a cheap import

                self._pid = os.getpid()
                self._threads = [
                    ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"weakprompt-store-{i}")
                    for i in range(LANES)
                ]
                self._users = [0] * LANES
            index = min(range(LANES), key=self._users.__getitem__)
            self._users[index] += 1
            return index, self._threads[index]

    def give_back(self, index: int) -> None:
        with self._lock:
            if index < len(self._users) and self._users[index] > 0:
                self._users[index] -= 1


_LANES = _Lanes()


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
    import asyncio  # on first use: keeps importing this module cheap

    _PRIVATE.set(_Claim(asyncio.get_running_loop()))
    return await work


def claim_private_loop() -> bool:
    """Whether the running loop was made for this run (and no other run has claimed it yet)."""
    import asyncio  # on first use: keeps importing this module cheap

    claim = _PRIVATE.get()
    if claim is None or claim.taken or claim.loop is not asyncio.get_running_loop():
        return False
    claim.taken = True
    return True


class StoreWork:
    """Runs a run's blocking steps: inline, or on one worker thread, in the run's context.

    ``inline``: everything inline (a loop made for this run alone).
    ``store_inline``: store work inline, work that ``may_block`` on a thread
    (a store in memory: see the module's docstring).
    """

    def __init__(self, *, inline: bool, store_inline: bool = False) -> None:
        self.inline = inline
        self._lane: int | None = None
        self._thread: ThreadPoolExecutor | None = None
        self._store_inline = inline or store_inline
        if not self._store_inline:
            self._lane, self._thread = _LANES.take()

    async def __call__(self, work: Callable[[], T], *, may_block: bool = False) -> T:
        """``work()``, off the loop unless inline; a cancellation meanwhile does not wait for it.

        ``may_block``: as for :meth:`settled`.
        """
        if self._inline_for(may_block):
            return work()
        import asyncio  # on first use: keeps importing this module cheap

        loop = asyncio.get_running_loop()
        context = contextvars.copy_context()
        if may_block or self._thread is None:
            return await loop.run_in_executor(None, context.run, work)
        trip = _Trip(loop, context, work)
        self._thread.submit(trip.run)
        return trip.outcome(await trip.future)

    def _inline_for(self, may_block: bool) -> bool:
        return self.inline or (self._store_inline and not may_block)

    async def settled(self, work: Callable[[], T], *, may_block: bool = False) -> T:
        """``work()``, waited for to the end even through a cancellation, which is re-raised after.

        For work that must not be left running behind the caller's back: a
        turn's write, or a tool call whose changes a rollback must see.
        Work that ``may_block`` for as long as it likes (a sync tool
        handler) never holds up a shared lane: it runs on the event loop's
        default executor instead, as ``asyncio.to_thread`` would run it.
        """
        if self._inline_for(may_block):
            return work()  # no await point: nothing can interrupt it
        import asyncio  # on first use: keeps importing this module cheap

        loop = asyncio.get_running_loop()
        context = contextvars.copy_context()
        if may_block or self._thread is None:
            return await _through_cancellation(loop.run_in_executor(None, context.run, work))
        trip = _Trip(loop, context, work)
        self._thread.submit(trip.run)
        cancelled = False
        while True:
            try:
                await trip.future
            except asyncio.CancelledError:
                if trip.finished:
                    raise
                cancelled = True
                trip.future = loop.create_future()  # the lane wakes this one when the work ends
                continue
            break
        result = trip.outcome(None)  # the work's own error comes first, as from a shielded future
        if cancelled:
            raise asyncio.CancelledError
        return result

    def close(self) -> None:
        """Give the lane back; the work handed over is all done."""
        if self._lane is not None:
            _LANES.give_back(self._lane)
            self._lane = None


class _Trip(Generic[T]):
    """One piece of work sent to a lane, and how the lane wakes the loop when it is done.

    Lighter than ``run_in_executor`` and ``asyncio.shield``: one future the
    loop awaits and one callback the lane schedules (instead of a future
    chained to the executor's, with a callback for each side of the chain
    and another pair for the shield), so a trip costs the loop two
    callbacks. The outcome is kept here, not in the future, so the work
    can still be waited for after a cancellation of the one awaiting it.
    """

    __slots__ = ("context", "error", "finished", "future", "loop", "result", "work")

    def __init__(
        self, loop: asyncio.AbstractEventLoop, context: contextvars.Context, work: Callable[[], T]
    ) -> None:
        self.loop = loop
        self.context = context
        self.work = work
        self.future: asyncio.Future[None] = loop.create_future()
        self.finished = False
        self.result: T | None = None
        self.error: BaseException | None = None

    def run(self) -> None:
        """On the lane: run the work in the caller's context, then wake the loop."""
        try:
            self.result = self.context.run(self.work)
        except BaseException as exc:  # handed to the awaiting side, as an executor would
            self.error = exc
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nobody waits any more
            self.loop.call_soon_threadsafe(self._wake)

    def _wake(self) -> None:
        """On the loop: mark the work done and wake whoever waits for it now."""
        self.finished = True
        if not self.future.done():
            self.future.set_result(None)

    def outcome(self, _: None) -> T:
        """The work's result, or its error raised here."""
        error = self.error
        if error is not None:
            self.error = None  # no cycle through the traceback once raised
            raise error
        return cast("T", self.result)


async def _through_cancellation(future: asyncio.Future[T]) -> T:
    """Await ``future`` to its end even if the caller is cancelled meanwhile; the cancellation after."""
    import asyncio  # on first use: keeps importing this module cheap

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
