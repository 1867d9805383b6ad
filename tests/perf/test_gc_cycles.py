"""A finished run leaves no reference cycle of weakprompt's own objects behind.

Objects in a cycle are freed only by the cyclic garbage collector. With a
thousand sessions waiting on their models, every run's cyclic leftovers
are promoted to the oldest generation and make each full collection
longer; the per-turn ones most of all. Reference counting alone must
free a finished run. With a private store (the default), nothing at all is
left: its engine keeps no compiled-statement cache, the one SQLAlchemy
structure that refers back to its engine.
"""

from __future__ import annotations

import asyncio
import gc
import sqlite3
import weakref
from collections.abc import Callable, Generator
from contextlib import contextmanager
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from weakprompt import run
from weakprompt.adapters.testing import Reply, ScriptedAdapter, tool_call, tool_call_turn
from weakprompt.clock import FakeClock
from weakprompt.errors import MaxTurnsExceededError, TranscriptError
from weakprompt.events import EventBus
from weakprompt.messages import ToolCall
from weakprompt.prompt import MarkdownSection, Prompt, PromptTemplate
from weakprompt.runtime import evaluate
from weakprompt.session import Session
from weakprompt.store import Store, memory_template
from weakprompt.tools import ToolContext, ToolResult, tool
from weakprompt.transcript import Transcript


@dataclass(frozen=True)
class Text:
    text: str


@dataclass(frozen=True)
class Seen:
    text: str


@tool
def echo(params: Text, *, context: ToolContext) -> ToolResult[Seen]:
    """Echo the text (a sync handler, run off the event loop)."""
    return ToolResult.ok(Seen(params.text), message=params.text)


@tool
async def shout(params: Text, *, context: ToolContext) -> ToolResult[Seen]:
    """Upper-case the text after yielding to the loop; "fail" raises."""
    await asyncio.sleep(0)
    if params.text == "fail":
        raise ValueError("asked to fail")
    return ToolResult.ok(Seen(params.text.upper()), message=params.text.upper())


def _prompt() -> Prompt[None]:
    template: PromptTemplate[None] = PromptTemplate(
        ns="tests/gc",
        key="cycles",
        sections=[MarkdownSection(title="Task", key="task", template="Use the tools.", tools=[echo, shout])],
    )
    return Prompt(template)


def _session() -> Session:
    session = Session()
    session.register_reducer(Seen, Seen, lambda state, event: (*state, event))
    return session


@contextmanager
def cyclic_garbage() -> Generator[list[object], None, None]:
    """What only the cyclic collector could free of what the block made (collector settings restored)."""
    enabled, flags, kept = gc.isenabled(), gc.get_debug(), len(gc.garbage)
    found: list[object] = []
    gc.collect()
    gc.disable()
    try:
        gc.set_debug(flags | gc.DEBUG_SAVEALL)
        yield found
        gc.collect()
        found.extend(gc.garbage[kept:])
    finally:
        gc.set_debug(flags)
        del gc.garbage[kept:]
        if enabled:
            gc.enable()


def _ours(found: list[object]) -> list[str]:
    return sorted({f"{type(o).__module__}.{type(o).__qualname__}" for o in found if _is_ours(o)})


def _kinds(found: list[object]) -> list[str]:
    return sorted({f"{type(o).__module__}.{type(o).__qualname__}" for o in found})


def _is_ours(obj: object) -> bool:
    return type(obj).__module__.startswith("weakprompt")


def _turns(shapes: list[list[str]]) -> ScriptedAdapter:
    """One reply per shape, calling ``shout`` for texts starting with "s" (and "fail"), then "done"."""
    replies: list[Reply] = []
    for number, shape in enumerate(shapes):
        calls = [tool_call(_tool_for(t), {"text": t}, id=f"c{number}_{i}") for i, t in enumerate(shape)]
        replies.append(tool_call_turn(*calls))
    replies.append("done")
    return ScriptedAdapter(replies)


def _tool_for(text: str) -> str:
    return "shout" if text.startswith("s") or text == "fail" else "echo"


def _evaluate(shapes: list[list[str]]) -> int:
    session = _session()
    response = evaluate(_prompt(), adapter=_turns(shapes), session=session, max_turns=len(shapes) + 1)
    assert response.text == "done"
    return len(session[Seen].all())


def _run(shapes: list[list[str]]) -> int:
    session = _session()
    response = asyncio.run(run(_prompt(), adapter=_turns(shapes), session=session, max_turns=len(shapes) + 1))
    assert response.text == "done"
    return len(session[Seen].all())


@pytest.fixture(autouse=True)
def _warm() -> None:
    _evaluate([["echo"], ["shout", "s2"]])  # first-use caches are kept on purpose: not this test's garbage


@pytest.mark.parametrize("finish", [_evaluate, _run], ids=["evaluate", "run"])
def test_a_finished_run_with_tool_round_trips_leaves_no_cyclic_garbage_of_ours(
    finish: Callable[[list[list[str]]], int],
) -> None:
    with cyclic_garbage() as found:
        seen = finish([["a"], ["s1", "b", "fail"], ["s2"]])
    assert seen == 4  # the calls ran (the failed one left no value)
    assert _kinds(found) == []  # not even the private store's engine


@settings(max_examples=15)
@given(
    shapes=st.lists(
        st.lists(st.sampled_from(["a", "b", "s1", "s2", "fail"]), min_size=1, max_size=3),
        min_size=1,
        max_size=3,
    ),
    sync=st.booleans(),
)
def test_no_shape_of_run_leaves_cyclic_garbage_of_ours(shapes: list[list[str]], sync: bool) -> None:
    with cyclic_garbage() as found:
        seen = (_evaluate if sync else _run)(shapes)
    assert seen == sum(1 for shape in shapes for text in shape if text != "fail")
    assert _kinds(found) == []  # not even the private store's engine


def test_the_private_store_a_run_made_is_closed_when_it_ends(monkeypatch: pytest.MonkeyPatch) -> None:
    opened: list[Store] = []
    original = Store.open

    def recording_open(*args: object, **kwargs: object) -> Store:
        store = original(*args, **kwargs)  # pyright: ignore[reportArgumentType]
        opened.append(store)
        return store

    monkeypatch.setattr(Store, "open", recording_open)
    _evaluate([["a"]])
    with pytest.raises(MaxTurnsExceededError):
        evaluate(_prompt(), adapter=_turns([["a"], ["b"]]), session=_session(), max_turns=1)
    assert len(opened) == 2
    assert all(store.closed for store in opened)  # its in-memory database is freed at once


def test_closing_an_in_memory_store_frees_its_rows_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    for kept in (True, False):  # kept for the next store, emptied; or, with no room left, closed
        monkeypatch.setattr(memory_template, "IDLE_LIMIT", 64 if kept else 0)
        store = Store.open()
        Transcript(store, "s").user("words")
        with store.read() as conn:
            database = conn.connection.driver_connection
        assert isinstance(database, sqlite3.Connection)
        store.close()
        if kept:
            assert database.execute("SELECT count(*) FROM commits").fetchone() == (0,)
        else:
            with pytest.raises(sqlite3.ProgrammingError, match="closed"):
                database.execute("SELECT 1")
        store.close()  # again: nothing to do
        assert store.closed


def test_a_store_the_caller_gave_stays_open() -> None:
    with Store.open() as store:
        session = _session()
        evaluate(_prompt(), adapter=_turns([["a"]]), session=session, store=store)
        assert not store.closed
        assert Transcript(store, session.session_id).head is not None


def test_a_dropped_session_is_freed_without_the_cyclic_collector_and_its_reducers_stop() -> None:
    shared = EventBus()
    applied: list[Seen] = []

    def reducer(state: tuple[Seen, ...], event: Seen) -> tuple[Seen, ...]:
        applied.append(event)
        return (*state, event)

    session = Session(bus=shared)
    session.register_reducer(Seen, Seen, reducer)
    shared.dispatch(Seen("kept"))
    assert session[Seen].all() == (Seen("kept"),)
    fork = session.fork()
    fork.dispatch(Seen("in the fork"))
    assert len(fork.operations) == 1
    fork_dispatcher = fork.bus
    gone, fork_gone = weakref.ref(session), weakref.ref(fork)
    with cyclic_garbage() as found:
        del session, fork
        assert gone() is None and fork_gone() is None  # reference counting alone freed them
        result = shared.dispatch(Seen("after"))  # its handlers are still subscribed: they do nothing
        fork_result = fork_dispatcher.dispatch(Seen("after, in the fork"))  # nor do the fork's
    assert result.ok and fork_result.ok
    assert fork_result.handlers_invoked == 2  # the fork's recorder and its reducer, both inert now
    assert [e.text for e in applied] == ["kept", "in the fork"]
    assert _ours(found) == []


def test_a_turn_forgets_what_was_attached_once_the_block_ends() -> None:
    with Store.open(clock=FakeClock()) as store:
        transcript = Transcript(store, "s")
        told: list[str] = []
        with transcript.turn() as record:
            transcript.user("hi")
            record.on_stored(lambda: told.append(record.stored_hash(record.commits[0].hash)))
            assert len(record.writes) == 1
        assert told == [record.commits[0].hash] and record.stored
        assert record.writes == []  # told once, then let go (it referred back to the turn)
        with pytest.raises(TranscriptError, match="has ended"):
            record.on_stored(lambda: None)

        with pytest.raises(RuntimeError, match="stop"), transcript.turn() as dropped:
            transcript.assistant(tool_calls=(ToolCall("c", "echo", "{}"),))
            dropped.on_stored(lambda: told.append("never"))
            raise RuntimeError("stop")
        assert dropped.writes == [] and not dropped.stored
        assert told == [record.commits[0].hash]
