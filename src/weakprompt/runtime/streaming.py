"""Watching a run as it happens: ``stream()`` for async code, ``stream_sync()`` for scripts.

Both run the one loop (:func:`~weakprompt.runtime.loop.run`) with an
``on_event`` that feeds a queue, and hand out the queue's events. Leaving
the block early cancels the run, which stops it cleanly: the turn in
progress is not stored and the session is put back as of the last stored
turn. A failed run raises its error from the iteration, after the events
that came before it.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
from collections.abc import AsyncGenerator, AsyncIterator, Generator, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from .loop import run
from .run_events import RunEvent

if TYPE_CHECKING:
    from ..model import ProviderAdapter
    from ..prompt import Prompt
    from ..session import Session
    from .output_checks import OutputValidator

__all__ = ["stream", "stream_sync"]

OutputT = TypeVar("OutputT")

_END = object()


@contextlib.asynccontextmanager
async def stream(
    prompt: Prompt[OutputT],
    *,
    adapter: ProviderAdapter,
    session: Session,
    output_validators: Sequence[OutputValidator[OutputT]] = (),
    **options: Any,
) -> AsyncGenerator[AsyncIterator[RunEvent[OutputT]]]:
    """``async with stream(prompt, adapter=..., session=...) as events: async for event in events: ...``

    Takes every keyword of :func:`run` but ``on_event``. The events end
    with ``RunFinished`` (holding the response) when the run succeeds.
    """
    pending: asyncio.Queue[object] = asyncio.Queue()

    async def drive() -> None:
        try:
            await run(
                prompt,
                adapter=adapter,
                session=session,
                output_validators=output_validators,
                on_event=pending.put_nowait,
                **options,
            )
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
def stream_sync(
    prompt: Prompt[OutputT],
    *,
    adapter: ProviderAdapter,
    session: Session,
    output_validators: Sequence[OutputValidator[OutputT]] = (),
    **options: Any,
) -> Generator[Iterator[RunEvent[OutputT]]]:
    """``with stream_sync(...) as events: for event in events: ...``: the run goes on a worker thread."""
    pending: queue.SimpleQueue[object] = queue.SimpleQueue()
    failure: list[BaseException] = []
    started = threading.Event()
    handle: list[tuple[asyncio.AbstractEventLoop, asyncio.Task[object]]] = []

    async def drive() -> None:
        task = asyncio.current_task()
        assert task is not None
        handle.append((asyncio.get_running_loop(), task))
        started.set()
        await run(
            prompt,
            adapter=adapter,
            session=session,
            output_validators=output_validators,
            on_event=pending.put,
            **options,
        )

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
