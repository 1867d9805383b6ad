"""Fresh in-memory stores, copied from one migrated template instead of migrated one by one.

Every evaluation without ``store=`` opens a private in-memory store, and
creating the schema through the migrations costs milliseconds of
SQLAlchemy DDL work each time: more than a whole short run, and the
largest cost when a thousand sessions start at once. The schema of a new
in-memory database is always the same, so it is built once per process
(through the very same migrations) and each new store starts as a copy of
it, made with SQLite's backup API in a fraction of a millisecond. Only the
``applied_at`` of the version rows is set again, from the new store's clock.

Building a SQLAlchemy engine from a URL costs more than that copy (a new
dialect, its caches, its event listeners), and each engine stays alive as
long as its store. So every private store's engine shares the template
engine's dialect and gets only a pool of its own. Its one connection uses
the driver's own transactions (a ``BEGIN`` before the first write): with
one connection and no other process there is no lock to take early, which
is all the file stores' ``BEGIN IMMEDIATE`` hook is for.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from typing import cast

from sqlalchemy import Engine
from sqlalchemy.engine.interfaces import DBAPIConnection
from sqlalchemy.pool import StaticPool

from ..clock import Clock
from . import tables

__all__ = ["MEMORY_URL", "memory_engine"]

MEMORY_URL = "sqlite://"
"""The URL of a new private in-memory database (``Store.open()``'s default)."""

_lock = threading.Lock()
_template: dict[int, tuple[sqlite3.Connection, Engine]] = {}  # by pid: the engine keeps the connection open


def _template_connection(clock: Clock) -> sqlite3.Connection:
    """The process's migrated template database (built on first use; again in a forked child)."""
    pid = os.getpid()
    if pid not in _template:
        from .opening import migrated_engine  # opening uses this module: imported here

        engine, _version = migrated_engine(MEMORY_URL, clock, None)
        driver = engine.raw_connection().driver_connection
        assert isinstance(driver, sqlite3.Connection)
        _template.clear()  # a parent's template is not used in a forked child
        _template[pid] = (driver, engine)
    return _template[pid][0]


def _template_engine() -> Engine:
    return _template[os.getpid()][1]


def memory_engine(clock: Clock) -> Engine:
    """An engine on a new private in-memory database holding the current schema."""
    with _lock:
        template = _template_connection(clock)
        base = _template_engine()
    # Straight to the driver: a statement compiled through a new engine is compiled afresh.
    stamp = f"UPDATE {tables.schema_versions.name} SET applied_at = ?"

    def connect() -> DBAPIConnection:
        copy = sqlite3.connect(":memory:", check_same_thread=False)
        with _lock:
            template.backup(copy)
        copy.execute("PRAGMA foreign_keys = ON")
        copy.execute(stamp, (clock.now().isoformat(),))
        copy.commit()
        return cast("DBAPIConnection", copy)  # sqlite3 is a DB-API driver; its stubs do not say so

    return Engine(StaticPool(connect, dialect=base.dialect), base.dialect, base.url)
