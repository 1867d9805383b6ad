"""Watching a run as it happens: ``stream()`` for async code, ``stream_sync()`` for scripts.

Both run the one loop (:func:`~weakprompt.runtime.loop.run_with`) with an
``on_event`` that feeds a queue, and hand out the queue's events. Leaving
the block early cancels the run, which stops it cleanly: the turn in
progress is not stored and the session is put back as of the last stored
turn. A failed run raises its error from the iteration, after the events
that came before it.

``stream`` / ``stream_sync`` take :func:`~weakprompt.runtime.loop.run`'s
keywords (but ``on_event``, which the stream is) and build one
:class:`~weakprompt.runtime.run_settings.RunSettings`; ``stream_with`` /
``stream_sync_with`` take one already built. ``stream_runs`` /
``stream_runs_sync`` stream several runs made one after another as one
stream (an agent's run and the runs its handoffs pass to,
``weakprompt.agent``): each run's settings go through the ``Feed`` they
are given.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Generator, Iterator
from typing import TYPE_CHECKING, TypeAlias, TypeVar

import attrs
from typing_extensions import Unpack

from .loop import run_with
from .run_events import RunEvent
from .run_settings import RunSettings, StreamOptions, settings_of

if TYPE_CHECKING:
    from ..model import ProviderAdapter
    from ..prompt import Prompt
    from ..session import Session
    from .response import PromptResponse
    from .run_events import EventCallback

__all__ = [
    "Feed",
    "stream",
    "stream_runs",
    "stream_runs_sync",
    "stream_sync",
    "stream_sync_with",
    "stream_with",
]

OutputT = TypeVar("OutputT")

Feed: TypeAlias = Callable[[RunSettings], RunSettings]
"""Makes a run's settings feed the stream (its ``on_event`` also puts each event in the stream)."""

_END = object()


def stream(
    prompt: Prompt[OutputT],
    *,
    adapter: ProviderAdapter,
    session: Session,
    **options: Unpack[StreamOptions[OutputT]],
) -> contextlib.AbstractAsyncContextManager[AsyncIterator[RunEvent[OutputT]]]:
    """``async with stream(prompt, adapter=..., session=...) as events: async for event in events: ...``

    Takes every keyword of :func:`~weakprompt.runtime.loop.run` but
    ``on_event``. The events end with ``RunFinished`` (holding the
    response) when the run succeeds.
    """
    settings = settings_of("stream", adapter, session, options, stream=True)
    return stream_with(prompt, settings)


def stream_sync(
    prompt: Prompt[OutputT],
    *,
    adapter: ProviderAdapter,
    session: Session,
    **options: Unpack[StreamOptions[OutputT]],
) -> contextlib.AbstractContextManager[Iterator[RunEvent[OutputT]]]:
    """``with stream_sync(...) as events: for event in events: ...``: the run goes on a worker thread.

    Takes the keywords of :func:`stream`.
    """
    settings = settings_of("stream_sync", adapter, session, options, stream=True)
    return stream_sync_with(prompt, settings)


def _feeding(settings: RunSettings, put: EventCallback) -> RunSettings:
    """``settings`` whose ``on_event`` also feeds the stream (a listener already there still hears all)."""
    listener = settings.on_event
    if listener is None:
        return attrs.evolve(settings, on_event=put)

    def both(event: RunEvent[object]) -> object:
        put(event)
        return listener(event)  # an awaitable it returns is awaited by the loop

    return attrs.evolve(settings, on_event=both)


def stream_with(
    prompt: Prompt[OutputT], settings: RunSettings
) -> contextlib.AbstractAsyncContextManager[AsyncIterator[RunEvent[OutputT]]]:
    """:func:`stream` with its settings built. An ``on_event`` in them hears every event too."""
    return stream_runs(lambda feed: run_with(prompt, feed(settings)))


def stream_sync_with(
    prompt: Prompt[OutputT], settings: RunSettings
) -> contextlib.AbstractContextManager[Iterator[RunEvent[OutputT]]]:
    """:func:`stream_sync` with its settings built. An ``on_event`` in them hears every event too."""
    return stream_runs_sync(lambda feed: run_with(prompt, feed(settings)))


@contextlib.asynccontextmanager
async def stream_runs(
    runs: Callable[[Feed], Awaitable[PromptResponse[OutputT]]],
) -> AsyncGenerator[AsyncIterator[RunEvent[OutputT]]]:
    """The events of the runs ``runs(feed)`` makes, as one stream; each run's settings go through ``feed``.

    Leaving the block early cancels them; their error is raised from the iteration.
    """
    pending: asyncio.Queue[object] = asyncio.Queue()

    def feed(settings: RunSettings) -> RunSettings:
        return _feeding(settings, pending.put_nowait)

    async def drive() -> None:
        try:
            await runs(feed)
        finally:
            pending.put_nowait(_END)

    task = asyncio.ensure_future(drive())

    async def events() -> AsyncIterator[RunEvent[OutputT]]:
        while True:
            item = await pending.get()
            if item is _END:
                await task  # raises the run's error, if it failed
                return
            yield item  # pyright: ignore[reportReturnType]

    try:
        yield events()
    finally:
        if not task.done():
            task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


@contextlib.contextmanager
def stream_runs_sync(
    runs: Callable[[Feed], Awaitable[PromptResponse[OutputT]]],
) -> Generator[Iterator[RunEvent[OutputT]]]:
    """:func:`stream_runs`, blocking: the runs go on a worker thread with its own event loop."""
    pending: queue.SimpleQueue[object] = queue.SimpleQueue()
    failure: list[BaseException] = []
    started = threading.Event()
    handle: list[tuple[asyncio.AbstractEventLoop, asyncio.Task[object]]] = []

    def feed(settings: RunSettings) -> RunSettings:
        return _feeding(settings, pending.put)

    async def drive() -> None:
        task = asyncio.current_task()
        assert task is not None
        handle.append((asyncio.get_running_loop(), task))
        started.set()
        await runs(feed)

    def work() -> None:
        try:
            asyncio.run(drive())
        except asyncio.CancelledError:
            pass
        except BaseException as exc:  # handed to the iterating thread
            failure.append(exc)
        finally:
            started.set()
            pending.put(_END)

    worker = threading.Thread(target=work, name="weakprompt-stream", daemon=True)
    worker.start()

    def events() -> Iterator[RunEvent[OutputT]]:
        while True:
            item = pending.get()
            if item is _END:
                if failure:
                    raise failure[0]
                return
            yield item  # pyright: ignore[reportReturnType]

    try:
        yield events()
    finally:
        started.wait()
        if handle and worker.is_alive():
            loop, task = handle[0]
            loop.call_soon_threadsafe(task.cancel)
        worker.join()
