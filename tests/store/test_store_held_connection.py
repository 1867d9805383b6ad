"""Store.hold_connection(): one thread's transactions on one connection, each still its own transaction."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest
from sqlalchemy import event, text

import weakprompt.store.engine as engine_module
from weakprompt.errors import StoreError
from weakprompt.store import Store

# `store` (a temporary SQLite file) comes from the weakprompt.testing pytest plugin.


def checkouts(store: Store) -> list[int]:
    """A counter of connections checked out of the pool from now on."""
    count = [0]

    def on_checkout(*_: object) -> None:
        count[0] += 1

    event.listen(store.engine, "checkout", on_checkout)
    return count


def begins(store: Store) -> list[str]:
    """The BEGIN statements SQLite sees, in order (traced on every pooled connection)."""
    seen: list[str] = []

    def on_connect(dbapi_connection: object, _record: object) -> None:
        dbapi_connection.set_trace_callback(  # type: ignore[attr-defined]
            lambda sql: seen.append(sql) if sql.startswith("BEGIN") else None
        )

    store.engine.dispose()  # fresh connections, so each gets the trace
    event.listen(store.engine, "connect", on_connect)
    return seen


def rows(store: Store) -> int:
    with store.read() as conn:
        value = conn.execute(text("SELECT count(*) FROM blobs")).scalar()
    assert isinstance(value, int)
    return value


INSERT = text("INSERT INTO blobs (hash, content, size_bytes, created_at) VALUES (:h, 'x', 1, 't')")


def put(store: Store, n: int) -> None:
    with store.write() as conn:
        conn.execute(INSERT, {"h": f"h{n}"})


def test_transactions_in_the_block_share_one_checkout(store: Store) -> None:
    count = checkouts(store)
    with store.hold_connection():
        for n in range(5):
            put(store, n)
            assert rows(store) == n + 1
    assert count == [1]
    put(store, 99)
    rows(store)
    assert count == [3]  # outside the block: one per transaction again


def test_reads_and_writes_alternate_with_the_right_begin(store: Store) -> None:
    seen = begins(store)
    with store.hold_connection():
        rows(store)
        put(store, 1)
        rows(store)
        put(store, 2)
    assert seen == ["BEGIN", "BEGIN IMMEDIATE", "BEGIN", "BEGIN IMMEDIATE"]


def test_a_transaction_inside_a_transaction_gets_its_own_connection(store: Store) -> None:
    count = checkouts(store)
    with store.hold_connection(), store.write() as outer:
        outer.execute(INSERT, {"h": "a"})
        assert rows(store) == 0  # another connection: the outer write is not committed yet
    assert count == [2]
    assert rows(store) == 1


def test_a_failed_transaction_rolls_back_and_the_held_connection_goes_on(store: Store) -> None:
    with store.hold_connection():
        put(store, 1)
        with pytest.raises(StoreError, match="UNIQUE"):
            with store.write() as conn:
                conn.execute(INSERT, {"h": "new"})
                conn.execute(INSERT, {"h": "h1"})  # already stored
        with pytest.raises(RuntimeError):
            with store.write() as conn:
                conn.execute(INSERT, {"h": "gone"})
                raise RuntimeError("caller failed")
        assert rows(store) == 1
        put(store, 2)
    assert rows(store) == 2


def test_a_locked_database_fails_cleanly_and_the_next_transaction_works(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(engine_module, "BUSY_TIMEOUT_SECONDS", 0.1)
    with Store.open(tmp_path / "locked.db") as store, store.hold_connection():
        put(store, 0)
        other = sqlite3.connect(tmp_path / "locked.db", isolation_level=None)
        other.execute("BEGIN IMMEDIATE")  # another process holds the write lock
        with pytest.raises(StoreError, match="locked"):
            put(store, 1)
        other.execute("ROLLBACK")
        other.close()
        put(store, 2)
        assert rows(store) == 2


def test_other_threads_are_not_affected(store: Store) -> None:
    count = checkouts(store)
    results: list[int] = []
    with store.hold_connection():
        put(store, 1)
        worker = threading.Thread(target=lambda: results.append(rows(store)))
        worker.start()
        worker.join()
        put(store, 2)
    assert results == [1]
    assert count == [2]  # the held one, and one for the other thread


def test_a_block_inside_a_block_joins_it(store: Store) -> None:
    count = checkouts(store)
    with store.hold_connection():
        put(store, 1)
        with store.hold_connection():
            put(store, 2)
        put(store, 3)
    assert count == [1]
    assert rows(store) == 3
