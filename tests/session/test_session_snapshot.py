"""Snapshots and restore: exact for STATE slices, LOG slices survive."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, invariant, rule

from weakprompt.events import ToolInvoked
from weakprompt.session import (
    Session,
    SessionSnapshot,
    SlicePolicy,
    SnapshotMismatchError,
    append,
    upsert_by,
)
from weakprompt.tools import ToolResult

T0 = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Note:
    text: str


@dataclass(frozen=True)
class Item:
    key: str
    value: int


@dataclass(frozen=True)
class Audit:
    entry: str


def make_session() -> Session:
    s = Session()
    s.register_reducer(Note, Note, append)
    s.register_reducer(Item, Item, upsert_by(lambda i: i.key))
    s.register_reducer(Audit, Audit, append, policy=SlicePolicy.LOG)
    return s


def test_restore_puts_state_slices_back_exactly() -> None:
    s = make_session()
    s.dispatch(Note("a"))
    s.dispatch(Item("k", 1))
    before = s.state()
    snap = s.snapshot()
    s.dispatch(Note("b"))
    s.dispatch(Item("k", 2))
    s[Item].clear()
    s.restore(snap)
    assert s.state() == before
    assert s[Note].all() == (Note("a"),)
    assert s[Item].all() == (Item("k", 1),)


def test_restore_removes_slices_created_after_the_snapshot() -> None:
    s = make_session()
    snap = s.snapshot()
    s[Note].append(Note("later"))
    s.restore(snap)
    assert s.state() == {}
    assert s[Note].all() == ()


def test_log_slices_survive_restore() -> None:
    s = make_session()
    snap = s.snapshot()
    s.dispatch(Audit("happened"))
    s.dispatch(
        ToolInvoked(
            prompt_name="p",
            adapter="a",
            name="t",
            params=None,
            result=ToolResult.error("x"),
            call_id="c",
            session_id=s.session_id,
            started_at=T0,
            finished_at=T0,
        )
    )
    s.restore(snap)
    assert s[Audit].all() == (Audit("happened"),)
    assert len(s[ToolInvoked].all()) == 1


def test_slice_switched_to_log_after_a_snapshot_keeps_its_log_on_restore() -> None:
    s = Session()
    s[Note].append(Note("old"))
    snap = s.snapshot()
    s.set_policy(Note, SlicePolicy.LOG)
    s[Note].append(Note("new"))
    s.restore(snap)
    assert s[Note].all() == (Note("old"), Note("new"))
    assert s.state() == {}


def test_snapshot_shares_the_immutable_slices_instead_of_copying_them() -> None:
    s = make_session()
    s[Note].seed([Note(str(i)) for i in range(1000)])
    snap = s.snapshot()
    assert snap.values(Note) is s[Note].all()
    assert snap.values(Item) == ()
    s.dispatch(Note("more"))
    assert len(snap.values(Note)) == 1000  # the snapshot did not change
    s.restore(snap)
    assert s[Note].all() is snap.values(Note)


def test_snapshots_compare_by_content() -> None:
    s = make_session()
    s[Note].append(Note("a"))
    first = s.snapshot()
    s[Note].append(Note("b"))
    s[Note].seed([Note("a")])
    assert s.snapshot() == first
    s[Note].append(Note("c"))
    assert s.snapshot() != first


def test_snapshot_cannot_be_modified() -> None:
    s = make_session()
    s[Note].append(Note("a"))
    snap = s.snapshot()
    with pytest.raises(TypeError):
        snap.slices[Note] = ()  # type: ignore[index]


def test_restoring_another_sessions_snapshot_is_refused() -> None:
    a, b = make_session(), make_session()
    a[Note].append(Note("a"))
    b[Note].append(Note("b"))
    with pytest.raises(SnapshotMismatchError, match=f"snapshot of session {a.session_id}"):
        b.restore(a.snapshot())
    assert b[Note].all() == (Note("b"),)
    with pytest.raises(TypeError, match="takes a SessionSnapshot"):
        b.restore({Note: ()})  # type: ignore[arg-type]


def test_snapshot_is_a_value_with_session_id() -> None:
    s = make_session()
    snap = s.snapshot()
    assert isinstance(snap, SessionSnapshot)
    assert snap.session_id == s.session_id


texts = st.text(alphabet="abc", max_size=3)


class SessionRollbackMachine(RuleBasedStateMachine):
    """Random writes, events, snapshots and restores against a plain model."""

    snapshots = Bundle("snapshots")

    def __init__(self) -> None:
        super().__init__()
        self.session = make_session()
        self.notes: list[Note] = []
        self.items: dict[str, Item] = {}
        self.audit: list[Audit] = []
        self.tool_calls = 0

    def model_state(self) -> dict[type[object], tuple[object, ...]]:
        state: dict[type[object], tuple[object, ...]] = {}
        if self.notes:
            state[Note] = tuple(self.notes)
        if self.items:
            state[Item] = tuple(self.items.values())
        return state

    @rule(text=texts)
    def append_note_directly(self, text: str) -> None:
        self.session[Note].append(Note(text))
        self.notes.append(Note(text))

    @rule(text=texts)
    def dispatch_note(self, text: str) -> None:
        assert self.session.dispatch(Note(text)).ok
        self.notes.append(Note(text))

    @rule(key=st.sampled_from("xyz"), value=st.integers(0, 9))
    def dispatch_item(self, key: str, value: int) -> None:
        assert self.session.dispatch(Item(key, value)).ok
        self.items[key] = Item(key, value)

    @rule(entry=texts)
    def dispatch_audit(self, entry: str) -> None:
        self.session.dispatch(Audit(entry))
        self.audit.append(Audit(entry))

    @rule(text=texts, success=st.booleans())
    def tool_call(self, text: str, success: bool) -> None:
        value = Note(text)
        result = ToolResult.ok(value) if success else ToolResult(message="no", value=value, success=False)
        event = ToolInvoked(
            prompt_name="p",
            adapter="a",
            name="t",
            params=None,
            result=result,
            call_id=str(self.tool_calls),
            session_id=self.session.session_id,
            started_at=T0,
            finished_at=T0,
        )
        assert self.session.dispatch(event).ok
        self.tool_calls += 1
        if success:
            self.notes.append(value)

    @rule()
    def clear_items(self) -> None:
        self.session[Item].clear()
        self.items.clear()

    @rule(target=snapshots)
    def take_snapshot(self) -> tuple[SessionSnapshot, list[Note], dict[str, Item]]:
        return (self.session.snapshot(), list(self.notes), dict(self.items))

    @rule(saved=snapshots)
    def restore(self, saved: tuple[SessionSnapshot, list[Note], dict[str, Item]]) -> None:
        snap, notes, items = saved
        self.session.restore(snap)
        self.notes, self.items = list(notes), dict(items)
        assert self.session.snapshot() == snap

    @invariant()
    def state_matches_model(self) -> None:
        assert dict(self.session.state()) == self.model_state()

    @invariant()
    def logs_are_never_rolled_back(self) -> None:
        assert self.session[Audit].all() == tuple(self.audit)
        assert [e.call_id for e in self.session[ToolInvoked].all()] == [
            str(i) for i in range(self.tool_calls)
        ]


TestSessionRollbackMachine = SessionRollbackMachine.TestCase


def test_snapshots_taken_during_concurrent_dispatch_are_never_torn() -> None:
    import threading

    s = make_session()
    stop = threading.Event()

    def writer() -> None:
        n = 0
        while not stop.is_set():
            # Note and Item move together: item value == number of notes after it
            s.dispatch(Note(str(n)))
            n += 1
            s.dispatch(Item("count", n))

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        for _ in range(300):
            snap = s.snapshot()
            notes = snap.values(Note)
            items = snap.values(Item)
            # each slice is a whole tuple: notes are 0..k-1 in order
            assert [n.text for n in notes] == [str(i) for i in range(len(notes))]
            if items:
                assert items[0].value in (len(notes), len(notes) - 1)
    finally:
        stop.set()
        thread.join()
    before = s.snapshot()
    s.dispatch(Note("extra"))
    s.restore(before)
    assert s.snapshot() == before
