"""Engine construction: URL handling and per-dialect connection settings.

SQLite needs explicit care to be a safe default: foreign keys are off unless
asked for, WAL lets readers run beside a writer (other processes included),
and a write transaction must take the lock at BEGIN (``BEGIN IMMEDIATE``) so
that two writers queue up instead of failing half-way through a commit.

PostgreSQL writers run at READ COMMITTED, so that a statement issued after
waiting for a lock (see :mod:`weakprompt.store.locks`) sees what the previous
lock holder committed; readers get one REPEATABLE READ, READ ONLY snapshot
per transaction, the same guarantee a SQLite read transaction gives.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, DBAPIError
from sqlalchemy.pool import StaticPool

from ..errors import StoreError

__all__ = [
    "BUSY_TIMEOUT_SECONDS",
    "WRITE_OPTION",
    "build_engine",
    "normalize_url",
    "transaction_options",
]

WRITE_OPTION = "weakprompt_write"
"""Execution option marking a connection whose next transaction writes."""

BUSY_TIMEOUT_SECONDS = 30.0


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


def _is_memory(database: str | None) -> bool:
    return not database or database == ":memory:" or database.startswith("file::memory:")


def build_engine(url: str) -> Engine:
    try:
        parsed = make_url(url)
    except ArgumentError as exc:
        raise StoreError(f"not a database URL: {url!r} ({exc})") from exc
    backend = parsed.get_backend_name()
    if backend != "sqlite":
        options: dict[str, Any] = {"pool_pre_ping": True}
        if backend == "postgresql":
            options["isolation_level"] = "READ COMMITTED"
        try:
            return create_engine(parsed, **options)
        except Exception as exc:
            hint = " (install weakprompt[postgres] for psycopg)" if isinstance(exc, ImportError) else ""
            raise StoreError(f"cannot create an engine for {parsed.render_as_string()}: {exc}{hint}") from exc
    if _is_memory(parsed.database):
        # One shared connection, or every checkout would see a fresh empty database.
        engine = create_engine(parsed, poolclass=StaticPool, connect_args={"check_same_thread": False})
    else:
        engine = create_engine(
            parsed, connect_args={"check_same_thread": False, "timeout": BUSY_TIMEOUT_SECONDS}
        )
    _configure_sqlite(engine, wal=not _is_memory(parsed.database))
    return engine


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


def _configure_sqlite(engine: Engine, *, wal: bool) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:  # pyright: ignore[reportUnusedFunction]
        # Hand transaction control to the "begin" hook below (pysqlite's own
        # implicit BEGIN would be DEFERRED and skip DDL).
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute("PRAGMA foreign_keys = ON")
            cursor.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_SECONDS * 1000)}")
            if wal:
                _enable_wal(cursor)
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
