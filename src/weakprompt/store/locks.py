"""Named locks held until the end of the current write transaction.

Some writes read before they write: the transcript reads the session head to
pick the next commit's parent and sequence number, the tool-output store
reads the last sequence number of a session, and opening a store reads the
schema version before migrating. Two writers must not interleave there.

On SQLite nothing is needed: every write transaction starts with ``BEGIN
IMMEDIATE`` and so runs alone. On PostgreSQL writers run side by side, so
such a write takes a transaction-scoped advisory lock on a name (say, the
session) first; writers on other names are not held up, and the lock goes
away with the commit or rollback, whatever happens to the process.
"""

from __future__ import annotations

import hashlib

from sqlalchemy import Connection, func, select

__all__ = ["SCHEMA_LOCK", "advisory_lock", "lock_key"]

SCHEMA_LOCK = "weakprompt:schema"
"""Held while a store is opened: checking, migrating and verifying the schema."""


def lock_key(name: str) -> int:
    """A stable signed 64-bit key for ``name`` (the same in every process, unlike ``hash()``)."""
    digest = hashlib.sha256(name.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def advisory_lock(conn: Connection, name: str) -> None:
    """Wait for, then hold until the transaction ends, the lock called ``name``.

    Call it first thing in a write transaction (before its reads). A no-op on
    SQLite, where the write transaction already holds the database lock.
    """
    if conn.dialect.name == "postgresql":
        conn.execute(select(func.pg_advisory_xact_lock(lock_key(name))))
