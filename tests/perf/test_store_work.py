"""Where a run does blocking work: shared store lanes, the default executor, or inline.

Inline: everything on a loop made for the run alone, store work for a store in memory.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from async_support import tools_prompt
from weakprompt import run
from weakprompt.adapters.testing import ScriptedAdapter, tool_call, tool_call_turn
from weakprompt.runtime import _store_work, evaluate
from weakprompt.session import Session
from weakprompt.store import Store
from weakprompt.tools import ToolResult, tool
from weakprompt.transcript import PendingToolResult, Transcript

Seen = list[tuple[str, str]]


def _recording_tools(seen: Seen):  # two decorated tools
    @tool
    def sync_note(text: str) -> ToolResult[None]:
        """A sync tool that notes its thread."""
        seen.append(("sync handler", threading.current_thread().name))
        return ToolResult.ok(None, message=text)

    @tool
    async def async_note(text: str) -> ToolResult[None]:
        """An async tool that notes its thread."""
        await asyncio.sleep(0)
        seen.append(("async handler", threading.current_thread().name))
        return ToolResult.ok(None, message=text)

    return sync_note, async_note


def _adapter() -> ScriptedAdapter:
    return ScriptedAdapter(
        [
            tool_call_turn(tool_call("sync_note", {"text": "a"}, id="c1")),
            tool_call_turn(tool_call("async_note", {"text": "b"}, id="c2")),
            "done",
        ]
    )


def _transcript(seen: Seen) -> Transcript:
    """A transcript whose tool_result hook notes the thread the result is staged on."""
    transcript = Transcript(Store.open("sqlite://"), "s")

    def hook(pending: PendingToolResult) -> None:
        seen.append(("staged", threading.current_thread().name))

    transcript.on("tool_result", hook)
    return transcript


def test_evaluate_in_a_script_does_its_blocking_work_on_its_own_private_loop() -> None:
    seen: Seen = []
    sync_note, async_note = _recording_tools(seen)
    response = evaluate(
        tools_prompt([sync_note, async_note]),
        adapter=_adapter(),
        session=Session(),
        transcript=_transcript(seen),
    )
    assert response.text == "done"
    here = threading.current_thread().name
    assert seen == [("sync handler", here), ("staged", here), ("async handler", here), ("staged", here)]


def test_run_on_a_shared_loop_keeps_blocking_work_off_it() -> None:
    seen: Seen = []
    sync_note, async_note = _recording_tools(seen)

    async def main() -> str:
        response = await run(
            tools_prompt([sync_note, async_note]),
            adapter=_adapter(),
            session=Session(),
            transcript=_transcript(seen),
        )
        return response.text

    assert asyncio.run(main()) == "done"
    here = threading.current_thread().name
    (kind1, sync_thread), (kind2, staged_with_handler), (kind3, async_thread), (kind4, staged_async) = seen
    assert (kind1, kind2, kind3, kind4) == ("sync handler", "staged", "async handler", "staged")
    # a sync handler and the staging of its result share one trip, never on a shared store lane
    assert sync_thread == staged_with_handler != here
    assert not sync_thread.startswith("weakprompt-store")
    # an async handler runs on the loop; its result is staged off it, but not on a shared lane either
    # (a tool_result hook may call a model), as a sync handler is
    assert async_thread == here
    assert staged_async != here and not staged_async.startswith("weakprompt-store")


def test_a_run_nested_in_evaluate_does_not_take_the_private_loop() -> None:
    seen: Seen = []
    sync_note, _ = _recording_tools(seen)
    inner_prompt = tools_prompt([sync_note], key="inner")

    @tool
    async def delegate(text: str) -> ToolResult[None]:
        """Run an inner agent on the same loop."""
        inner = await run(
            inner_prompt,
            adapter=ScriptedAdapter([tool_call_turn(tool_call("sync_note", {"text": text}, id="i")), "ok"]),
            session=Session(),
        )
        return ToolResult.ok(None, message=inner.text)

    adapter = ScriptedAdapter([tool_call_turn(tool_call("delegate", {"text": "x"}, id="o")), "done"])
    assert evaluate(tools_prompt([delegate], key="outer"), adapter=adapter, session=Session()).text == "done"
    # the outer run works inline on its private loop; the inner one shares that loop, so it keeps off it
    assert seen[0][0] == "sync handler" and seen[0][1] != threading.current_thread().name


def test_runs_share_a_few_lanes_instead_of_a_thread_each(tmp_path: Path) -> None:
    seen: Seen = []
    sync_note, async_note = _recording_tools(seen)
    store = Store.open(str(tmp_path / "runs.db"))

    async def main() -> None:
        await asyncio.gather(
            *(
                run(tools_prompt([sync_note, async_note]), adapter=_adapter(), session=Session(), store=store)
                for _ in range(3 * _store_work.LANES)
            )
        )

    asyncio.run(main())
    lanes = {t.name for t in threading.enumerate() if t.name.startswith("weakprompt-store-")}
    assert 0 < len(lanes) <= _store_work.LANES


def _spy_writes(store: Store, threads: list[str]) -> None:
    """Note the thread of every write transaction ``store`` opens."""
    write = store.write

    @contextmanager
    def noted(*, lock: str | None = None) -> Iterator[object]:
        threads.append(threading.current_thread().name)
        with write(lock=lock) as conn:
            yield conn

    store.write = noted  # type: ignore[method-assign]


def _async_run_threads(
    store: Store, *, output: str = "fine", redact: Callable[[str], str] | None = None
) -> list[str]:
    """Run an async tool once on a shared loop; the threads ``store`` was written on."""

    @tool
    async def echo(text: str) -> ToolResult[None]:
        """Answers with the text it was given, from the loop."""
        return ToolResult.ok(None, message=text)

    threads: list[str] = []
    _spy_writes(store, threads)
    adapter = ScriptedAdapter([tool_call_turn(tool_call("echo", {"text": output}, id="e1")), "done"])

    async def main() -> str:
        extra = {} if redact is None else {"redact": redact}
        response = await run(tools_prompt([echo]), adapter=adapter, session=Session(), store=store, **extra)
        return response.text

    assert asyncio.run(main()) == "done"
    return threads


def test_a_store_in_memory_is_written_on_the_loop_itself() -> None:
    """In-memory SQLite never waits on a disk or a lock: a thread hop would only cost time."""
    store = Store.open("sqlite://")
    assert store.in_memory
    threads = _async_run_threads(store)
    assert threads and set(threads) == {threading.current_thread().name}


def test_a_store_in_a_file_is_written_on_a_shared_lane(tmp_path: Path) -> None:
    store = Store.open(str(tmp_path / "file.db"))
    assert not store.in_memory
    threads = _async_run_threads(store)
    assert threads and all(name.startswith("weakprompt-store-") for name in threads)


@pytest.mark.parametrize(("size", "off_the_loop"), [(100, False), (200_000, True)])
def test_a_large_result_is_staged_off_the_loop_even_in_memory(size: int, off_the_loop: bool) -> None:
    staged_on: list[str] = []

    def redact(text: str) -> str:  # runs while the result is staged
        staged_on.append(threading.current_thread().name)
        return text

    _async_run_threads(Store.open("sqlite://"), output="x" * size, redact=redact)
    here = threading.current_thread().name
    assert staged_on and all((name != here) is off_the_loop for name in staged_on)


@pytest.mark.parametrize("where", ["private loop", "store in memory", "store in a file"])
def test_every_place_store_work_runs_stores_the_same_conversation(where: str, tmp_path: Path) -> None:
    """Inline on evaluate's own loop, inline for a store in memory, on a lane for a file: one transcript."""
    seen: Seen = []
    sync_note, async_note = _recording_tools(seen)
    store = Store.open(str(tmp_path / "runs.db")) if where == "store in a file" else Store.open("sqlite://")
    session = Session()
    prompt = tools_prompt([sync_note, async_note])

    async def main() -> str:
        response = await run(prompt, adapter=_adapter(), session=session, store=store)
        return response.text

    if where == "private loop":
        assert evaluate(prompt, adapter=_adapter(), session=session, store=store).text == "done"
    else:
        assert asyncio.run(main()) == "done"
    messages = Transcript(store, session.session_id).compile().messages
    assert [m.role for m in messages] == ["system", "assistant", "tool", "assistant", "tool", "assistant"]
    threads = {name for _, name in seen}
    assert threading.current_thread().name in threads  # the async handler runs on the loop
    if where == "private loop":
        assert threads == {threading.current_thread().name}


def test_giving_back_a_lane_twice_or_an_unknown_one_changes_nothing() -> None:
    lanes = _store_work._Lanes()  # pyright: ignore[reportPrivateUsage]
    index, _executor = lanes.take()
    lanes.give_back(index)
    lanes.give_back(index)
    lanes.give_back(_store_work.LANES + 5)
    again, _ = lanes.take()
    assert again == index  # still the least used


def test_an_async_tool_asking_for_sections_gets_its_answer_in_place() -> None:
    from weakprompt.errors import VisibilityExpansionRequired

    @tool
    async def open_more(text: str) -> ToolResult[None]:
        """Asks the loop for a section that does not exist."""
        await asyncio.sleep(0)
        raise VisibilityExpansionRequired(["no-such-section"], reason=text)

    store = Store.open("sqlite://")
    session = Session()
    adapter = ScriptedAdapter([tool_call_turn(tool_call("open_more", {"text": "why"}, id="o1")), "done"])

    async def main() -> str:
        response = await run(tools_prompt([open_more]), adapter=adapter, session=session, store=store)
        return response.text

    assert asyncio.run(main()) == "done"
    (result,) = [m for m in Transcript(store, session.session_id).compile().messages if m.role == "tool"]
    assert result.tool_call_id == "o1" and result.is_error
    assert "no-such-section" in result.content
