"""How few trips a run makes to its store lane, and that fewer trips keep every store promise.

A trip off the event loop costs a thread wake-up each way (and, on a busy
machine, a wait for a CPU each way): a file-store round trip used to take
nine. These tests pin the count, not a time.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal, TypeVar

import pytest

from async_support import tools_prompt
from weakprompt import run
from weakprompt.adapters.testing import ScriptedAdapter, tool_call, tool_call_turn
from weakprompt.runtime._store_work import StoreWork
from weakprompt.runtime.evaluation import Evaluation
from weakprompt.session import Session
from weakprompt.store import Store, pause_rows
from weakprompt.tools import ToolResult, tool
from weakprompt.transcript import Transcript

T = TypeVar("T")


@tool
def forecast(city: str) -> ToolResult[None]:
    """A sync tool, as most tools are."""
    return ToolResult.ok(None, message=f"{city}: sunny")


def _round_trip() -> ScriptedAdapter:
    return ScriptedAdapter([tool_call_turn(tool_call("forecast", {"city": "Lisbon"}, id="c1")), "Sunny."])


@pytest.fixture
def trips(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The trips every run makes off the loop (each call of a StoreWork that is not inline)."""
    made: list[str] = []
    call, settled = StoreWork.__call__, StoreWork.settled

    async def counted_call(self: StoreWork, work: Callable[[], T], *, may_block: bool = False) -> T:
        if not self.inline:
            made.append("call")
        return await call(self, work, may_block=may_block)

    async def counted_settled(self: StoreWork, work: Callable[[], T], *, may_block: bool = False) -> T:
        if not self.inline:
            made.append("settled")
        return await settled(self, work, may_block=may_block)

    monkeypatch.setattr(StoreWork, "__call__", counted_call)
    monkeypatch.setattr(StoreWork, "settled", counted_settled)
    yield made


def test_a_tool_round_trip_on_a_file_store_takes_five_trips_off_the_loop(
    tmp_path: Path, trips: list[str]
) -> None:
    """Open and begin, start and open the first turn, journal and handler, two writes (the last closes).

    It took nine: opening the transcript, beginning, starting, opening the
    first turn, the journal and closing were a trip each.
    """
    store = Store.open(str(tmp_path / "runs.db"))

    async def main() -> str:
        response = await run(tools_prompt([forecast]), adapter=_round_trip(), session=Session(), store=store)
        return response.text

    assert asyncio.run(main()) == "Sunny."
    assert len(trips) == 5


def test_the_journal_is_stored_before_a_sync_handler_starts_in_the_same_trip(tmp_path: Path) -> None:
    """Written first in the handler's trip: a crash inside the handler still finds its calls recorded."""
    store = Store.open(str(tmp_path / "runs.db"))
    session_id = "journal-first"
    seen: list[list[str]] = []

    @tool
    def look(city: str) -> ToolResult[None]:
        """Notes the calls the journal holds while it runs."""
        with store.read() as conn:
            row = pause_rows.read_journal(conn, session_id)
        assert row is not None
        seen.append(json.loads(row.calls_json)["calls"])
        return ToolResult.ok(None, message=city)

    adapter = ScriptedAdapter([tool_call_turn(tool_call("look", {"city": "Porto"}, id="j1")), "ok"])

    async def main() -> str:
        response = await run(
            tools_prompt([look]), adapter=adapter, session=Session(session_id=session_id), store=store
        )
        return response.text

    assert asyncio.run(main()) == "ok"
    assert seen == [["j1"]]
    with store.read() as conn:
        assert pause_rows.read_journal(conn, session_id) is None  # the turn's write removed it


def test_a_run_closed_with_its_last_write_leaves_its_session_free_for_the_next(tmp_path: Path) -> None:
    """The lease is given back in the trip that writes the answer: the next run of the session starts."""
    store = Store.open(str(tmp_path / "runs.db"))
    session_id = "closed-with-the-last-write"

    async def main() -> list[str]:
        texts: list[str] = []
        for _ in range(2):
            response = await run(
                tools_prompt([forecast]),
                adapter=_round_trip(),
                session=Session(session_id=session_id),
                store=store,
            )
            texts.append(response.text)
        return texts

    assert asyncio.run(main()) == ["Sunny.", "Sunny."]
    roles = [m.role for m in Transcript(store, session_id).compile().messages]
    assert roles.count("tool") == 2 and roles[-1] == "assistant"


def test_a_cancellation_during_the_first_trip_waits_for_it_and_leaves_the_session_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Cancelled while the run starts and opens its first turn: the turn is dropped, the lease given back."""
    store = Store.open(str(tmp_path / "runs.db"))
    session_id = "cancelled-at-start"
    entered, release = threading.Event(), threading.Event()
    start: Callable[..., None] = getattr(Evaluation, "start")

    def slow_start(self: Evaluation[Any], *args: Any) -> None:
        entered.set()
        release.wait(10)
        start(self, *args)

    monkeypatch.setattr(Evaluation, "start", slow_start)

    async def main() -> None:
        task = asyncio.ensure_future(
            run(
                tools_prompt([forecast]),
                adapter=_round_trip(),
                session=Session(session_id=session_id),
                store=store,
            )
        )
        while not entered.is_set():
            await asyncio.sleep(0.001)
        task.cancel()
        await asyncio.sleep(0.01)
        assert not task.done()  # the trip is waited for: its writes are not left behind the run's back
        release.set()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    monkeypatch.setattr(Evaluation, "start", start)
    # the start's own transaction went through; the first turn, opened with it, stored nothing
    assert [m.role for m in Transcript(store, session_id).compile().messages] == ["system"]

    async def again() -> str:
        response = await run(
            tools_prompt([forecast]),
            adapter=_round_trip(),
            session=Session(session_id=session_id),
            store=store,
        )
        return response.text

    assert asyncio.run(again()) == "Sunny."


def test_store_work_raises_the_works_error_on_the_loop() -> None:
    io = StoreWork(inline=False)

    async def main() -> None:
        with pytest.raises(ZeroDivisionError):
            await io(lambda: 1 // 0)
        with pytest.raises(ZeroDivisionError):
            await io.settled(lambda: 1 // 0)
        assert await io(lambda: 7) == 7

    try:
        asyncio.run(main())
    finally:
        io.close()


@pytest.mark.parametrize("fails", [False, True])
def test_settled_work_cancelled_meanwhile_ends_first_and_its_error_comes_before_the_cancellation(
    fails: bool,
) -> None:
    io = StoreWork(inline=False)
    entered, release = threading.Event(), threading.Event()
    done: list[str] = []

    def work() -> int:
        entered.set()
        release.wait(10)
        done.append("done")
        if fails:
            raise ValueError("the write failed")
        return 1

    async def main() -> None:
        task = asyncio.ensure_future(io.settled(work))
        while not entered.is_set():
            await asyncio.sleep(0.001)
        task.cancel()
        await asyncio.sleep(0.01)
        task.cancel()  # a second cancellation is waited through as well
        await asyncio.sleep(0.01)
        assert not task.done()
        release.set()
        with pytest.raises(ValueError if fails else asyncio.CancelledError):
            await task
        assert done == ["done"]

    try:
        asyncio.run(main())
    finally:
        io.close()


def test_store_work_not_waited_for_ends_quietly_after_its_loop_closed() -> None:
    """A cancelled caller does not wait; the lane finishes the work even if the loop is gone by then."""
    io = StoreWork(inline=False)
    entered, release = threading.Event(), threading.Event()
    done: list[str] = []

    def work() -> None:
        entered.set()
        release.wait(10)
        done.append("done")

    async def main() -> None:
        task = asyncio.ensure_future(io(work))
        while not entered.is_set():
            await asyncio.sleep(0.001)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    try:
        asyncio.run(main())  # returns while the lane still runs the work
        release.set()
        assert asyncio.run(io(lambda: "after")) == "after"  # the lane runs in order: the work ended first
        assert done == ["done"]
    finally:
        io.close()


@pytest.mark.parametrize("may_block", [False, True])
def test_a_cancellation_arriving_as_the_trip_ends_is_raised_at_once(may_block: bool) -> None:
    """The caller is cancelled just before the lane (or the default executor) reports the work done."""
    io = StoreWork(inline=False)
    done: list[str] = []

    async def main() -> None:
        loop = asyncio.get_running_loop()
        me = asyncio.current_task()
        assert me is not None

        def work() -> None:
            loop.call_soon_threadsafe(me.cancel)  # reaches the loop before the news of the end
            done.append("done")

        with pytest.raises(asyncio.CancelledError):
            await io.settled(work, may_block=may_block)
        me.uncancel()

    try:
        asyncio.run(main())
    finally:
        io.close()
    assert done == ["done"]


def test_a_refused_tool_choice_fails_the_first_trip_and_leaves_the_session_free(tmp_path: Path) -> None:
    """The run starts and opens its first turn in one trip: a start that fails opens no turn."""
    from weakprompt.errors import ConfigurationError
    from weakprompt.model import ForceTool

    store = Store.open(str(tmp_path / "runs.db"))
    session_id = "refused-choice"

    async def main(choice: ForceTool | Literal["auto"]) -> str:
        response = await run(
            tools_prompt([forecast]),
            adapter=_round_trip(),
            session=Session(session_id=session_id),
            store=store,
            tool_choice=choice,
        )
        return response.text

    with pytest.raises(ConfigurationError, match="no_such_tool"):
        asyncio.run(main(ForceTool("no_such_tool")))
    assert asyncio.run(main("auto")) == "Sunny."
