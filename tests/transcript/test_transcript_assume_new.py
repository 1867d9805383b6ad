"""``Transcript(..., assume_new=True)``: a new session's first writes read nothing, and store the same.

The evaluation loop opens its default store for one run, so its session
is known to be empty and nothing else writes it: asking the database for
the head before the first turn, and again inside its transaction, finds
nothing every time. With the promise, those reads are skipped; what is
stored must not change, and a promise that does not hold must fail loudly
instead of forking the chain.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import Connection

from weakprompt.clock import FakeClock
from weakprompt.errors import StoreError, TranscriptError
from weakprompt.store import Store
from weakprompt.store.commit_rows import session_head
from weakprompt.transcript import Transcript, chain_writer
from weakprompt.transcript import transcript as transcript_module

# One step of a session: a message written at once, or a turn of several staged together.
Step = tuple[str, tuple[str, ...]]
steps = st.lists(
    st.tuples(
        st.sampled_from(["now", "turn"]), st.lists(st.text(min_size=1, max_size=8), min_size=1, max_size=3)
    ),
    min_size=1,
    max_size=5,
)


def _replay(transcript: Transcript, script: list[tuple[str, list[str]]]) -> None:
    for kind, texts in script:
        if kind == "now":
            for text in texts:
                transcript.user(text)
        else:
            with transcript.turn(refresh=False):
                for text in texts:
                    transcript.user(text)


def _stored(store: Store, session_id: str) -> list[tuple[str, str | None, int]]:
    return [(c.hash, c.parent, c.seq) for c in Transcript(store, session_id).log()]


@settings(max_examples=30, deadline=None)
@given(script=steps)
def test_a_promised_new_session_stores_exactly_what_a_checked_one_does(
    script: list[tuple[str, list[str]]],
) -> None:
    with Store.open(clock=FakeClock()) as checked, Store.open(clock=FakeClock()) as promised:
        _replay(Transcript(checked, "s"), script)
        _replay(Transcript(promised, "s", assume_new=True), script)
        assert _stored(promised, "s") == _stored(checked, "s")


@pytest.fixture
def head_reads(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every read of a session head, by the writer or by a transcript's view."""
    seen: list[str] = []

    def counted(conn: Connection, session_id: str) -> tuple[str, int] | None:
        seen.append(session_id)
        return session_head(conn, session_id)

    for module in (chain_writer, transcript_module):
        monkeypatch.setattr(module, "session_head", counted)
    yield seen


def test_the_first_turn_and_write_read_no_head(head_reads: list[str]) -> None:
    with Store.open() as store:
        transcript = Transcript(store, "s", assume_new=True)
        with transcript.turn(refresh=False):
            transcript.system("rules")
            transcript.user("hello")
        assert head_reads == []
        Transcript(store, "plain").user("hi")
        assert head_reads  # without the promise, the writer asks


def test_refresh_true_still_reads(head_reads: list[str]) -> None:
    with Store.open() as store:
        transcript = Transcript(store, "s", assume_new=True)
        with transcript.turn():
            transcript.user("hello")
        assert head_reads == ["s"]


@pytest.mark.parametrize("first", ["now", "turn"])
def test_a_broken_promise_fails_and_keeps_what_was_stored(first: str) -> None:
    with Store.open() as store:
        Transcript(store, "s").user("already here")
        before = _stored(store, "s")
        promised = Transcript(store, "s", assume_new=True)
        with pytest.raises((StoreError, TranscriptError)):
            if first == "now":
                promised.user("second")
            else:
                with promised.turn(refresh=False):
                    promised.user("second")
        assert _stored(store, "s") == before
