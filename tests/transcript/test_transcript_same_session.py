"""Several Transcript objects writing one session: each view stays what a fresh Transcript reads.

A turn stored after another writer's commits (``moved``) or not stored at all
takes its staged commits back out of the cached view and reads on from the
turn's base; it no longer throws the whole view away.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from weakprompt.errors import TranscriptError
from weakprompt.store import Store
from weakprompt.store.commit_rows import fetch_commits
from weakprompt.transcript import CommitInfo, Transcript
from weakprompt.transcript.compiler import CompileState

WRITERS = 3


class Boom(Exception):
    pass


def _tool(i: int) -> dict[str, object]:
    return {"name": f"tool_{i}", "description": f"tool of writer {i}", "parameters": {"type": "object"}}


edit_kinds = st.sampled_from(["user", "assistant", "edit stored", "edit staged", "tool"])


class SameSessionWriters(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.folder = Path(tempfile.mkdtemp(prefix="wp-same-session-"))
        self.store = self._open()
        self.writers = [Transcript(self.store, "s") for _ in range(WRITERS)]
        for i, t in enumerate(self.writers):
            t.set_tools([_tool(i)])
        self.texts = 0
        self.turns_moved = 0

    def _open(self) -> Store:
        return Store.open(self.folder / "s.db")

    def teardown(self) -> None:
        self.store.close()
        shutil.rmtree(self.folder, ignore_errors=True)

    def _text(self) -> str:
        self.texts += 1
        return f"text {self.texts}"

    def _fresh(self) -> Transcript:
        return Transcript(self.store, "s")

    def _stored(self) -> list[CommitInfo]:
        return [c for c in self._fresh().log() if c.operation.value == "APPEND"]

    def _write_one(self, t: Transcript, kind: str, staged: list[CommitInfo], pick: int) -> None:
        if kind == "user":
            staged.append(t.user(self._text()))
        elif kind == "assistant":
            staged.append(t.assistant(self._text()))
        elif kind == "tool":
            staged.append(t.tool_result(f"call{pick}", "f", self._text()))
        elif kind == "edit stored":
            stored = self._stored()
            if stored:
                target = stored[pick % len(stored)]
                try:
                    self._edit(t, target)
                except TranscriptError as exc:
                    # Only inside a turn whose view does not hold the target (another writer's, newer).
                    assert "inside this turn" in str(exc)
                    shown = t.compile_view().commits
                    assert not any(target.hash in (c.hash, c.edit_target) for c in shown)
        elif staged:
            self._edit(t, staged[pick % len(staged)])

    def _edit(self, t: Transcript, target: CommitInfo) -> None:
        content = target.content
        if content.role == "tool":
            assert content.tool_call_id is not None and content.name is not None
            t.tool_result(content.tool_call_id, content.name, self._text(), edit=target.hash)
        else:
            t.commit(content.__class__(content.role, self._text()), operation="EDIT", edit_target=target.hash)

    @rule(i=st.integers(0, WRITERS - 1), kind=edit_kinds, pick=st.integers(0, 99))
    def write_alone(self, i: int, kind: str, pick: int) -> None:
        self._write_one(self.writers[i], kind, [], pick)

    @rule(
        i=st.integers(0, WRITERS - 1),
        gap=st.lists(st.integers(0, WRITERS - 1), max_size=2),
        refresh=st.booleans(),
        kinds=st.lists(st.tuples(edit_kinds, st.integers(0, 99)), max_size=4),
        during=st.none() | st.integers(0, WRITERS - 1),
        fail=st.booleans(),
        again=st.booleans(),
    )
    def turn(
        self,
        i: int,
        gap: list[int],
        refresh: bool,
        kinds: list[tuple[str, int]],
        during: int | None,
        fail: bool,
        again: bool,
    ) -> None:
        """Writers in the gap before the turn, maybe one more during it; maybe a second turn right after."""
        t = self.writers[i]
        for g in gap:
            self.writers[g].user(self._text())
        # A turn shows the stored head unless refresh=False trusts a view another writer has moved on from.
        current = refresh or not gap or gap[-1] == i
        made_any = False
        try:
            with t.turn(refresh=refresh) as record:
                if current:
                    assert t.compile() == self._fresh().compile()
                staged: list[CommitInfo] = []
                for kind, pick in kinds:
                    self._write_one(t, kind, staged, pick)
                made_any = bool(record.commits)
                if made_any:
                    assert t.compile().commit_hashes[-1] == record.commits[-1].hash or any(
                        c.operation.value == "EDIT" for c in record.commits
                    )
                if during is not None and during != i:
                    self.writers[during].user(self._text())
                if fail:
                    raise Boom
        except Boom:
            assert not record.stored
        else:
            if record.moved:
                self.turns_moved += 1
                assert record.stored
        if again and not fail and made_any:
            # Right after its own turn, even a refresh=False turn starts from the stored head.
            with t.turn(refresh=False):
                assert t.compile() == self._fresh().compile()

    @invariant()
    def every_view_equals_a_fresh_one(self) -> None:
        fresh = self._fresh()
        expected = fresh.compile()
        expected_commits = fresh.compile_view().commits
        for t in self.writers:
            assert t.compile() == expected
            assert t.compile_view().commits == expected_commits
            assert t.find_tool_results() == fresh.find_tool_results()
            assert t.head == fresh.head


class SameSessionWritersInMemory(SameSessionWriters):
    """The same writers on a private in-memory store, where a writer skips reading back the head it
    stored while the database's change count says nothing was written since (Store.change_count)."""

    def _open(self) -> Store:
        return Store.open("sqlite://")


_MACHINE = settings(max_examples=40, stateful_step_count=12, deadline=None)
SameSessionWriters.TestCase.settings = _MACHINE
test_same_session_writers_keep_views_equal_to_a_fresh_transcript = SameSessionWriters.TestCase
SameSessionWritersInMemory.TestCase.settings = _MACHINE
test_same_session_in_memory_writers_keep_views_equal_to_a_fresh_one = SameSessionWritersInMemory.TestCase


def test_a_moved_turn_reads_only_what_changed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another writer appended first: only the commits after the turn's base are read, nothing rebuilt."""
    with Store.open(tmp_path / "s.db") as store:
        a, b = Transcript(store, "s"), Transcript(store, "s")
        for n in range(20):
            a.user(f"history {n}")
        a.compile()
        reads: list[int] = []
        import weakprompt.transcript.transcript as module

        def counting(conn: object, session_id: str, *, after_seq: int = -1) -> object:
            rows = fetch_commits(conn, session_id, after_seq=after_seq)  # type: ignore[arg-type]
            reads.append(len(rows))
            return rows

        monkeypatch.setattr(module, "fetch_commits", counting)
        rebuilt: list[CompileState] = []
        monkeypatch.setattr(module, "CompileState", lambda: rebuilt.append(CompileState()) or rebuilt[-1])
        with a.turn(refresh=False) as record:
            a.assistant("mine 1")
            a.tool_result("c", "f", "mine 2")
            b.user("theirs")  # b appends first: a's turn is stored after it
        assert record.moved
        view = a.compile()
        assert reads == [3]  # theirs + the two of the turn, as stored
        assert rebuilt == []
        assert view == Transcript(store, "s").compile()
        assert [m.content for m in a.compile().messages][-3:] == ["theirs", "mine 1", "mine 2"]


def test_a_dropped_turn_restores_edited_slots_and_tools(tmp_path: Path) -> None:
    with Store.open(tmp_path / "s.db") as store:
        t = Transcript(store, "s")
        t.set_tools([_tool(0)])
        first = t.user("original")
        before = t.compile()
        with pytest.raises(Boom), t.turn():
            t.set_tools([_tool(1)])
            t.user("edited", edit=first.hash)
            t.assistant("staged")
            assert [m.content for m in t.compile().messages] == ["edited", "staged"]
            raise Boom
        assert t.compile() == before
        assert t.compile().tools == (_tool(0),)
        assert t.compile_view().commits == Transcript(store, "s").compile_view().commits


def test_an_edit_inside_a_turn_of_a_commit_its_view_lacks_is_refused_staging_nothing(tmp_path: Path) -> None:
    with Store.open(tmp_path / "s.db") as store:
        a, b = Transcript(store, "s"), Transcript(store, "s")
        a.user("first")
        with a.turn() as record:
            theirs = b.user("theirs")  # stored after this turn's base
            with pytest.raises(TranscriptError, match="stored by another writer after the view"):
                a.user("edited", edit=theirs.hash)
            a.assistant("mine")
        assert record.moved
        assert [c.content.content for c in record.commits] == ["mine"]
        a.user("edited", edit=theirs.hash)  # outside a turn the view is brought up to date first
        assert [m.content for m in a.compile().messages] == ["first", "edited", "mine"]
        assert a.compile() == Transcript(store, "s").compile()


def test_rollback_without_a_mark_changes_nothing() -> None:
    state = CompileState()
    state.rollback()
    assert state == CompileState()
