"""Running a coroutine to completion from synchronous code, wherever that code is called from.

Every blocking twin (``run_sync``, ``resume_sync``, ``DurableApp.run_sync``)
drives its coroutine through :func:`block_on`, so there is one implementation
of each entry and the blocking one only waits for it. ``asyncio.run``
refuses to start inside a running event loop (a notebook, an async web
framework, an async test), and a ``_sync`` function must still work there,
so then the coroutine runs on a worker thread with its own loop and the
caller waits for it; the caller's loop is blocked for that time, which is
what calling a blocking function from async code means.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable, Coroutine
from typing import Any, Generic, TypeVar

__all__ = ["block_on", "in_running_loop"]

T = TypeVar("T")


def in_running_loop() -> bool:
    """Whether this thread is running an event loop right now."""
    import asyncio  # on first use: keeps importing this module cheap

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


class _Boxed(Generic[T]):
    """A coroutine's result, behind the default ``object`` repr.

    ``asyncio.run`` looks up the SIGINT handler it installed after the main
    task is done, and that lookup builds the handler's repr, which holds the
    task and so its result: for a response with hundreds of tool
    executions that costs milliseconds, for nothing.
    """

    __slots__ = ("value",)

    def __init__(self, value: T) -> None:
        self.value = value


async def _boxed(work: Coroutine[Any, Any, T]) -> _Boxed[T]:
    return _Boxed(await work)


def block_on(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run the coroutine ``make()`` builds and return its result (or raise its exception)."""
    import asyncio  # on first use: keeps importing this module cheap

    if not in_running_loop():
        return asyncio.run(_boxed(make())).value
    outcome: list[T] = []
    failure: list[BaseException] = []
    context = contextvars.copy_context()

    def work() -> None:
        try:
            outcome.append(context.run(asyncio.run, _boxed(make())).value)
        except BaseException as exc:  # handed to the caller's thread below
            failure.append(exc)

    worker = threading.Thread(target=work, name="weakprompt-sync-run", daemon=True)
    worker.start()
    worker.join()
    if failure:
        raise failure[0]
    return outcome[0]
