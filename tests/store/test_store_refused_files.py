"""A file Store.open refuses is left byte-identical: judged read-only first, turned WAL only once accepted."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from weakprompt.clock import FakeClock
from weakprompt.errors import SchemaVersionError, StoreError
from weakprompt.store import LATEST_VERSION, MIGRATIONS, Store
from weakprompt.store.engine import build_engine, normalize_url
from weakprompt.store.migrations import migrate
from weakprompt.transcript import Transcript

ROLLBACK, WAL = 1, 2  # header bytes 18 and 19: the file format's journal mode


@contextmanager
def _raw(path: Path) -> Iterator[sqlite3.Connection]:
    """A plain connection, committed and closed at the end (sqlite3's own ``with`` does not close)."""
    conn = sqlite3.connect(path)
    try:
        with conn:
            yield conn
    finally:
        conn.close()


def _journal_mode(path: Path) -> int:
    header = path.read_bytes()[:20]
    assert header[18] == header[19]
    return header[18]


def _in_rollback_mode(path: Path) -> None:
    with _raw(path) as raw:
        raw.execute("PRAGMA journal_mode = DELETE")
    assert _journal_mode(path) == ROLLBACK


def _store_at_latest(path: Path) -> None:
    with Store.open(path) as store:
        Transcript(store, "s").user("keep me")


def _foreign(path: Path) -> None:
    with _raw(path) as raw:
        raw.execute("CREATE TABLE users (id)")
        raw.execute("INSERT INTO users VALUES (1)")


def _newer(path: Path) -> None:
    _store_at_latest(path)
    with _raw(path) as raw:
        raw.execute(
            "INSERT INTO weakprompt_schema VALUES (?, 'from the future', '2030-01-01')", (LATEST_VERSION + 1,)
        )


def _missing_table(path: Path) -> None:
    _store_at_latest(path)
    with _raw(path) as raw:
        raw.execute("DROP TABLE commit_tools")


def _empty_version_table(path: Path) -> None:
    _store_at_latest(path)
    with _raw(path) as raw:
        raw.execute("DELETE FROM weakprompt_schema")


def _older_and_damaged(path: Path) -> None:
    """Version 2, with a column the shape check misses: migrating it to the latest fails and rolls back."""
    engine = build_engine(normalize_url(path))
    try:
        with engine.begin() as conn:
            migrate(conn, FakeClock(), migrations=MIGRATIONS[:2])
    finally:
        engine.dispose()
    with _raw(path) as raw:
        raw.execute("ALTER TABLE blobs DROP COLUMN size_bytes")


def _not_sqlite(path: Path) -> None:
    path.write_bytes(b"name,total\nalice,3\n" * 100)


REFUSED: dict[str, tuple[Callable[[Path], None], type[Exception], str]] = {
    "foreign": (_foreign, SchemaVersionError, r"not a weakprompt store.*users"),
    "newer": (_newer, SchemaVersionError, rf"version {LATEST_VERSION + 1}.*upgrade weakprompt"),
    "missing table": (_missing_table, SchemaVersionError, "missing table 'commit_tools'"),
    "empty version table": (_empty_version_table, SchemaVersionError, "empty"),
    "older, damaged": (_older_and_damaged, SchemaVersionError, r"blobs.*size_bytes"),
    "not sqlite": (_not_sqlite, StoreError, "not a database"),
}


@pytest.mark.parametrize("journal", ["rollback", "wal"])
@pytest.mark.parametrize("case", list(REFUSED))
def test_refused_files_are_byte_identical_after_store_open(tmp_path: Path, case: str, journal: str) -> None:
    build, error, message = REFUSED[case]
    path = tmp_path / "refused.db"
    build(path)
    if case != "not sqlite":
        if journal == "rollback":
            _in_rollback_mode(path)
        else:
            with _raw(path) as raw:
                raw.execute("PRAGMA journal_mode = WAL")
    elif journal == "wal":
        pytest.skip("a file that is not SQLite has no journal mode")
    before = path.read_bytes()
    listing = sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(error, match=message):
        Store.open(path)
    with pytest.raises(error, match=message):  # and again: still refused for the same reason
        Store.open(f"sqlite:///{path}")
    assert path.read_bytes() == before
    if journal == "rollback":
        # Not even a journal or WAL companion was left behind.
        assert sorted(p.name for p in tmp_path.iterdir()) == listing


def test_a_zero_byte_file_is_a_new_store(tmp_path: Path) -> None:
    """SQLite itself treats an empty file as an empty database, so it is opened like a missing file."""
    path = tmp_path / "empty.db"
    path.touch()
    with Store.open(path) as store:
        assert store.schema_version == LATEST_VERSION
        Transcript(store, "s").user("hello")
    assert _journal_mode(path) == WAL
    with Store.open(path) as store:
        assert [c.content.content for c in Transcript(store, "s").log()] == ["hello"]


def test_an_accepted_file_in_rollback_mode_is_switched_to_wal(tmp_path: Path) -> None:
    path = tmp_path / "accepted.db"
    _store_at_latest(path)
    _in_rollback_mode(path)
    with Store.open(path) as store, store.read() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA synchronous").scalar() == 1  # NORMAL, once in WAL
    assert _journal_mode(path) == WAL


def test_an_older_store_is_migrated_then_switched_to_wal(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    engine = build_engine(normalize_url(path))
    try:
        with engine.begin() as conn:
            migrate(conn, FakeClock(), migrations=MIGRATIONS[:1])
    finally:
        engine.dispose()
    _in_rollback_mode(path)
    with Store.open(path) as store:
        assert store.schema_version == LATEST_VERSION
    assert _journal_mode(path) == WAL


def test_a_sqlite_uri_file_is_switched_to_wal_too(tmp_path: Path) -> None:
    path = tmp_path / "uri.db"
    with Store.open(f"sqlite:///file:{path}?uri=true") as store:
        Transcript(store, "s").user("x")
    assert _journal_mode(path) == WAL
    with Store.open("sqlite:///file::memory:?uri=true") as store:
        assert Transcript(store, "s").user("in memory").seq == 0
