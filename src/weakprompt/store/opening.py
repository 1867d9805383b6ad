"""Opening a database: judge it without writing, then migrate it, then switch it to WAL.

A file the store refuses must be left byte-identical. Two things used to
write to it before the refusal: the switch to WAL (done on connect, it
rewrites the file header) and the version check itself (run in the write
transaction that migrates). So an existing SQLite file is first judged
through a read-only connection: not SQLite at all, someone else's tables,
a newer weakprompt's schema, or a damaged current one are all refused there.
Only a file that passes is opened for writing, migrated inside one
transaction (a failing step rolls back, still in the file's own journal
mode), and switched to WAL once that transaction has committed.

A 0-byte file is what SQLite itself treats as an empty database, so it is
a new store, like a missing file.

Read-only stores (``read_only=True``) never write: no migration, no WAL
switch, and a database that would need either is refused.
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import Connection, Engine

from ..clock import Clock
from ..errors import SchemaVersionError, StoreError
from .engine import SQLITE_MAGIC, build_engine, enable_wal, sqlite_file, transaction_options, uses_wal
from .locks import SCHEMA_LOCK, advisory_lock
from .memory_template import MEMORY_URL, memory_engine
from .migrations import LATEST_VERSION, check_not_newer, check_shape, migrate, read_version

__all__ = ["open_engine"]


def open_engine(url: str, clock: Clock, *, read_only: bool) -> tuple[Engine, int]:
    """An engine on the checked (and, unless ``read_only``, migrated) database, and its version.

    Raises :class:`SchemaVersionError` / :class:`StoreError` for what it
    refuses, and lets SQLAlchemy errors through for the caller to word.
    """
    path = sqlite_file(url)
    if read_only:
        return _open_read_only(url, path)
    if url == MEMORY_URL:  # a new private database: a copy of the migrated template
        return memory_engine(clock), LATEST_VERSION
    return migrated_engine(url, clock, path)


def migrated_engine(url: str, clock: Clock, path: Path | None) -> tuple[Engine, int]:
    """An engine on ``url`` after judging the database (if it exists) and migrating it."""
    if path is not None and _has_content(path):
        _check_header(path)
        engine = build_engine(url, read_only=True)
        try:
            with engine.connect() as conn, conn.begin():
                _judge(conn, allow_older=True)
        finally:
            engine.dispose()
    engine = build_engine(url)
    try:
        with engine.connect() as conn:
            conn.execution_options(**transaction_options(engine.dialect.name, write=True))
            with conn.begin():
                # Two workers opening a fresh database must not both migrate it.
                advisory_lock(conn, SCHEMA_LOCK)
                _, version = migrate(conn, clock)
                check_shape(conn)
            if uses_wal(url):
                enable_wal(_driver_connection(conn))
    except BaseException:
        engine.dispose()
        raise
    return engine, version


def _open_read_only(url: str, path: Path | None) -> tuple[Engine, int]:
    if path is not None:
        if not path.exists():
            raise StoreError(f"no database file at {str(path)!r} to open read-only")
        if not _has_content(path):
            raise SchemaVersionError(
                f"{str(path)!r} is an empty file, not a weakprompt store yet; "
                "read_only=True cannot create one"
            )
        _check_header(path)
    engine = build_engine(url, read_only=True)
    try:
        with engine.connect() as conn:
            conn.execution_options(**transaction_options(engine.dialect.name, write=False))
            with conn.begin():
                version = _judge(conn, allow_older=False)
    except BaseException:
        engine.dispose()
        raise
    return engine, version


def _judge(conn: Connection, *, allow_older: bool) -> int:
    """Check the version (and, for the current one, the shape) of a database, writing nothing."""
    version = read_version(conn)
    check_not_newer(version)
    if version == LATEST_VERSION:
        check_shape(conn)
    elif not allow_older:
        found = "an empty database" if version == 0 else f"schema version {version}"
        raise SchemaVersionError(
            f"the store is {found} and this weakprompt needs version {LATEST_VERSION}; read_only=True "
            "never creates or migrates one: open it once without read_only first"
        )
    return version


def _has_content(path: Path) -> bool:
    try:
        return path.stat().st_size > 0
    except FileNotFoundError:
        return False


def _check_header(path: Path) -> None:
    """Refuse a file that is not SQLite before SQLite opens it."""
    try:
        with path.open("rb") as file:
            head = file.read(len(SQLITE_MAGIC))
    except OSError as exc:
        raise StoreError(f"cannot read {str(path)!r}: {exc.strerror}") from exc
    if head != SQLITE_MAGIC:
        raise StoreError(
            f"cannot open the store at {str(path)!r}: the file is not a database (it does not start "
            "with the SQLite header)"
        )


def _driver_connection(conn: Connection) -> object:
    driver = conn.connection.dbapi_connection
    assert driver is not None  # a checked-out, open connection
    return driver
