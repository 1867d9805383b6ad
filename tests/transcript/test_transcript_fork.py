"""Forks in the store: a session sharing another's chain up to a commit, with no copy of it."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import func, select

from weakprompt import Store, Transcript
from weakprompt.clock import FakeClock
from weakprompt.errors import TranscriptError
from weakprompt.messages import Message
from weakprompt.store import LATEST_VERSION, MIGRATIONS, tables
from weakprompt.store.engine import build_engine, normalize_url
from weakprompt.store.migrations import migrate
from weakprompt.transcript import fork_session

TOOL = {"name": "look", "description": "Look.", "parameters": {"type": "object", "properties": {}}}


def _history(transcript: Transcript) -> list[str]:
    transcript.set_tools([TOOL])
    hashes = [transcript.system("You help.").hash, transcript.user("one").hash]
    hashes.append(transcript.assistant("first").hash)
    hashes.append(transcript.user("two").hash)
    hashes.append(transcript.assistant("second").hash)
    return hashes


def _count(store: Store, table: object) -> int:
    with store.read() as conn:
        return int(conn.execute(select(func.count()).select_from(table)).scalar_one())  # type: ignore[arg-type]


def test_a_fork_shares_the_history_up_to_its_commit_without_copying_it() -> None:
    with Store.open() as store:
        parent = Transcript(store, "p")
        hashes = _history(parent)
        commits = _count(store, tables.commits)
        forked = parent.fork(hashes[2], new_session="f")
        assert _count(store, tables.commits) == commits  # nothing copied
        assert [c.hash for c in forked.log()] == hashes[:3]
        assert forked.head == hashes[2]
        assert forked.compile().messages == parent.compile().messages[:3]
        assert forked.compile().tools == parent.compile().tools
        assert forked.get(hashes[1]).text == "one"
        assert forked.get_commit_tools(hashes[2])[0]["name"] == "look"
        assert "f" in store.session_ids()
        added = forked.user("another two")
        assert added.parent == hashes[2] and added.seq == 3
        assert [m.content for m in forked.compile().messages][-2:] == ["first", "another two"]
        assert [m.content for m in parent.compile().messages][-1] == "second"  # the parent is unchanged
        with pytest.raises(TranscriptError, match="no commit"):
            forked.get(hashes[4])  # after the fork point: not in the fork's chain
        reader = Transcript(store, "f")
        assert len(reader.compile().messages) == 4
        forked.assistant("another first")  # read on from past the shared part: only the fork's own
        assert [m.content for m in reader.compile().messages][-2:] == ["another two", "another first"]
        assert reader.compile().tools == parent.compile().tools


def test_a_fork_may_edit_a_shared_commit_in_its_own_chain_only() -> None:
    with Store.open() as store:
        parent = Transcript(store, "p")
        hashes = _history(parent)
        forked = parent.fork(hashes[3], new_session="f")
        forked.user("ONE", edit=hashes[1])
        assert [m.content for m in forked.compile().messages][1] == "ONE"
        assert [m.content for m in parent.compile().messages][1] == "one"
        with forked.turn():  # an edit staged in a turn is checked the same way
            forked.system("You help more.", edit=hashes[0])
        assert forked.compile().messages[0].content == "You help more."
        other = Transcript(store, "other")
        other.user("elsewhere")
        with pytest.raises(TranscriptError, match="belongs to session"):
            other.user("x", edit=hashes[1])


def test_a_fork_of_a_fork_reads_through_each_level() -> None:
    with Store.open() as store:
        parent = Transcript(store, "p")
        hashes = _history(parent)
        child = parent.fork(hashes[3], new_session="c")
        own = child.assistant("child reply").hash
        grandchild = fork_session(store, "c", at=hashes[1], new_session="g")
        assert [c.hash for c in Transcript(store, grandchild).log()] == hashes[:2]
        deeper = fork_session(store, "c", at=own, new_session="d")
        assert [c.hash for c in Transcript(store, deeper).log()] == [*hashes[:4], own]
        assert Transcript(store, deeper).compile().tools == parent.compile().tools


def test_bad_forks_are_refused_and_leave_the_store_unchanged(tmp_path: Path) -> None:
    with Store.open(tmp_path / "s.db") as store:
        parent = Transcript(store, "p")
        hashes = _history(parent)
        other = Transcript(store, "o")
        foreign = other.user("not p's").hash
        child = parent.fork(hashes[2], new_session="c")
        later = child.user("child's").hash
        before = (_count(store, tables.commits), _count(store, tables.forks))
        cases: list[tuple[str, str, str | None, str]] = [
            ("nobody", hashes[0], None, "has no commits"),
            ("p", foreign, None, "not in the chain of session 'p'"),
            ("p", "0" * 64, None, "not in the chain"),
            ("c", hashes[4], None, "not in the chain of session 'c'"),  # after the fork point
            ("p", later, None, "not in the chain"),  # the child's, not the parent's
            ("p", hashes[1], "o", "already exists"),
            ("p", hashes[1], "c", "already exists"),
            ("p", hashes[1], "p", "already exists"),
            ("p", hashes[1], "", "non-empty string"),
            ("p", hashes[1], "x\x00", "cannot be stored"),
            ("p", "", None, "commit hash"),
        ]
        for session, at, target, message in cases:
            with pytest.raises(TranscriptError, match=message):
                fork_session(store, session, at=at, new_session=target)
        assert (_count(store, tables.commits), _count(store, tables.forks)) == before
        with pytest.raises(TranscriptError, match="nothing to fork"):
            Transcript(store, "empty").fork()


def test_an_older_store_gains_the_forks_table(tmp_path: Path) -> None:
    step = next(m for m in MIGRATIONS if "forks" in m.description)
    path = tmp_path / "old.db"
    engine = build_engine(normalize_url(path))
    try:
        with engine.begin() as conn:
            before = MIGRATIONS[: MIGRATIONS.index(step)]
            assert migrate(conn, FakeClock(), migrations=before) == (0, step.version - 1)
    finally:
        engine.dispose()
    with Store.open(path) as store:
        assert store.schema_version == LATEST_VERSION
        hashes = _history(Transcript(store, "p"))
        assert Transcript(store, "p").fork(hashes[1], new_session="f").head == hashes[1]


def test_forks_read_and_write_alike_on_sqlite_and_postgresql(backend_url: str) -> None:
    with Store.open(backend_url) as store:
        parent = Transcript(store, "p")
        hashes = _history(parent)
        forked = fork_session(store, "p", at=hashes[2], new_session="f")
        Transcript(store, forked).user("another two", edit=None)
        deeper = Transcript(store, forked).fork(new_session="g")
        deeper.assistant("deeper")
        assert [m.content for m in deeper.compile().messages] == [
            "You help.",
            "one",
            "first",
            "another two",
            "deeper",
        ]
        assert deeper.compile().tools == parent.compile().tools
        assert len(parent.compile().messages) == 5
        with pytest.raises(TranscriptError, match="already exists"):
            fork_session(store, "p", at=hashes[0], new_session="g")
        assert {"p", "f", "g"} <= set(store.session_ids())


# -- the property: a fork's history is the parent's at the fork commit, and the two never touch ------

_WORDS = st.text(alphabet="abcxyz", min_size=1, max_size=4)
_OP = st.tuples(st.sampled_from(["user", "assistant", "edit"]), _WORDS, st.integers(0, 50))


def _apply(transcript: Transcript, ops: list[tuple[str, str, int]], written: list[str]) -> None:
    """Apply ops: append a message, or edit an earlier user message (chosen by index), noting hashes."""
    for kind, text, pick in ops:
        if kind == "edit":
            users = [h for h in written if transcript.get(h).content.role == "user"]
            if not users:
                continue
            written.append(transcript.user(text, edit=users[pick % len(users)]).hash)
        elif kind == "user":
            written.append(transcript.user(text).hash)
        else:
            written.append(transcript.assistant(text).hash)


def _messages(transcript: Transcript) -> tuple[Message, ...]:
    return transcript.compile().messages


@settings(max_examples=40, deadline=None)
@given(
    history=st.lists(_OP, min_size=1, max_size=12),
    at=st.integers(0, 100),
    parent_more=st.lists(_OP, max_size=5),
    fork_more=st.lists(_OP, max_size=5),
)
def test_a_forks_history_is_its_parents_at_the_fork_and_writes_never_cross(
    history: list[tuple[str, str, int]],
    at: int,
    parent_more: list[tuple[str, str, int]],
    fork_more: list[tuple[str, str, int]],
) -> None:
    with Store.open() as store:
        parent = Transcript(store, "p")
        written: list[str] = [parent.system("S").hash]
        _apply(parent, history, written)
        point = written[at % len(written)]
        upto = written[: written.index(point) + 1]
        # the reference: the same commits, written in a session of their own up to the fork point
        reference = Transcript(store, "ref")
        for commit in upto:
            info = parent.get(commit)
            target = info.edit_target
            edit = None if target is None else upto.index(target)
            ref_log = [c.hash for c in reference.log()]
            reference.commit(
                info.content, operation=info.operation, edit_target=None if edit is None else ref_log[edit]
            )
        expected = _messages(reference)
        parent_before = _messages(parent)
        forked = parent.fork(point, new_session="f")
        assert _messages(forked) == expected
        _apply(parent, parent_more, list(written))
        assert _messages(Transcript(store, "f")) == expected  # the parent's writes never reach the fork
        parent_after = _messages(parent)
        _apply(forked, fork_more, list(upto))
        assert _messages(Transcript(store, "p")) == parent_after  # nor the fork's the parent
        assert _messages(forked)[: len(expected)] == expected or any(k == "edit" for k, _, _ in fork_more)
        assert parent_after[: len(parent_before)] == parent_before or any(
            k == "edit" for k, _, _ in parent_more
        )
