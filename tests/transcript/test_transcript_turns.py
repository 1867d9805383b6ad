"""Turns: commits staged in memory, stored together in one transaction, all or nothing."""

from __future__ import annotations

import itertools
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from weakprompt.clock import FakeClock
from weakprompt.errors import StoreError, TranscriptError
from weakprompt.jsontypes import JSONObject
from weakprompt.messages import Message, ToolCall, Usage
from weakprompt.store import Store
from weakprompt.transcript import CommitInfo, CommitOperation, Transcript

TOOL: JSONObject = {
    "name": "lookup",
    "description": "Look it up.",
    "parameters": {"type": "object", "properties": {}},
}
OTHER: JSONObject = {
    "name": "other",
    "description": "Something else.",
    "parameters": {"type": "object", "properties": {}},
}
CALL = ToolCall("call_1", "lookup", '{"q": "x"}')


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store.open(tmp_path / "t.db", clock=FakeClock()) as opened:
        yield opened


def stored_rows(store: Store, table: str = "commits") -> int:
    with store.read() as conn:
        count = conn.exec_driver_sql(f"SELECT count(*) FROM {table}").scalar()
    assert isinstance(count, int)
    return count


def chain_is_unbroken(log: list[CommitInfo]) -> bool:
    return all(b.parent == a.hash and b.seq == a.seq + 1 for a, b in itertools.pairwise(log))


def test_a_turn_is_visible_to_its_transcript_but_stored_only_when_it_ends(store: Store) -> None:
    t = Transcript(store, "s")
    t.set_tools([TOOL])
    system = t.system("sys")
    other = Transcript(store, "s")  # another object on the same session sees only what is stored
    with t.turn() as turn:
        reply = t.assistant("", tool_calls=[CALL], usage=Usage(input_tokens=3, model_calls=1))
        result = t.tool_result(CALL.id, CALL.name, "found")
        assert turn.commits == (reply, result) and not turn.stored
        assert t.head == result.hash and other.head == system.hash
        assert t.get(result.hash) == result
        assert [c.hash for c in t.log()] == [system.hash, reply.hash, result.hash]
        assert t.compile().commit_hashes == (system.hash, reply.hash, result.hash)
        assert t.find_tool_results() == [result]
        assert t.get_commit_tools(reply.hash) == [TOOL]
        assert [c.commit_hash for c in t.tool_set_changes()] == [system.hash, reply.hash, result.hash]
        assert other.compile().commit_hashes == (system.hash,)
        assert stored_rows(store) == 1
    assert turn.stored and not turn.moved and turn.head == result.hash
    assert other.log() == [system, reply, result]
    assert other.compile() == t.compile()
    assert other.get_commit_tools(result.hash) == [TOOL]


def test_commits_made_in_a_turn_equal_those_made_one_by_one(tmp_path: Path) -> None:
    def write(t: Transcript) -> None:
        t.set_tools([TOOL])
        t.system("sys")
        t.user("question")
        t.assistant("", tool_calls=[CALL])
        t.tool_result(CALL.id, CALL.name, "found", metadata={"n": 1})

    with (
        Store.open(tmp_path / "a.db", clock=FakeClock()) as a,
        Store.open(tmp_path / "b.db", clock=FakeClock()) as b,
    ):
        one_by_one = Transcript(a, "s")
        write(one_by_one)
        batched = Transcript(b, "s")
        with batched.turn():
            write(batched)
        assert Transcript(b, "s").log() == one_by_one.log()
        assert Transcript(b, "s").compile() == one_by_one.compile()


def tool_message(call: int, text: str) -> Message:
    return Message("tool", text, tool_call_id=f"c{call}", name="lookup")


messages = st.lists(
    st.one_of(
        st.builds(Message, st.just("user"), st.text(max_size=20)),
        st.builds(Message, st.just("assistant"), st.text(max_size=20)),
        st.builds(tool_message, st.integers(0, 3), st.text(max_size=20)),
    ),
    max_size=8,
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(before=messages, inside=messages, edit_last=st.booleans())
def test_property_a_turn_stores_what_plain_commits_would(
    tmp_path: Path, before: list[Message], inside: list[Message], edit_last: bool
) -> None:
    with (
        Store.open("sqlite://", clock=FakeClock()) as plain_store,
        Store.open("sqlite://", clock=FakeClock()) as turn_store,
    ):
        plain = Transcript(plain_store, "s")
        batched = Transcript(turn_store, "s")
        for m in before:
            plain.commit(m)
            batched.commit(m)
        with batched.turn():
            for m in inside:
                plain.commit(m)
                batched.commit(m)
            if edit_last and (before or inside):
                last = plain.log()[-1]
                edited = Message(
                    last.role, "edited", tool_call_id=last.content.tool_call_id, name=last.content.name
                )
                plain.commit(edited, operation=CommitOperation.EDIT, edit_target=last.hash)
                batched.commit(edited, operation=CommitOperation.EDIT, edit_target=last.hash)
            assert batched.compile() == plain.compile()
        reread = Transcript(turn_store, "s")
        assert reread.log() == plain.log()
        assert reread.compile() == plain.compile() == batched.compile()


def test_an_error_inside_the_turn_stores_none_of_it(store: Store) -> None:
    t = Transcript(store, "s")
    question = t.user("question")
    staged: list[CommitInfo] = []
    with pytest.raises(RuntimeError, match="tool crashed") as failure:
        with t.turn() as turn:
            staged.append(t.assistant("", tool_calls=[CALL]))
            raise RuntimeError("tool crashed")
    [reply] = staged
    assert not turn.stored
    assert any(reply.hash[:12] in note and "not stored" in note for note in failure.value.__notes__)
    assert t.log() == [question] and t.head == question.hash
    assert t.compile().commit_hashes == (question.hash,)
    again = t.assistant("answer")  # the chain continues from what is stored
    assert again.parent == question.hash


def test_a_failure_while_storing_the_turn_leaves_no_partial_turn(store: Store) -> None:
    t = Transcript(store, "s")
    t.user("question")
    # A real database failure on the second row of the turn: the first was already inserted.
    with store.write() as conn:
        conn.exec_driver_sql(
            "CREATE TRIGGER refuse_tool BEFORE INSERT ON commits WHEN NEW.role = 'tool' "
            "BEGIN SELECT RAISE(ABORT, 'disk is full'); END"
        )
    with pytest.raises(StoreError, match="disk is full"):
        with t.turn():
            t.assistant("", tool_calls=[CALL])
            t.tool_result(CALL.id, CALL.name, "found")
    assert [c.role for c in Transcript(store, "s").log()] == ["user"]
    assert stored_rows(store, "commit_tools") == 0
    assert [m.role for m in t.compile().messages] == ["user"]


def test_a_process_dying_inside_a_turn_stores_nothing_of_it(tmp_path: Path) -> None:
    db = tmp_path / "crash.db"
    code = textwrap.dedent(
        f"""
        import os
        from weakprompt.messages import ToolCall
        from weakprompt.store import Store
        from weakprompt.transcript import Transcript
        store = Store.open({str(db)!r})
        t = Transcript(store, "s")
        t.user("question")
        call = ToolCall("call_1", "lookup", "{{}}")
        with t.turn():
            t.assistant("", tool_calls=[call])
            t.tool_result(call.id, call.name, "first of two")
            os._exit(3)  # killed before the second result
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 3, done.stderr
    with Store.open(db) as store:
        assert [c.role for c in Transcript(store, "s").log()] == ["user"]


def test_a_turn_moves_after_commits_another_writer_made_meanwhile(store: Store) -> None:
    t = Transcript(store, "s")
    other = Transcript(store, "s")
    base = t.user("question")
    with t.turn() as turn:
        reply = t.assistant("", tool_calls=[CALL])
        result = t.tool_result(CALL.id, CALL.name, "found")
        fix = t.tool_result(CALL.id, CALL.name, "found (edited)", edit=result.hash)
        interjection = other.user("also this")
    assert turn.stored and turn.moved
    log = t.log()
    assert [c.hash for c in log[:2]] == [base.hash, interjection.hash]
    assert chain_is_unbroken(log)
    stored_reply, stored_result, stored_fix = log[2:]
    assert stored_reply.parent == interjection.hash and stored_reply.hash != reply.hash
    assert stored_fix.edit_target == stored_result.hash  # the edit follows its target's new hash
    assert turn.commits == (stored_reply, stored_result, stored_fix)
    assert (stored_reply.content, stored_fix.content) == (reply.content, fix.content)
    assert t.compile().commit_hashes == (base.hash, interjection.hash, stored_reply.hash, stored_fix.hash)
    assert other.compile() == t.compile()


def test_edits_inside_a_turn_are_checked_against_staged_and_stored_commits(store: Store) -> None:
    t = Transcript(store, "s")
    system = t.system("old")
    with t.turn():
        new_system = t.system("new", edit=system.hash)
        reply = t.assistant("draft")
        again = t.assistant("final", edit=reply.hash)
        once_more = t.assistant("final!", edit=again.hash)  # an edit of an edit lands on the original
        assert (new_system.edit_target, again.edit_target, once_more.edit_target) == (
            system.hash,
            reply.hash,
            reply.hash,
        )
        with pytest.raises(TranscriptError, match="must keep the role"):
            t.user("no", edit=reply.hash)
        with pytest.raises(TranscriptError, match="no such commit"):
            t.user("no", edit="0" * 64)
    assert [m.content for m in Transcript(store, "s").compile().messages] == ["new", "final!"]


def test_a_turn_inside_a_turn_joins_it(store: Store) -> None:
    t = Transcript(store, "s")
    with t.turn() as outer:
        t.user("one")
        with t.turn() as inner:
            t.user("two")
        assert inner is outer and not inner.stored
        assert stored_rows(store) == 0
    assert outer.stored and [c.content.content for c in outer.commits] == ["one", "two"]
    assert stored_rows(store) == 2


def test_an_empty_turn_writes_nothing(store: Store) -> None:
    t = Transcript(store, "s")
    with t.turn() as turn:
        pass
    assert turn.stored and turn.commits == () and turn.head is None
    assert stored_rows(store) == 0


def test_tool_sets_first_linked_inside_a_turn_are_stored_with_it(store: Store) -> None:
    t = Transcript(store, "s")
    t.set_tools([TOOL, OTHER])
    with t.turn():
        first = t.user("a")
        second = t.user("b", tools=[OTHER])
        t.user("c", tools=None)
    reread = Transcript(store, "s")
    assert reread.get_commit_tools(first.hash) == [TOOL, OTHER]
    assert reread.get_commit_tools(second.hash) == [OTHER]
    assert stored_rows(store, "tool_sets") == 2 and stored_rows(store, "commit_tools") == 2
    assert reread.compile().tools == (OTHER,)


def test_refresh_false_trusts_this_objects_own_last_write(store: Store) -> None:
    t = Transcript(store, "s")
    other = Transcript(store, "s")
    mine = t.user("mine")
    theirs = other.user("theirs")  # lands in the gap between t's write and its next turn
    with t.turn(refresh=False) as turn:
        assert t.compile().commit_hashes == (mine.hash,)  # not read again: the gap is not seen
        t.assistant("reply")
    assert turn.moved  # ...and the turn is stored after the other writer's commit
    assert [c.content.content for c in t.log()] == ["mine", "theirs", "reply"]
    assert t.compile().commit_hashes[:2] == (mine.hash, theirs.hash)
    with t.turn(refresh=True):
        assert [m.content for m in t.compile().messages] == ["mine", "theirs", "reply"]


def test_refresh_false_still_reads_when_this_object_has_not_written(store: Store) -> None:
    first = Transcript(store, "s").user("stored before")
    t = Transcript(store, "s")
    with t.turn(refresh=False) as turn:
        assert t.compile().commit_hashes == (first.hash,)
        t.assistant("reply")
    assert not turn.moved and turn.commits[0].parent == first.hash
    # after a turn that had to move, the view is rebuilt: the next turn reads again
    other = Transcript(store, "s")
    with t.turn(refresh=False):
        t.user("a")
        other.user("b")
    with t.turn(refresh=False):
        assert [m.content for m in t.compile().messages] == ["stored before", "reply", "b", "a"]
