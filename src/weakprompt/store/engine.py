"""Engine construction: URL handling and per-dialect connection settings.

SQLite needs explicit care to be a safe default: foreign keys are off unless
asked for, WAL lets readers run beside a writer (other processes included),
and a write transaction must take the lock at BEGIN (``BEGIN IMMEDIATE``) so
that two writers queue up instead of failing half-way through a commit.
Switching a file to WAL rewrites its header, so it is done by
:func:`enable_wal` once the store has accepted the file, never on connect.

A read-only engine (``read_only=True``) never writes: SQLite files are opened
with ``mode=ro`` (plus ``immutable=1`` where no writer can exist, see
:func:`_read_only_uri`) and ``query_only``; PostgreSQL sessions start with
``default_transaction_read_only``.

PostgreSQL writers run at READ COMMITTED, so that a statement issued after
waiting for a lock (see :mod:`weakprompt.store.locks`) sees what the previous
lock holder committed; readers get one REPEATABLE READ, READ ONLY snapshot
per transaction, the same guarantee a SQLite read transaction gives.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError
from sqlalchemy.pool import QueuePool, StaticPool

from ..errors import StoreError

__all__ = [
    "BUSY_TIMEOUT_SECONDS",
    "WRITE_OPTION",
    "SQLITE_MAGIC",
    "build_engine",
    "enable_wal",
    "is_memory_database",
    "normalize_url",
    "sqlite_file",
    "uses_wal",
    "transaction_options",
]

WRITE_OPTION = "weakprompt_write"
"""Execution option marking a connection whose next transaction writes."""

BUSY_TIMEOUT_SECONDS = 30.0


SQLITE_MAGIC = b"SQLite format 3\x00"
"""The first 16 bytes of every SQLite database file."""

_PLAIN_POSTGRES = "postgresql://"
_POSTGRES_DRIVER = "postgresql+psycopg://"


def normalize_url(target: str | Path) -> str:
    """A database URL; a bare filesystem path means a SQLite file.

    ``postgresql://`` without a driver means psycopg 3 (the ``postgres``
    extra), not SQLAlchemy's default psycopg2.
    """
    text = str(target)
    if text.startswith(_PLAIN_POSTGRES):
        return _POSTGRES_DRIVER + text[len(_PLAIN_POSTGRES) :]
    if "://" in text:
        return text
    return f"sqlite:///{Path(text)}"


def transaction_options(dialect: str, *, write: bool) -> dict[str, object]:
    """Execution options for a connection about to begin a read or write transaction."""
    if write:
        return {WRITE_OPTION: True}
    if dialect == "postgresql":
        return {"isolation_level": "REPEATABLE READ", "postgresql_readonly": True}
    return {}


def is_memory_database(database: str | None) -> bool:
    """Whether a SQLite URL's database part names an in-memory database (none, `:memory:`, a memory URI)."""
    return not database or database == ":memory:" or database.startswith("file::memory:")


def sqlite_file(url: str) -> Path | None:
    """The file of a SQLite URL naming a plain path; None for memory, SQLite URIs and other backends."""
    parsed = _parse(url)
    if parsed.get_backend_name() != "sqlite" or is_memory_database(parsed.database) or "uri" in parsed.query:
        return None
    return Path(str(parsed.database))


def uses_wal(url: str) -> bool:
    """True for a SQLite database kept in a file (given by path or as a URI), which WAL suits."""
    parsed = _parse(url)
    return parsed.get_backend_name() == "sqlite" and not is_memory_database(parsed.database)


def _parse(url: str) -> URL:
    try:
        return make_url(url)
    except ArgumentError as exc:
        raise StoreError(f"not a database URL: {url!r} ({exc})") from exc


def build_engine(
    url: str, *, read_only: bool = False, creator: Callable[[], sqlite3.Connection] | None = None
) -> Engine:
    """An engine for ``url``; ``read_only`` makes one that cannot write (the database must exist).

    ``creator`` makes the connection of an in-memory SQLite database (a copy of a template).
    """
    parsed = _parse(url)
    backend = parsed.get_backend_name()
    if backend != "sqlite":
        options: dict[str, Any] = {"pool_pre_ping": True}
        if backend == "postgresql":
            options["isolation_level"] = "READ COMMITTED"
            if read_only:
                parsed = _postgres_read_only(parsed)
        elif read_only:
            raise StoreError(f"read_only=True supports SQLite files and PostgreSQL, not {backend!r}")
        try:
            return create_engine(parsed, **options)
        except Exception as exc:
            hint = " (install weakprompt[postgres] for psycopg)" if isinstance(exc, ImportError) else ""
            raise StoreError(f"cannot create an engine for {parsed.render_as_string()}: {exc}{hint}") from exc
    if read_only:
        path = sqlite_file(url)
        if path is None:
            raise StoreError(
                f"read_only=True needs a SQLite file given by path, not {parsed.render_as_string()!r} "
                "(an in-memory database would always be empty)"
            )
        engine = create_engine("sqlite://", creator=_read_only_connect(path), poolclass=QueuePool)
        _configure_sqlite(engine, read_only=True)
        return engine
    if is_memory_database(parsed.database):
        # One shared connection, or every checkout would see a fresh empty database.
        if creator is not None:
            engine = create_engine("sqlite://", poolclass=StaticPool, creator=creator)
        else:
            engine = create_engine(parsed, poolclass=StaticPool, connect_args={"check_same_thread": False})
    else:
        engine = create_engine(
            parsed, connect_args={"check_same_thread": False, "timeout": BUSY_TIMEOUT_SECONDS}
        )
    _configure_sqlite(engine, read_only=False)
    return engine


def _postgres_read_only(parsed: URL) -> URL:
    """Every session of the engine starts READ ONLY, keeping any ``options`` the URL already has."""
    given = parsed.query.get("options", "")
    existing = given if isinstance(given, str) else " ".join(given)
    options = f"{existing} -c default_transaction_read_only=on".strip()
    return parsed.update_query_dict({"options": options})


def _read_only_uri(path: Path) -> str:
    """``mode=ro``, plus ``immutable=1`` when nothing can be writing the file.

    SQLite cannot open a WAL file read-only unless its ``-shm`` companion
    exists or can be created. In a directory we may not write to, with no
    ``-wal`` file present, no writer can exist either (a writer needs to
    create its journal or WAL there), so the file is safe to treat as
    immutable, which needs neither companion.
    """
    uri = f"file:{quote(str(path.absolute()))}?mode=ro"
    if not os.access(path.parent, os.W_OK) and not Path(f"{path}-wal").exists():
        uri += "&immutable=1"
    return uri


def _read_only_connect(path: Path) -> Callable[[], sqlite3.Connection]:
    def connect() -> sqlite3.Connection:
        return sqlite3.connect(
            _read_only_uri(path), uri=True, check_same_thread=False, timeout=BUSY_TIMEOUT_SECONDS
        )

    return connect


def enable_wal(dbapi_connection: Any) -> None:
    """Switch an accepted SQLite file to WAL (kept in the file) through a driver connection.

    It must run outside any transaction; the store's connections leave
    transaction control to the store, so a driver cursor is outside one.
    """
    cursor = dbapi_connection.cursor()
    try:
        _enable_wal(cursor)
        cursor.execute("PRAGMA synchronous = NORMAL")
    finally:
        cursor.close()


def _enable_wal(cursor: Any) -> None:
    """Switch the file to WAL, waiting out other connections doing the same.

    Several connections opening a fresh file at once all try to switch it;
    SQLite may answer "database is locked" at once instead of waiting for
    the busy timeout, so wait and try again (the switch is kept in the file:
    the first one to succeed settles it for everyone).
    """
    deadline = time.monotonic() + BUSY_TIMEOUT_SECONDS
    while True:
        try:
            cursor.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(0.005)


def _configure_sqlite(engine: Engine, *, read_only: bool) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:  # pyright: ignore[reportUnusedFunction]
        # Hand transaction control to the "begin" hook below (pysqlite's own
        # implicit BEGIN would be DEFERRED and skip DDL).
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_SECONDS * 1000)}")
            if read_only:
                cursor.execute("PRAGMA query_only = ON")
                return
            cursor.execute("PRAGMA foreign_keys = ON")
            # NORMAL is durable enough in WAL mode only; a file not switched yet keeps FULL.
            if cursor.execute("PRAGMA journal_mode").fetchone()[0] == "wal":
                cursor.execute("PRAGMA synchronous = NORMAL")
        finally:
            cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Connection) -> None:  # pyright: ignore[reportUnusedFunction]
        writes = bool(connection.get_execution_options().get(WRITE_OPTION, False))
        statement = "BEGIN IMMEDIATE" if writes else "BEGIN"
        # Straight to the driver: this runs for every transaction, and going
        # through SQLAlchemy's statement machinery costs more than BEGIN itself.
        cursor = connection.connection.cursor()
        try:
            cursor.execute(statement)
        except sqlite3.Error as exc:
            raise DBAPIError.instance(
                statement, None, exc, sqlite3.Error, dialect=connection.dialect
            ) from exc
        finally:
            cursor.close()
