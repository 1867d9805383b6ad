"""Fresh in-memory stores: copied from one migrated template, and reused once closed.

Every evaluation without ``store=`` opens a private in-memory store (a
deferred one, which builds its database only once something reads it:
see ``Store.open``), and creating the schema through the migrations costs milliseconds of
SQLAlchemy DDL work each time: more than a whole short run, and the
largest cost when a thousand sessions start at once. The schema of a new
in-memory database is always the same, so it is built once per process
(through the very same migrations) and each new store starts as a copy of
it, made with SQLite's backup API. Only the ``applied_at`` of the version
rows is set again, from the new store's clock.

A copy is still not free: SQLite parses the schema again on the new
connection's first statement, and compiles every statement it runs there
for the first time. Together that is a few hundred microseconds per run,
a tenth of a short run. So a closed private database is emptied (every
table's rows deleted) and kept for the next store, which then finds its
schema parsed and its statements compiled. Only a database nobody else can
reach goes back: the store's own (``"sqlite://"``), with no connection of
its pool checked out, its schema unchanged, and still small; anything else
is closed as before. The old store's engine gives it up for good: used
again, it raises instead of connecting. At most :data:`IDLE_LIMIT`
databases wait, each at most :data:`IDLE_PAGES` pages (4 KiB each); a
typical one takes about 200 KB, so a process keeps as many as the most
runs it had open at once, up to about 25 MB.

Building a SQLAlchemy engine from a URL costs more than that copy (a new
dialect, its caches, its event listeners). So every private store's engine
shares the template engine's dialect and gets only a pool of its own. Its
one connection uses the driver's own transactions (a ``BEGIN`` before the
first write): with one connection and no other process there is no lock to
take early, which is all the file stores' ``BEGIN IMMEDIATE`` hook is for.
Nor does it keep a compiled-statement cache: the hot statements are
prepared once per process (:mod:`.prepared`), and the cache is the one part
of an engine that refers back to it, which would leave every closed store's
engine for the cyclic garbage collector.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import uuid
from typing import cast

from sqlalchemy import Engine
from sqlalchemy.engine.interfaces import DBAPIConnection
from sqlalchemy.pool import StaticPool

from ..clock import Clock
from . import tables

__all__ = ["IDLE_LIMIT", "IDLE_PAGES", "MEMORY_URL", "memory_engine", "recycle_memory_engine"]

MEMORY_URL = "sqlite://"
"""The URL of a new private in-memory database (``Store.open()``'s default)."""

IDLE_LIMIT = 128
"""At most this many emptied private databases wait for a next store (per process)."""

IDLE_PAGES = 64
"""A closed private database larger than this many pages is closed, not kept."""

_lock = threading.Lock()
_template: dict[int, tuple[sqlite3.Connection, Engine]] = {}  # by pid: the engine keeps the connection open
_idle: dict[int, list[sqlite3.Connection]] = {}  # by pid: emptied databases, ready for a next store
_STAMP = f"UPDATE {tables.schema_versions.name} SET applied_at = ?"
# Each private database is a store of its own: it gets an id of its own (approval tokens bind to it).
_NEW_ID = f"UPDATE {tables.store_identity.name} SET store_id = ?"
# Children first, so that no foreign key is ever left pointing at a deleted row.
_EMPTY = tuple(
    f"DELETE FROM {table.name}"
    for table in reversed(tables.metadata.sorted_tables)
    if table is not tables.schema_versions and table is not tables.store_identity
)


def _template_connection(clock: Clock) -> sqlite3.Connection:
    """The process's migrated template database (built on first use; again in a forked child)."""
    pid = os.getpid()
    if pid not in _template:
        from .opening import migrated_engine  # opening uses this module: imported here

        engine, _version = migrated_engine(MEMORY_URL, clock, None)
        driver = engine.raw_connection().driver_connection
        assert isinstance(driver, sqlite3.Connection)
        _template.clear()  # a parent's template (and its idle copies) are not used in a forked child
        _idle.clear()
        _template[pid] = (driver, engine)
        _idle[pid] = []
    return _template[pid][0]


class _PrivateDatabase:
    """The creator of one private store's pool: hands its database out, until it is given back."""

    def __init__(self, template: sqlite3.Connection, clock: Clock, reused: sqlite3.Connection | None) -> None:
        self._template = template
        self._clock = clock
        self._reused = reused
        self.given_back = False
        self.schema_version: int | None = None  # SQLite's schema cookie when handed out

    def __call__(self) -> DBAPIConnection:
        if self.given_back:
            raise sqlite3.ProgrammingError("this private in-memory store was closed: its database is gone")
        database, self._reused = self._reused, None
        if database is None:
            database = sqlite3.connect(":memory:", check_same_thread=False)
            with _lock:
                self._template.backup(database)
            database.execute("PRAGMA foreign_keys = ON")
        (self.schema_version,) = database.execute("PRAGMA schema_version").fetchone()
        database.execute(_STAMP, (self._clock.now().isoformat(),))
        database.execute(_NEW_ID, (uuid.uuid4().hex,))
        database.commit()
        return cast("DBAPIConnection", database)  # sqlite3 is a DB-API driver; its stubs do not say so


class _PrivatePool(StaticPool):
    """A :class:`StaticPool` that knows its creator, so its database can be given back."""

    database: _PrivateDatabase


def memory_engine(clock: Clock) -> Engine:
    """An engine on a private in-memory database holding the current schema and no rows."""
    with _lock:
        template = _template_connection(clock)
        base = _template[os.getpid()][1]
        idle = _idle[os.getpid()]
        reused = idle.pop() if idle else None
    # Straight to the driver: a statement compiled through a new engine is compiled afresh.
    database = _PrivateDatabase(template, clock, reused)
    pool = _PrivatePool(database, dialect=base.dialect)
    pool.database = database
    return Engine(pool, base.dialect, base.url, query_cache_size=0)


def recycle_memory_engine(engine: Engine) -> bool:
    """Empty a closing private store's database and keep it for a next store; False: close it instead.

    The engine cannot reach the database afterwards. Any doubt (another
    engine's pool, a connection still checked out, a changed schema, a
    large database, an error while emptying it) answers False.
    """
    pool = engine.pool
    if not isinstance(pool, _PrivatePool):
        return False
    record = pool.__dict__.get("connection")  # StaticPool's one connection record, once it connected
    if record is None or record.in_use:
        return False
    database = record.dbapi_connection
    pid = os.getpid()
    if not isinstance(database, sqlite3.Connection):  # pragma: no cover - its creator only makes these
        return False
    with _lock:
        if pid not in _template or len(_idle[pid]) >= IDLE_LIMIT:
            return False
    try:
        if not _empty(database, pool.database.schema_version):
            return False
    except sqlite3.Error:
        return False
    pool.database.given_back = True
    record.dbapi_connection = None  # the record forgets it without closing it
    del pool.__dict__["connection"]
    with _lock:
        if _idle.get(pid) is None or len(_idle[pid]) >= IDLE_LIMIT:
            database.close()
        else:
            _idle[pid].append(database)
    return True


def _empty(database: sqlite3.Connection, schema_version: int | None) -> bool:
    """Delete every row but the schema versions; False when this database should not be kept."""
    database.rollback()
    (pages,) = database.execute("PRAGMA page_count").fetchone()
    (version,) = database.execute("PRAGMA schema_version").fetchone()
    if pages > IDLE_PAGES or version != schema_version:
        return False
    # Foreign keys stay on: switching them off and on again would make SQLite compile every
    # statement of this connection afresh, and keeping those compiled is the point.
    for statement in _EMPTY:
        database.execute(statement)
    database.commit()
    return True
