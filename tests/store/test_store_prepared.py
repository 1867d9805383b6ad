"""Prepared statements: same SQL, same transaction, same errors as Connection.execute."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import bindparam, select
from sqlalchemy.exc import IntegrityError, OperationalError

from weakprompt.errors import StoreError
from weakprompt.store import Store, tables
from weakprompt.store.prepared import PreparedInsertIgnore, PreparedStatement

BLOB_COLUMNS = ("hash", "content", "size_bytes", "created_at")
INSERT_BLOB = PreparedStatement(tables.blobs.insert(), columns=BLOB_COLUMNS)
PUT_BLOB = PreparedInsertIgnore(tables.blobs, BLOB_COLUMNS)
BLOB_BY_HASH = PreparedStatement(
    select(tables.blobs.c.content).where(tables.blobs.c.hash == bindparam("hash"))
)
ALL_HASHES = PreparedStatement(select(tables.blobs.c.hash).order_by(tables.blobs.c.hash))


def blob(h: str, content: str = "x") -> dict[str, object]:
    return {
        "hash": h,
        "content": content,
        "size_bytes": len(content),
        "created_at": "2026-01-01T00:00:00+00:00",
    }


# `store` (a temporary SQLite file) comes from the weakprompt.testing pytest plugin.


def test_rows_written_and_read_inside_the_stores_transaction(store: Store) -> None:
    with store.write() as conn:
        INSERT_BLOB.executemany(conn, [blob("b"), blob("a", "yy")])
        assert BLOB_BY_HASH.first(conn, {"hash": "a"}) == ("yy",)  # the same transaction sees them
    with store.read() as conn:
        assert ALL_HASHES.all(conn, {}) == [("a",), ("b",)]
        assert BLOB_BY_HASH.first(conn, {"hash": "zz"}) is None
    with pytest.raises(RuntimeError), store.write() as conn:
        INSERT_BLOB.executemany(conn, [blob("c")])
        raise RuntimeError("rolled back")
    with store.read() as conn:
        assert [r[0] for r in ALL_HASHES.all(conn, {})] == ["a", "b"]


def test_driver_errors_surface_as_sqlalchemy_errors_and_store_errors(store: Store) -> None:
    with store.write() as conn:
        INSERT_BLOB.executemany(conn, [blob("a")])
    with pytest.raises(StoreError, match="UNIQUE") as failure, store.write() as conn:
        INSERT_BLOB.executemany(conn, [blob("a")])
    assert isinstance(failure.value.__cause__, IntegrityError)
    missing = PreparedStatement(select(tables.commits.c.hash).where(tables.commits.c.seq == bindparam("seq")))
    with store.write() as conn:
        conn.exec_driver_sql("DROP TABLE commit_tools")
        conn.exec_driver_sql("DROP TABLE commits")
        with pytest.raises(OperationalError, match="no such table"):
            missing.all(conn, {"seq": 1})


def test_errors_that_are_not_the_drivers_pass_through(store: Store) -> None:
    with store.read() as conn, pytest.raises(KeyError, match="hash"):
        BLOB_BY_HASH.all(conn, {"not_hash": "a"})


def test_a_lone_surrogate_bound_to_plain_text_is_a_store_error_naming_it(store: Store) -> None:
    with pytest.raises(StoreError, match=r"lone surrogate \('\\ud800' at index 1\)"), store.write() as conn:
        INSERT_BLOB.executemany(conn, [blob("a\ud800")])
    with store.read() as conn, pytest.raises(StoreError, match="lone surrogate"):
        BLOB_BY_HASH.all(conn, {"hash": "\udc80"})
    with store.read() as conn:
        assert ALL_HASHES.all(conn, {}) == []


def test_insert_ignore_skips_stored_keys(store: Store) -> None:
    with store.write() as conn:
        PUT_BLOB.executemany(conn, [blob("b", "first")])
        PUT_BLOB.executemany(conn, [blob("c"), blob("b", "second"), blob("a")])
        PUT_BLOB.executemany(conn, [])
    with store.read() as conn:
        assert ALL_HASHES.all(conn, {}) == [("a",), ("b",), ("c",)]
        assert BLOB_BY_HASH.first(conn, {"hash": "b"}) == ("first",)


def test_insert_ignore_falls_back_to_look_then_insert_elsewhere(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Databases without ON CONFLICT take the portable path (seen here by renaming the dialect).
    monkeypatch.setattr(store.engine.dialect, "name", "otherdb")
    with store.write() as conn:
        PUT_BLOB.executemany(conn, [blob("a", "first")])
        PUT_BLOB.executemany(conn, [blob("a", "second"), blob("b")])
    monkeypatch.undo()
    with store.read() as conn:
        assert ALL_HASHES.all(conn, {}) == [("a",), ("b",)]
        assert BLOB_BY_HASH.first(conn, {"hash": "a"}) == ("first",)


def test_statements_are_compiled_per_dialect_and_shared_by_stores(tmp_path: Path) -> None:
    with Store.open(tmp_path / "one.db") as one, Store.open(tmp_path / "two.db") as two:
        for target, h in ((one, "x"), (two, "y"), (one, "z")):
            with target.write() as conn:
                INSERT_BLOB.executemany(conn, [blob(h)])
        with one.read() as conn:
            assert ALL_HASHES.all(conn, {}) == [("x",), ("z",)]
        with two.read() as conn:
            assert ALL_HASHES.all(conn, {}) == [("y",)]


def test_one_driver_cursor_serves_every_statement_of_a_connection_even_after_an_error() -> None:
    with Store.open() as store:
        with store.write() as conn:
            driver = conn.connection.driver_connection
            assert driver is not None
            INSERT_BLOB.executemany(conn, [blob("a")])
            cursor = conn.connection.info["weakprompt.prepared.cursor"][1]
            assert BLOB_BY_HASH.first(conn, {"hash": "a"}) == ("x",)
            with pytest.raises(IntegrityError):
                INSERT_BLOB.executemany(conn, [blob("a")])
            INSERT_BLOB.executemany(conn, [blob("b")])  # the cursor still works after the error
            assert conn.connection.info["weakprompt.prepared.cursor"][1] is cursor
            assert ALL_HASHES.all(conn, {}) == [("a",), ("b",)]
        with store.read() as conn:  # the same driver connection (one per in-memory store): the same cursor
            assert conn.connection.info["weakprompt.prepared.cursor"][1] is cursor
            assert ALL_HASHES.all(conn, {}) == [("a",), ("b",)]
    with Store.open() as other, other.read() as conn:
        ALL_HASHES.all(conn, {})
        kept = conn.connection.info["weakprompt.prepared.cursor"]
        assert kept[0] is conn.connection.dbapi_connection  # its own connection's cursor
