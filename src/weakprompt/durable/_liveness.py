"""Which workers are alive: each holds a lock only its own process can hold while it lives.

DBOS leaves the runs of a worker that died pending under its executor id;
they run again once someone declares that executor dead. A worker holds a
lock named after its executor id for as long as it lives: a PostgreSQL
session advisory lock (released by the server when the connection drops)
or, for a SQLite store on one machine, an exclusive ``flock`` on a file
beside the database (released by the kernel when the process dies). A
peer that can take the lock knows the owner is gone.
"""

from __future__ import annotations

import contextlib
import fcntl
import zlib
from collections.abc import Generator
from pathlib import Path
from typing import IO

import sqlalchemy as sa

__all__ = ["Liveness"]

_NAMESPACE = 0x5750  # "WP": the first key of the two-key advisory lock, apart from the store's locks


def _key(executor_id: str) -> int:
    return zlib.crc32(executor_id.encode()) & 0x7FFFFFFF


class Liveness:
    """Holds this worker's lock and tests other workers' (see the module docstring)."""

    def __init__(self, db_url: str) -> None:
        self._url = db_url
        self._engine: sa.Engine | None = None
        self._held: sa.Connection | IO[bytes] | None = None
        if db_url.startswith("postgresql"):
            self._engine = sa.create_engine(db_url, poolclass=sa.pool.NullPool)
            self._folder = None
        else:
            self._folder = Path(db_url.removeprefix("sqlite:///") + ".workers")

    def hold(self, executor_id: str) -> None:
        """Take this worker's lock; waits while a process that had the same id still lives."""
        if self._engine is not None:
            conn = self._engine.connect()
            conn.execute(
                sa.text("select pg_advisory_lock(:a, :b)"), {"a": _NAMESPACE, "b": _key(executor_id)}
            )
            conn.commit()
            self._held = conn
            return
        assert self._folder is not None
        self._folder.mkdir(exist_ok=True)
        handle = (self._folder / f"{_key(executor_id):08x}.lock").open("ab")
        fcntl.flock(handle, fcntl.LOCK_EX)
        self._held = handle

    def release(self) -> None:
        held, self._held = self._held, None
        if held is not None:
            held.close()
        if self._engine is not None:
            self._engine.dispose()

    @contextlib.contextmanager
    def if_dead(self, executor_id: str) -> Generator[bool]:
        """``True`` inside the block when ``executor_id``'s worker is gone (its lock is held meanwhile)."""
        if self._engine is not None:
            with self._engine.connect() as conn:
                params = {"a": _NAMESPACE, "b": _key(executor_id)}
                taken = bool(conn.execute(sa.text("select pg_try_advisory_lock(:a, :b)"), params).scalar())
                try:
                    yield taken
                finally:
                    if taken:
                        conn.execute(sa.text("select pg_advisory_unlock(:a, :b)"), params)
            return
        assert self._folder is not None
        path = self._folder / f"{_key(executor_id):08x}.lock"
        if not path.exists():
            yield True  # it never started a lock here: nothing of it is alive
            return
        with path.open("ab") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                yield False
                return
            try:
                yield True
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)
