"""What a cancelled run publishes for the tool calls it was running (specs/TOOLS.md, "Cancellation")."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from async_support import Item, tools_prompt
from weakprompt import run
from weakprompt.adapters.testing import ScriptedAdapter, tool_call, tool_call_turn
from weakprompt.events import ToolInvoked
from weakprompt.session import Session
from weakprompt.store import Store
from weakprompt.tools import ToolContext, ToolResult, tool
from weakprompt.transcript import Transcript


def _invoked(session: Session) -> list[ToolInvoked]:
    seen: list[ToolInvoked] = []
    session.bus.subscribe(ToolInvoked, seen.append)
    return seen


async def _cancel_when(task: asyncio.Future[object], ready: asyncio.Event) -> None:
    await ready.wait()
    await asyncio.sleep(0)
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass


def _only_the_system_prompt_is_stored(store: Store, session: Session) -> None:
    assert [m.role for m in Transcript(store, session.session_id).compile().messages] == ["system"]


def test_a_cancelled_concurrent_group_publishes_no_event_and_merges_nothing() -> None:
    store = Store.open("sqlite://")
    session = Session()
    invoked = _invoked(session)

    async def main() -> None:
        fast_done = asyncio.Event()
        never = asyncio.Event()

        @tool
        async def fast(text: str, *, context: ToolContext) -> ToolResult[None]:
            """Finishes at once."""
            context.session[Item].append(Item(text))
            fast_done.set()
            return ToolResult.ok(None, message=text)

        @tool
        async def slow(text: str, *, context: ToolContext) -> ToolResult[None]:
            """Waits for ever."""
            context.session[Item].append(Item(text))
            await never.wait()
            return ToolResult.ok(None, message=text)

        adapter = ScriptedAdapter(
            [
                tool_call_turn(
                    tool_call("fast", {"text": "f"}, id="c1"),
                    tool_call("slow", {"text": "s"}, id="c2"),
                    tool_call("fast", {"text": "g"}, id="c3"),
                ),
                "done",
            ]
        )
        task = asyncio.ensure_future(
            run(tools_prompt([fast, slow]), adapter=adapter, session=session, store=store)
        )
        await _cancel_when(task, fast_done)
        assert task.cancelled()

    asyncio.run(main())
    # the group settles only once every call has finished: cancelled before that, it publishes nothing,
    # not even for the calls that had finished, and none of their forks is merged
    assert invoked == []
    assert session[Item].all() == ()
    _only_the_system_prompt_is_stored(store, session)


def test_a_cancelled_lone_async_call_publishes_its_one_failed_event() -> None:
    store = Store.open("sqlite://")
    session = Session()
    invoked = _invoked(session)

    async def main() -> None:
        started = asyncio.Event()

        @tool
        async def slow(text: str, *, context: ToolContext) -> ToolResult[None]:
            """Writes, then waits for ever."""
            context.session[Item].append(Item(text))
            started.set()
            await asyncio.Event().wait()
            return ToolResult.ok(None, message=text)

        adapter = ScriptedAdapter([tool_call_turn(tool_call("slow", {"text": "s"}, id="c1")), "done"])
        task = asyncio.ensure_future(run(tools_prompt([slow]), adapter=adapter, session=session, store=store))
        await _cancel_when(task, started)

    asyncio.run(main())
    assert [(e.call_id, e.success) for e in invoked] == [("c1", False)]
    assert invoked[0].result.message == "Tool 'slow' was interrupted (CancelledError)."
    assert session[Item].all() == ()
    _only_the_system_prompt_is_stored(store, session)


def test_a_cancelled_lone_sync_call_finishes_publishes_its_result_then_the_turn_is_dropped() -> None:
    store = Store.open("sqlite://")
    session = Session()
    invoked = _invoked(session)
    entered = threading.Event()
    release = threading.Event()

    @tool
    def blocking(text: str, *, context: ToolContext) -> ToolResult[None]:
        """A sync handler: a thread cannot be stopped, so the run waits for it."""
        context.session[Item].append(Item(text))
        entered.set()
        release.wait(timeout=30)
        return ToolResult.ok(None, message=text)

    async def main() -> None:
        adapter = ScriptedAdapter([tool_call_turn(tool_call("blocking", {"text": "b"}, id="c1")), "done"])
        task = asyncio.ensure_future(
            run(tools_prompt([blocking]), adapter=adapter, session=session, store=store)
        )
        while not entered.is_set():
            await asyncio.sleep(0.001)
        task.cancel()
        await asyncio.sleep(0.01)
        assert not task.done()  # still waiting for the handler
        release.set()
        try:
            await task
        except asyncio.CancelledError:
            pass

    asyncio.run(main())
    assert [(e.call_id, e.success) for e in invoked] == [("c1", True)]
    # the turn was not stored, so the session is put back as of the last stored turn
    assert session[Item].all() == ()
    _only_the_system_prompt_is_stored(store, session)


def test_cancelled_while_a_turn_is_written_the_turn_stays_and_the_next_one_is_dropped(tmp_path: Path) -> None:
    from weakprompt.runtime import ModelTurnCompleted

    store = Store.open(str(tmp_path / "runs.db"))  # a file store: the turn is written off the loop
    session = Session()
    written = threading.Event()
    proceed = threading.Event()

    def hold_the_write(event: ModelTurnCompleted) -> None:
        # published once the turn's transaction has committed, on the thread writing it
        if event.turn == 1:
            written.set()
            proceed.wait(timeout=30)

    session.bus.subscribe(ModelTurnCompleted, hold_the_write)

    @tool
    async def note(text: str, *, context: ToolContext) -> ToolResult[None]:
        """Write a note."""
        context.session[Item].append(Item(text))
        return ToolResult.ok(None, message=text)

    def script(tag: str) -> ScriptedAdapter:
        return ScriptedAdapter(
            [
                tool_call_turn(tool_call("note", {"text": f"{tag}1"}, id=f"{tag}a")),
                tool_call_turn(tool_call("note", {"text": f"{tag}2"}, id=f"{tag}b")),
                f"{tag} done",
            ]
        )

    async def main() -> str:
        task = asyncio.ensure_future(
            run(tools_prompt([note]), adapter=script("x"), session=session, store=store)
        )
        while not written.is_set():
            await asyncio.sleep(0.001)
        task.cancel()
        proceed.set()
        try:
            await task
        except asyncio.CancelledError:
            pass
        messages = Transcript(store, session.session_id).compile().messages
        assert [m.role for m in messages] == ["system", "assistant", "tool"]  # turn 1 is whole, nothing after
        assert session[Item].all() == (Item("x1"),)  # the stored turn's change is kept
        again = await run(tools_prompt([note]), adapter=script("y"), session=session, store=store)
        return again.text

    assert asyncio.run(main()) == "y done"
    assert session[Item].all() == (Item("x1"), Item("y1"), Item("y2"))
