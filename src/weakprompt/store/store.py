"""The database handle shared by the transcript and the tool-output store.

The store knows tables, not what is kept in them: it never imports the
transcript. A transcript is opened on a store (``Transcript(store, session_id)``).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Generator
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType

from sqlalchemy import Connection, Engine, select
from sqlalchemy.exc import SQLAlchemyError

from ..clock import SYSTEM_CLOCK, Clock
from ..errors import StoreError
from . import tables
from .engine import WRITE_OPTION, is_memory_database, normalize_url, transaction_options
from .locks import advisory_lock
from .memory_template import MEMORY_URL, memory_engine, recycle_memory_engine
from .migrations import LATEST_VERSION
from .opening import open_engine

__all__ = ["DeferredWrite", "Store"]

DeferredWrite = Callable[[Connection], None]
"""Writes kept back by a deferred store, run later inside its write transaction (see :meth:`Store.defer`)."""


class Store:
    """One database (SQLite file, in-memory SQLite, or any SQLAlchemy URL).

    Opening migrates an older weakprompt database forward inside one
    transaction and refuses anything newer, foreign or damaged with
    :class:`~weakprompt.errors.SchemaVersionError` / :class:`StoreError`,
    leaving a refused file byte-identical.
    """

    def __init__(
        self,
        engine: Engine | None,
        *,
        url: str,
        clock: Clock,
        schema_version: int,
        read_only: bool = False,
        deferred: bool = False,
    ) -> None:
        """Use :meth:`open`; this only wires already-checked parts together.

        ``engine`` is None only for a deferred store, which builds its database when first needed.
        """
        if engine is None and not deferred:
            raise StoreError("a store needs an engine unless it is a deferred private store")
        self._engine = engine
        self._url = url
        self._clock = clock
        self._schema_version = schema_version
        self._read_only = read_only
        self._closed = False
        if engine is None:
            self._in_memory = True
            database = None
        else:
            backend, database = engine.url.get_backend_name(), engine.url.database
            self._in_memory = backend == "sqlite" and is_memory_database(database)
        self._memory_lock = threading.RLock() if self._in_memory else None
        # One connection sees every write to a private in-memory database (see change_count).
        self._sole_connection = self._memory_lock is not None and (not database or database == ":memory:")
        self._held = threading.local()  # .conn / .write: this thread's held connection, see hold_connection()
        self._deferred: list[DeferredWrite] | None = [] if deferred else None
        self._writes = 0  # writes made through this store so far, deferred ones included

    @classmethod
    def open(
        cls,
        url: str | Path = "sqlite://",
        *,
        clock: Clock | None = None,
        read_only: bool = False,
        deferred: bool = False,
    ) -> Store:
        """Open (creating or upgrading as needed) the database at ``url``.

        ``"sqlite://"`` is a private in-memory database; a bare path is a
        SQLite file. ``read_only=True`` opens an existing store at the
        current schema version without writing anything, even in a
        read-only directory; writing through it raises :class:`StoreError`.

        ``deferred=True`` (a private in-memory store only) keeps the writes
        offered to :meth:`defer` back until something reads or writes this
        store, and builds the database only then: a store nobody looks into
        before it closes costs no database work at all. Every way into the
        store stores the kept writes first, so what anyone can see is the same.
        """
        resolved = normalize_url(url)
        used_clock = clock or SYSTEM_CLOCK
        if deferred:
            if resolved != MEMORY_URL or read_only:
                raise StoreError(
                    f"deferred=True is for a private in-memory store ({MEMORY_URL!r}, writable), "
                    f"not {_redact(resolved)!r}{' read-only' if read_only else ''}"
                )
            return cls(None, url=resolved, clock=used_clock, schema_version=LATEST_VERSION, deferred=True)
        try:
            engine, version = open_engine(resolved, used_clock, read_only=read_only)
        except SQLAlchemyError as exc:
            raise StoreError(f"cannot open the store at {_redact(resolved)}: {_reason(exc)}") from exc
        return cls(engine, url=resolved, clock=used_clock, schema_version=version, read_only=read_only)

    @property
    def engine(self) -> Engine:
        """The SQLAlchemy engine (a deferred store builds its database and stores its kept writes first)."""
        self._check_open()
        if self._memory_lock is None:
            return self._live_engine()
        with self._memory_lock:
            self._flush()
            return self._live_engine()

    @property
    def url(self) -> str:
        return self._url

    @property
    def clock(self) -> Clock:
        return self._clock

    @property
    def in_memory(self) -> bool:
        """True for an in-memory SQLite database: its reads and writes never wait on a disk or a lock."""
        return self._in_memory

    @property
    def deferred(self) -> bool:
        """True while :meth:`defer` keeps writes back (an open store opened with ``deferred=True``)."""
        return self._deferred is not None and not self._closed

    @property
    def write_count(self) -> int:
        """Writes made through this store object so far (write transactions and deferred writes).

        A writer that noted the count after its own write knows, while it
        holds, that nothing else was written through this store since.
        """
        return self._writes

    @property
    def schema_version(self) -> int:
        return self._schema_version

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def read_only(self) -> bool:
        """True when opened with ``read_only=True``: every write raises :class:`StoreError`."""
        return self._read_only

    @contextmanager
    def read(self) -> Generator[Connection, None, None]:
        """A connection inside one read transaction (a consistent snapshot).

        On PostgreSQL the transaction is REPEATABLE READ and READ ONLY.
        """
        with self._transaction(write=False) as conn:
            yield conn

    @contextmanager
    def write(self, *, lock: str | None = None) -> Generator[Connection, None, None]:
        """One write transaction: all of it is stored, or none of it.

        On SQLite the write lock is taken at BEGIN, so concurrent writers
        (threads or processes) wait their turn instead of failing midway.
        On PostgreSQL writers run side by side; a write that reads something
        (a session head, a last sequence number) and then writes based on it
        names a ``lock`` (e.g. ``"transcript:<session>"``): writers naming the
        same lock run one at a time.
        """
        with self._transaction(write=True) as conn:
            self._writes += 1
            if lock is not None:
                advisory_lock(conn, lock)
            yield conn

    def defer(self, work: DeferredWrite, *, after: int | None = None) -> int | None:
        """Keep ``work`` (writes, no reads it depends on) back; it runs before anything next uses this store.

        Kept writes run in the order given, all in one write transaction,
        when this store is next read or written (or its :attr:`engine` is
        taken); a store closed first drops them. Only a ``deferred`` store
        keeps writes back: elsewhere this raises :class:`StoreError`.
        ``after``: keep it only if :attr:`write_count` is still that (checked
        under the store's lock), else return None and keep nothing. Returns
        :attr:`write_count` with this write counted.
        """
        self._check_open()
        if self._deferred is None or self._memory_lock is None:
            raise StoreError(
                f"the store at {_redact(self._url)} does not defer writes (open it with deferred=True)"
            )
        with self._memory_lock:
            if after is not None and after != self._writes:
                return None
            self._deferred.append(work)
            self._writes += 1
            return self._writes

    def _flush(self) -> None:
        """Store the kept writes, in one transaction (the caller holds the memory lock)."""
        kept = self._deferred
        if not kept:
            return
        works = list(kept)
        try:
            with self._transaction_on_connection(write=True) as conn:
                for work in works:
                    work(conn)
        except Exception as exc:
            exc.add_note(
                f"weakprompt: {len(works)} write(s) kept back by the deferred store at "
                f"{_redact(self._url)} could not be stored; they stay queued"
            )
            raise
        del kept[: len(works)]

    def _live_engine(self) -> Engine:
        """The engine, built now for a deferred store that has not needed one yet."""
        engine = self._engine
        if engine is None:
            engine = self._engine = memory_engine(self._clock)
        return engine

    @contextmanager
    def hold_connection(self) -> Generator[None, None, None]:
        """Within the block, this thread's transactions run one after another on one held connection.

        Checking a connection out of the pool and back costs more than a
        small SQLite transaction itself, so a caller about to run many in a
        row (the evaluation loop) holds one for the duration. Each
        transaction is still its own ``BEGIN`` ... ``COMMIT``. Other threads
        are not affected, a transaction opened inside another still gets a
        connection of its own, and a block inside a block joins it. Only
        SQLite: elsewhere this changes nothing.
        """
        self._check_open()
        engine = self._engine  # a deferred store without a database yet holds none: its writes wait
        if engine is None or engine.dialect.name != "sqlite" or getattr(self._held, "conn", None) is not None:
            yield
            return
        try:
            conn = engine.connect()
        except SQLAlchemyError as exc:
            raise StoreError(f"database error on {_redact(self._url)}: {_reason(exc)}") from exc
        self._held.conn, self._held.write = conn, None
        try:
            yield
        finally:
            self._held.conn = None
            conn.close()

    def _held_connection(self) -> Connection | None:
        """This thread's held connection when it can take a transaction now."""
        conn: Connection | None = getattr(self._held, "conn", None)
        if conn is None or conn.closed or conn.invalidated or conn.in_transaction():
            return None
        return conn

    @contextmanager
    def _transaction(self, *, write: bool) -> Generator[Connection, None, None]:
        if self._memory_lock is None:
            with self._transaction_on_connection(write=write) as conn:
                yield conn
            return
        # An in-memory database is one connection shared by every thread: one transaction at a time.
        with self._memory_lock:
            self._flush()
            with self._transaction_on_connection(write=write) as conn:
                yield conn

    @contextmanager
    def _transaction_on_connection(self, *, write: bool) -> Generator[Connection, None, None]:
        self._check_open()
        if write and self._read_only:
            raise StoreError(f"the store at {_redact(self._url)} was opened read-only: it cannot be written")
        held = self._held_connection()
        if held is not None:
            try:
                if self._held.write is not write:
                    held.execution_options(**{WRITE_OPTION: write})
                    self._held.write = write
                with held.begin():
                    yield held
            except SQLAlchemyError as exc:
                raise StoreError(f"database error on {_redact(self._url)}: {_reason(exc)}") from exc
            return
        try:
            engine = self._live_engine()
            with engine.connect() as conn:
                options = transaction_options(engine.dialect.name, write=write)
                if options:  # a SQLite read needs none, and setting none still costs a call
                    conn.execution_options(**options)
                with conn.begin():
                    yield conn
        except SQLAlchemyError as exc:
            raise StoreError(f"database error on {_redact(self._url)}: {_reason(exc)}") from exc

    def change_count(self, conn: Connection) -> int | None:
        """How many rows have been changed in this database so far, when one connection sees them all.

        That is a private in-memory database (``"sqlite://"``): its one
        connection carries every write, so a writer that noted the count at
        the end of its own transaction knows, while the count is still the
        same, that nothing else has been written since, and can skip reading
        back what it wrote (the transcript writer: the session's head).
        Elsewhere (files, servers, shared-cache memory) it is None: ask the
        database.
        """
        if not self._sole_connection:
            return None
        driver = conn.connection.driver_connection
        return driver.total_changes if isinstance(driver, sqlite3.Connection) else None

    def session_ids(self) -> list[str]:
        """Every transcript session id in the store, in first-commit order (a fork: when it was made)."""
        first = tables.commits.c.seq == 0
        columns = (tables.commits.c.session_id, tables.commits.c.created_at)
        query = select(*columns).where(first).order_by(tables.commits.c.created_at)
        forks = select(tables.forks.c.session_id, tables.forks.c.created_at).order_by(
            tables.forks.c.created_at
        )
        with self.read() as conn:
            rows = [(str(at), str(s)) for s, at in conn.execute(query)]
            rows += [(str(at), str(s)) for s, at in conn.execute(forks)]
        return [session for _, session in sorted(rows, key=lambda row: row[0])]

    def close(self) -> None:
        """Release every connection; further use raises :class:`StoreError`."""
        if not self._closed:
            self._closed = True
            if self._memory_lock is not None:
                # Its one connection holds the whole database: a private one is emptied and kept
                # for the next store (see memory_template); otherwise closing it frees it. Not
                # Engine.dispose(), which also builds a new pool for a store that never connects
                # again (the private store of every run is closed when the run ends).
                # Under the lock its transactions take: none of another thread's is under way.
                with self._memory_lock:
                    if self._deferred is not None:
                        self._deferred.clear()  # nothing can read them now
                    engine = self._engine
                    if engine is not None and not (self._sole_connection and recycle_memory_engine(engine)):
                        engine.pool.dispose()
            elif self._engine is not None:  # pragma: no branch - only a deferred store has none
                self._engine.dispose()

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"v{self._schema_version}"
        if self._read_only:
            state += ", read-only"
        return f"Store({_redact(self._url)!r}, {state})"

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError(f"the store at {_redact(self._url)} is closed")


def _redact(url: str) -> str:
    """URLs may carry passwords; never put them in an error message."""
    try:
        from sqlalchemy.engine import make_url

        return make_url(url).render_as_string(hide_password=True)
    except SQLAlchemyError:  # pragma: no cover - url was parsed once already
        return url


def _reason(exc: SQLAlchemyError) -> str:
    original = getattr(exc, "orig", None)
    return str(original) if original is not None else str(exc)
