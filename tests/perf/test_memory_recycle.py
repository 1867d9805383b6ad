"""A closed private in-memory store's database is emptied and reused: nothing of the old store survives.

Reusing a database saves the next store SQLite's schema parse and its
statement compiles, but only if the next store cannot tell: every table
but the schema versions starts empty, the schema row carries the new
store's clock, and the old store's engine can no longer reach it. A
database that is not plainly private, small and unchanged is closed.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
import sqlalchemy as sa
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy.exc import DBAPIError

from loop_support import arithmetic_prompt
from weakprompt.adapters.testing import ScriptedAdapter, text_turn, tool_call, tool_call_turn
from weakprompt.clock import FakeClock
from weakprompt.errors import StoreError
from weakprompt.messages import AssistantTurn
from weakprompt.runtime import evaluate
from weakprompt.session import Session
from weakprompt.store import Store, memory_template, tables
from weakprompt.transcript import Transcript


@pytest.fixture(autouse=True)
def no_idle() -> Iterator[None]:
    """Each test starts (and leaves) with no database waiting, so it sees only its own."""
    Store.open().close()  # the template exists
    memory_template._idle[os.getpid()].clear()  # pyright: ignore[reportPrivateUsage]
    yield
    memory_template._idle[os.getpid()].clear()  # pyright: ignore[reportPrivateUsage]


def _idle() -> int:
    return len(memory_template._idle[os.getpid()])  # pyright: ignore[reportPrivateUsage]


def _row_counts(store: Store) -> dict[str, int]:
    with store.read() as conn:
        return {
            table.name: int(conn.execute(sa.select(sa.func.count()).select_from(table)).scalar_one())
            for table in tables.metadata.sorted_tables
        }


def _fill(store: Store, sums: list[tuple[int, int]], text: str) -> None:
    """An evaluation on ``store``: commits, tool definitions and stored tool outputs."""
    replies: list[AssistantTurn] = [
        tool_call_turn(tool_call("add", {"a": a, "b": b}, id=f"c{i}")) for i, (a, b) in enumerate(sums)
    ]
    replies.append(text_turn(text))
    session = Session(session_id="filled")
    evaluate(arithmetic_prompt(), adapter=ScriptedAdapter(replies), session=session, store=store)


@settings(max_examples=25, deadline=None)
@given(
    runs=st.lists(
        st.tuples(
            st.lists(st.tuples(st.integers(-99, 99), st.integers(-99, 99)), max_size=4),
            st.text(min_size=1, max_size=40),
        ),
        min_size=1,
        max_size=4,
    )
)
def test_a_reused_database_starts_empty(runs: list[tuple[list[tuple[int, int]], str]]) -> None:
    for sums, text in runs:
        store = Store.open()
        counts = _row_counts(store)
        assert counts.pop(tables.schema_versions.name) > 0
        assert counts.pop(tables.store_identity.name) == 1  # a new id of its own (test_approval_tokens)
        assert set(counts.values()) == {0}, counts  # whatever the previous store held is gone
        _fill(store, sums, text)
        assert _row_counts(store)[tables.commits.name] > 0
        store.close()
        assert _idle() == 1  # kept, and the next store takes it


def test_the_schema_row_carries_the_new_stores_clock() -> None:
    Store.open(clock=FakeClock(datetime(2020, 1, 1, tzinfo=UTC))).close()
    later = datetime(2030, 6, 1, tzinfo=UTC)
    store = Store.open(clock=FakeClock(later))
    with store.read() as conn:
        stamps = conn.execute(sa.select(tables.schema_versions.c.applied_at)).scalars().all()
    assert _idle() == 0
    assert stamps and all(datetime.fromisoformat(str(s)) == later for s in stamps)
    store.close()


def test_the_old_engine_cannot_reach_a_database_it_gave_back() -> None:
    store = Store.open()
    Transcript(store, "old").user("private words")
    engine = store.engine
    store.close()
    newer = Store.open()  # holds the old store's database now
    with pytest.raises(DBAPIError, match="was closed"):
        with engine.connect() as conn:
            conn.execute(sa.text("SELECT 1"))
    assert _row_counts(newer)[tables.commits.name] == 0
    with pytest.raises(StoreError, match="closed"):
        Transcript(store, "old").user("more")
    newer.close()


def test_a_store_closed_while_its_connection_is_out_is_not_kept() -> None:
    store = Store.open()
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with store.hold_connection():
            store.session_ids()
            held.set()
            release.wait(5)

    worker = threading.Thread(target=hold)
    worker.start()
    held.wait(5)
    store.close()
    release.set()
    worker.join()
    assert _idle() == 0


def test_a_changed_schema_is_not_kept() -> None:
    store = Store.open()
    with store.write() as conn:
        conn.execute(sa.text("CREATE TABLE scratch (x INTEGER)"))
    store.close()
    assert _idle() == 0


def test_a_large_database_is_not_kept() -> None:
    store = Store.open()
    Transcript(store, "big").user("x" * (memory_template.IDLE_PAGES * 4096))
    store.close()
    assert _idle() == 0


def test_no_more_than_the_limit_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memory_template, "IDLE_LIMIT", 2)
    stores = [Store.open() for _ in range(3)]
    for store in stores:
        store.session_ids()  # connected: a store that never connected has no database to give back
    for store in stores:
        store.close()
    assert _idle() == 2


def test_an_uncommitted_transaction_is_rolled_back_before_reuse() -> None:
    store = Store.open()
    engine = store.engine
    raw = engine.raw_connection()
    driver = raw.driver_connection
    assert driver is not None
    driver.execute("INSERT INTO blobs (hash, content, size_bytes, created_at) VALUES ('h', '1', 1, 'now')")
    raw.close()  # back to the pool; SQLAlchemy's reset rolls it back
    store.close()
    assert _row_counts(Store.open())[tables.blobs.name] == 0


def test_a_database_that_cannot_be_emptied_is_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(database: object, schema_version: object) -> bool:
        raise memory_template.sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(memory_template, "_empty", broken)
    store = Store.open()
    store.close()
    assert _idle() == 0


def test_a_file_store_is_never_kept(tmp_path: object) -> None:
    store = Store.open(f"{tmp_path}/t.db")
    store.close()
    assert _idle() == 0


def test_a_deferred_store_gives_back_the_database_it_built() -> None:
    """The loop's default store builds its database only when something reads it; then it goes back."""
    store = Store.open(deferred=True)
    Transcript(store, "s").user("hello")  # written at once: the database is built
    store.close()
    assert _idle() == 1
    unused = Store.open(deferred=True)
    unused.close()
    assert _idle() == 1  # it built none, and gave none back


def test_a_store_closed_while_another_thread_writes_keeps_that_transaction_whole() -> None:
    store = Store.open()
    transcript = Transcript(store, "busy")
    writing, go_on = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def write() -> None:
        try:
            with transcript.turn():
                transcript.user("one")
                writing.set()
                go_on.wait(5)
                transcript.user("two")
        except BaseException as exc:  # the store closed under it: a clear error is all it may get
            errors.append(exc)

    worker = threading.Thread(target=write)
    worker.start()
    writing.wait(5)
    closer = threading.Thread(target=store.close)
    closer.start()
    go_on.set()
    worker.join(5)
    closer.join(5)
    assert store.closed
    # Whether the turn was stored before the close or refused after it, no half of it reached a
    # database that a next store now uses.
    assert all(isinstance(e, StoreError) for e in errors)
    for _ in range(_idle()):
        assert _row_counts(Store.open())[tables.commits.name] == 0


def test_an_engine_it_did_not_make_is_never_taken() -> None:
    foreign = sa.create_engine("sqlite://")
    with foreign.connect() as conn:
        conn.execute(sa.text("SELECT 1"))
    assert memory_template.recycle_memory_engine(foreign) is False
    foreign.dispose()
    assert _idle() == 0
