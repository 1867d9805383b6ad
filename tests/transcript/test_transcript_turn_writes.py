"""Rows attached to a turn are written in its transaction, and told only once it has committed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import Connection

from weakprompt.clock import FakeClock
from weakprompt.errors import StoreError, TranscriptError
from weakprompt.messages import ToolCall
from weakprompt.store import Store
from weakprompt.transcript import Transcript, TurnRecord

CALL = ToolCall("call_1", "lookup", '{"q": "x"}')


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store.open(tmp_path / "t.db", clock=FakeClock()) as opened:
        with opened.write() as conn:
            conn.exec_driver_sql("CREATE TABLE notes (text TEXT NOT NULL)")
        yield opened


def count(store: Store, table: str) -> int:
    with store.read() as conn:
        found = conn.exec_driver_sql(f"SELECT count(*) FROM {table}").scalar()
    assert isinstance(found, int)
    return found


class Note:
    """A row for the test table; records when it was written and told, and what was stored then."""

    def __init__(self, store: Store, text: str, log: list[str], *, fail: bool = False) -> None:
        self.store, self.text, self.log, self.fail = store, text, log, fail

    def write(self, conn: Connection) -> None:
        # the turn's commits are already written in this same transaction
        commits = conn.exec_driver_sql("SELECT count(*) FROM commits").scalar()
        self.log.append(f"write {self.text} after {commits} commits")
        if self.fail:
            raise RuntimeError(f"cannot write {self.text}")
        conn.exec_driver_sql("INSERT INTO notes (text) VALUES (?)", (self.text,))

    def committed(self) -> None:
        # told only after the transaction committed: another connection sees everything
        self.log.append(f"told {self.text}: {count(self.store, 'notes')} notes stored")


def test_attached_rows_are_written_with_the_turns_commits_and_told_after(store: Store) -> None:
    t = Transcript(store, "s")
    log: list[str] = []
    with t.turn() as turn:
        t.assistant("", tool_calls=[CALL])
        turn.attach(Note(store, "a", log))
        t.tool_result(CALL.id, CALL.name, "found")
        turn.on_stored(lambda: log.append("callback"))
        turn.attach(Note(store, "b", log))
        assert count(store, "notes") == 0 and log == []
    assert log == [
        "write a after 2 commits",
        "write b after 2 commits",
        "told a: 2 notes stored",
        "callback",
        "told b: 2 notes stored",
    ]
    assert turn.stored and count(store, "commits") == 2


def test_a_failing_write_undoes_the_whole_turn(store: Store) -> None:
    t = Transcript(store, "s")
    t.user("hi")
    log: list[str] = []
    with pytest.raises(RuntimeError, match="cannot write b") as failure:
        with t.turn() as turn:
            t.assistant("", tool_calls=[CALL])
            turn.attach(Note(store, "a", log))
            turn.attach(Note(store, "b", log, fail=True))
    assert (count(store, "commits"), count(store, "notes")) == (1, 0)
    assert log == ["write a after 2 commits", "write b after 2 commits"]  # nobody was told
    assert not turn.stored
    assert "was not stored" in failure.value.__notes__[0]
    assert [c.role for c in t.log()] == ["user"] and len(t.compile().messages) == 1


def test_an_error_in_the_block_writes_nothing_attached(store: Store) -> None:
    t = Transcript(store, "s")
    log: list[str] = []
    with pytest.raises(KeyError):
        with t.turn() as turn:
            t.assistant("thinking")
            turn.attach(Note(store, "a", log))
            raise KeyError("boom")
    assert (count(store, "commits"), count(store, "notes"), log) == (0, 0, [])
    with pytest.raises(TranscriptError, match="turn has ended"):
        turn.attach(Note(store, "late", log))


def test_a_turn_with_only_attached_rows_writes_them(store: Store) -> None:
    log: list[str] = []
    with Transcript(store, "s").turn() as turn:
        turn.attach(Note(store, "alone", log))
    assert (count(store, "commits"), count(store, "notes")) == (0, 1)
    assert log == ["write alone after 0 commits", "told alone: 1 notes stored"]
    with pytest.raises(TranscriptError, match="turn has ended"):
        turn.on_stored(lambda: None)


def test_a_turn_inside_a_turn_attaches_to_the_outer_one(store: Store) -> None:
    t = Transcript(store, "s")
    log: list[str] = []
    with t.turn() as outer:
        with t.turn() as inner:
            assert inner is outer
            inner.attach(Note(store, "inner", log))
        assert log == [] and count(store, "notes") == 0
        t.user("x")
    assert log == ["write inner after 1 commits", "told inner: 1 notes stored"]


def test_a_failure_to_store_the_commits_writes_no_attached_row(store: Store) -> None:
    t = Transcript(store, "s")
    log: list[str] = []
    with pytest.raises(StoreError):
        with t.turn() as turn:
            t.user("x")
            turn.attach(Note(store, "a", log))
            store.close()
    assert log == []


def test_a_moved_turn_maps_the_hashes_it_handed_out(store: Store) -> None:
    t = Transcript(store, "s")
    t.user("first")
    seen: list[str] = []
    with t.turn() as turn:
        staged = t.assistant("reply").hash
        turn.on_stored(lambda: seen.append(turn.stored_hash(staged)))
        Transcript(store, "s").user("slipped in")  # another writer moves the head
    assert turn.moved
    assert seen == [turn.commits[0].hash] and seen[0] != staged
    assert turn.stored_hash("not handed out") == "not handed out"


def test_an_unmoved_turn_keeps_its_hashes(store: Store) -> None:
    t = Transcript(store, "s")
    with t.turn() as turn:
        staged = t.user("x").hash
    assert not turn.moved and turn.stored_hash(staged) == staged == turn.head


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    plan=st.lists(st.tuples(st.booleans(), st.booleans()), min_size=1, max_size=6), fail_at=st.integers(0, 8)
)
def test_property_commits_and_attached_rows_are_stored_together_or_not_at_all(
    store: Store, plan: list[tuple[bool, bool]], fail_at: int
) -> None:
    """Each step commits and/or attaches a row; one write may fail. Either all of a turn is stored or none."""
    t = Transcript(store, "s")
    before = (count(store, "commits"), count(store, "notes"))
    log: list[str] = []
    commits = notes = 0
    failing = False
    try:
        with t.turn() as turn:
            for index, (commit, attach) in enumerate(plan):
                if commit:
                    t.user(f"step {index}")
                    commits += 1
                if attach:
                    failing = failing or index == fail_at
                    turn.attach(Note(store, f"n{index}", log, fail=index == fail_at))
                    notes += 1
    except RuntimeError:
        assert failing
        assert (count(store, "commits"), count(store, "notes")) == before
        assert not any(line.startswith("told") for line in log)
        return
    assert not failing
    assert (count(store, "commits"), count(store, "notes")) == (before[0] + commits, before[1] + notes)
    assert sum(line.startswith("told") for line in log) == notes
    assert isinstance(turn, TurnRecord) and turn.stored


def test_an_error_in_an_inner_turn_is_decided_by_the_outer_one(store: Store) -> None:
    t = Transcript(store, "s")
    log: list[str] = []
    with t.turn() as outer:
        outer.attach(Note(store, "kept", log))
        try:
            with t.turn():
                t.user("inner")
                raise KeyError("caught inside the outer turn")
        except KeyError:
            pass
        assert not outer.stored and outer.open
    assert outer.stored and (count(store, "commits"), count(store, "notes")) == (1, 1)
