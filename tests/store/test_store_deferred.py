"""A deferred private store keeps its writes back until something could see them, and stores the same.

A run without ``store=`` writes to a private in-memory store that nothing
outside the run can reach and that is dropped when the run ends. So the
loop opens it with ``deferred=True``: turns that can be written without
reading anything wait in memory, and the database is built only when
something reads or writes the store. Whoever looks must find exactly what
an ordinary store would hold, in the same order, and a store closed before
anyone looked must have built nothing.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import Connection

from loop_support import arithmetic_prompt
from weakprompt.adapters.testing import ScriptedAdapter, text_turn, tool_call, tool_call_turn
from weakprompt.clock import FakeClock
from weakprompt.errors import StoreError
from weakprompt.messages import ToolCall
from weakprompt.runtime import evaluate
from weakprompt.runtime.results import ToolOutputStore
from weakprompt.session import Session
from weakprompt.store import Store, memory_template, tables
from weakprompt.transcript import Transcript


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Counts the private databases built (each deferred store builds at most one, when first used)."""
    count: list[int] = []
    real = memory_template.memory_engine

    def counted(clock: FakeClock) -> sa.Engine:
        count.append(1)
        return real(clock)

    import weakprompt.store.store as store_module

    monkeypatch.setattr(store_module, "memory_engine", counted)
    yield count


def _rows(store: Store) -> dict[str, list[tuple[object, ...]]]:
    """Every row of every table but the schema versions (stamped when the database is built) and the id."""
    dump: dict[str, list[tuple[object, ...]]] = {}
    with store.read() as conn:
        for table in tables.metadata.sorted_tables:
            if table is not tables.schema_versions and table is not tables.store_identity:
                dump[table.name] = sorted(tuple(row) for row in conn.execute(sa.select(table)))
    return dump


def _note(text: str):  # type: ignore[no-untyped-def]
    def write(conn: Connection) -> None:
        conn.execute(sa.insert(tables.blobs).values(hash=text, content="{}", size_bytes=2, created_at="t"))

    return write


# -- the store -------------------------------------------------------------------------------------


def test_kept_writes_wait_and_run_in_order_before_the_next_read(built: list[int]) -> None:
    store = Store.open(deferred=True)
    assert store.deferred and store.in_memory and built == []
    first = store.defer(_note("a"))
    second = store.defer(_note("b"))
    assert (first, second) == (1, 2) and store.write_count == 2
    assert built == []  # nothing read it yet
    with store.read() as conn:
        hashes = [row[0] for row in conn.execute(sa.select(tables.blobs.c.hash))]
    assert sorted(hashes) == ["a", "b"] and built == [1]
    store.close()


def test_a_write_transaction_and_the_engine_also_store_what_was_kept() -> None:
    with Store.open(deferred=True) as store:
        store.defer(_note("a"))
        with store.write() as conn:  # after the kept write: its rows are there already
            assert conn.execute(sa.select(sa.func.count()).select_from(tables.blobs)).scalar() == 1
        store.defer(_note("b"))
        with store.engine.connect() as conn:
            assert conn.execute(sa.select(sa.func.count()).select_from(tables.blobs)).scalar() == 2
        assert store.write_count == 3


def test_a_store_closed_before_anyone_looked_builds_nothing(built: list[int]) -> None:
    store = Store.open(deferred=True)
    with store.hold_connection():  # holds nothing: there is no database yet
        store.defer(_note("a"))
    store.close()
    assert built == [] and not store.deferred
    with pytest.raises(StoreError, match="closed"):
        store.defer(_note("b"))


def test_a_kept_write_that_fails_stays_queued_with_a_note() -> None:
    calls: list[int] = []

    def flaky(conn: Connection) -> None:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("disk full, say")
        _note("late")(conn)

    with Store.open(deferred=True) as store:
        store.defer(_note("a"))
        store.defer(flaky)
        with pytest.raises(RuntimeError, match="disk full") as failed:
            with store.read():
                pass
        assert any("2 write(s) kept back" in note for note in failed.value.__notes__)
        stored = [row[0] for row in _rows(store)["blobs"]]  # the next look stores both, once each
        assert stored == ["a", "late"] and calls == [1, 1]


def test_only_a_private_writable_memory_store_defers(tmp_path: os.PathLike[str]) -> None:
    with pytest.raises(StoreError, match="deferred=True is for a private in-memory store"):
        Store.open(f"{tmp_path}/x.db", deferred=True)
    with pytest.raises(StoreError, match="read-only"):
        Store.open(deferred=True, read_only=True)
    with Store.open() as plain:
        assert not plain.deferred
        with pytest.raises(StoreError, match="does not defer writes"):
            plain.defer(_note("a"))


# -- transcripts and outputs on it ----------------------------------------------------------------

Op = tuple[str, int]
kinds = st.sampled_from(["turn", "turn", "turn+output", "repeat-call", "now", "read", "other", "tick"])
ops = st.lists(st.tuples(kinds, st.integers(0, 3)), max_size=12)


def _play(store: Store, clock: FakeClock, script: list[Op]) -> list[list[str]]:
    """The loop's way of writing (a promised-new transcript, the outputs' one writer), plus outsiders."""
    transcript = Transcript(store, "s", assume_new=True)
    outputs = ToolOutputStore(store, "s", sole_writer=True)
    seen: list[list[str]] = []
    with transcript.turn(refresh=False):  # as the loop starts: nothing else writes before this
        transcript.system("Use the tool.")
    for i, (kind, n) in enumerate(script):
        if kind.startswith("turn") or kind == "repeat-call":
            call = ToolCall(id="same" if kind == "repeat-call" else f"c{i}", name="t", arguments="{}")
            with transcript.turn(refresh=False) as turn:
                transcript.assistant("", tool_calls=(call,))
                result = f"result {n}"
                if kind != "turn":
                    outputs.stage(turn, outputs.prepare(call.id, call.name, "{}", result))
                transcript.tool_result(call.id, call.name, result)
        elif kind == "now":
            transcript.user(f"now {n}")
        elif kind == "read":
            seen.append([c.hash for c in Transcript(store, "s").log()])
        elif kind == "other":  # another writer on the session: the loop's writer must not fork the chain
            Transcript(store, "s").user(f"other {n}")
        else:
            clock.advance(n + 1)
    return seen


@settings(max_examples=40, deadline=None)
@given(script=ops)
def test_property_a_deferred_store_holds_exactly_what_an_ordinary_one_does(script: list[Op]) -> None:
    plain_clock, deferred_clock = FakeClock(), FakeClock()
    with Store.open(clock=plain_clock) as plain, Store.open(clock=deferred_clock, deferred=True) as deferred:
        seen_plain = _play(plain, plain_clock, script)
        seen_deferred = _play(deferred, deferred_clock, script)
        assert seen_deferred == seen_plain  # every look in between found the same chain
        assert _rows(deferred) == _rows(plain)


def test_loop_shaped_turns_wait_until_something_reads(built: list[int]) -> None:
    with Store.open(deferred=True) as store:
        _play(store, FakeClock(), [("turn+output", 0), ("turn", 1), ("turn+output", 2)])
        assert built == []
        assert len(_rows(store)["commits"]) == 7 and built == [1]
        assert len(_rows(store)["tool_outputs"]) == 2


# -- the loop ---------------------------------------------------------------------------------------


def test_a_run_on_the_default_store_that_nothing_reads_builds_no_database(built: list[int]) -> None:
    response = evaluate(
        arithmetic_prompt(),
        adapter=ScriptedAdapter([tool_call_turn(tool_call("add", {"a": 1, "b": 2}, id="c")), text_turn("3")]),
        session=Session(session_id="run"),
    )
    assert response.text == "3"
    assert built == []


def test_a_store_without_an_engine_must_be_deferred() -> None:
    with pytest.raises(StoreError, match="needs an engine"):
        Store(None, url="sqlite://", clock=FakeClock(), schema_version=1)


def test_a_turn_with_rows_but_no_commits_is_written_at_once(built: list[int]) -> None:
    with Store.open(deferred=True) as store:
        transcript = Transcript(store, "s", assume_new=True)
        told: list[str] = []
        with transcript.turn(refresh=False) as turn:
            turn.on_stored(lambda: told.append("stored"))
        assert told == ["stored"] and built == [1]  # nothing to keep back: an ordinary write


def test_a_write_count_that_moved_keeps_nothing_back() -> None:
    with Store.open(deferred=True) as store:
        assert store.defer(_note("a"), after=0) == 1
        assert store.defer(_note("b"), after=0) is None  # someone wrote since the count was noted
        assert [row[0] for row in _rows(store)["blobs"]] == ["a"]


def test_a_writer_racing_the_kept_turn_makes_it_written_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Another thread writes between the check and the keeping: the turn is placed after that write."""
    with Store.open(deferred=True) as store:
        transcript = Transcript(store, "s", assume_new=True)
        transcript.user("first")  # written at once: the writer now knows the head and the count
        real_defer = store.defer

        def racing(work, *, after=None):  # type: ignore[no-untyped-def]
            Transcript(store, "s").user("from another thread")
            return real_defer(work, after=after)

        monkeypatch.setattr(store, "defer", racing)
        with transcript.turn(refresh=False) as turn:
            transcript.user("mine")
        assert turn.moved and turn.stored
        texts = [c.content.content for c in Transcript(store, "s").log()]
        assert texts == ["first", "from another thread", "mine"]


def test_callbacks_and_raw_originals_are_kept_back_with_their_turn(built: list[int]) -> None:
    from weakprompt.messages import Message
    from weakprompt.transcript.originals import load_message_blob, stage_message_blob

    with Store.open(deferred=True, clock=FakeClock()) as store:
        transcript = Transcript(store, "s", assume_new=True)
        told: list[str] = []
        with transcript.turn(refresh=False) as turn:
            transcript.user("redacted text")
            digest = stage_message_blob(turn, Message("user", "the raw text"), FakeClock().now())
            turn.on_stored(lambda: told.append("stored"))
        assert told == ["stored"] and turn.stored and built == []  # told at once, written later
        assert load_message_blob(store, digest).content == "the raw text"
        assert built == [1]


def test_a_large_output_waits_compressed_and_reads_back_exactly(built: list[int]) -> None:
    payload = "\n".join(f"line {i}: status ok" for i in range(20_000))  # well over 64 KiB, compressible
    with Store.open(deferred=True) as store:
        transcript = Transcript(store, "s", assume_new=True)
        outputs = ToolOutputStore(store, "s", sole_writer=True)
        call = ToolCall(id="big", name="t", arguments="{}")
        with transcript.turn(refresh=False) as turn:
            transcript.assistant("", tool_calls=(call,))
            staged = outputs.stage(turn, outputs.prepare(call.id, call.name, "{}", payload))
            transcript.tool_result(call.id, call.name, "kept behind a handle")
        assert built == [] and staged.reference is not None and staged.reference.seq == 0
        again = ToolCall(id="again", name="t", arguments="{}")
        with transcript.turn(refresh=False) as turn:  # the same payload: known stored, not compressed again
            transcript.assistant("", tool_calls=(again,))
            repeat = outputs.stage(turn, outputs.prepare(again.id, again.name, "{}", payload))
            transcript.tool_result(again.id, again.name, "kept behind a handle")
        assert repeat.prepared.encoded is None and repeat.reference is not None
        assert repeat.reference.deduplicated and repeat.reference.seq == 1 and built == []
        found = outputs.get_result("big")
        assert found is not None and found.data == payload.encode()
        with store.read() as conn:
            stored = conn.execute(sa.select(tables.tool_output_blobs.c.stored_bytes)).scalar_one()
        assert stored < len(payload) // 4  # what waited, and was stored, is the compressed form
