"""Forking a session at a commit: a new session that shares the history up to it, without a copy.

The store keeps one ``forks`` row (``store/fork_rows.py``); the fork's own
commits continue the chain from the fork commit, so compile, queries and
the loop see the shared history as the fork's own. Nothing is copied and
the parent is never written: each side's later commits are its own.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

from sqlalchemy import Connection

from ..canonical import find_surrogate
from ..errors import TranscriptError
from ..store.commit_rows import fetch_commit, session_head
from ..store.fork_rows import ForkRow, fetch_fork, in_chain, insert_fork
from ..store.store import Store

__all__ = ["fork_session"]


def _check_id(session_id: object, what: str) -> str:
    """A session id as the store keeps it, or a TranscriptError naming what is wrong with it."""
    if not isinstance(session_id, str) or not session_id:
        raise TranscriptError(f"fork: {what} must be a non-empty string, got {session_id!r}")
    if "\x00" in session_id or find_surrogate(session_id) is not None or len(session_id) > 255:
        raise TranscriptError(
            f"fork: {what} {session_id[:40]!r} cannot be stored "
            "(a NUL, a lone surrogate, or over 255 characters)"
        )
    return session_id


def fork_session(
    store: Store,
    session_id: str,
    *,
    at: str,
    new_session: str | None = None,
    also: Callable[[Connection, ForkRow], None] | None = None,
) -> str:
    """Start session ``new_session`` (default: a new id) from commit ``at`` of ``session_id``; returns its id.

    The new session's history up to ``at`` is the parent's, read in place.
    Refused with :class:`TranscriptError`, the store unchanged: an unknown
    session, a commit not in that session's chain, a target session that
    already exists (has commits, or is a fork already). ``also`` writes
    more rows for the fork in the same transaction (a layer above carries a
    pause over); what it raises leaves the store unchanged too.
    """
    parent = _check_id(session_id, "the session")
    if not isinstance(at, str) or not at or find_surrogate(at) is not None:
        raise TranscriptError(f"fork: at= must be a commit hash of session {parent!r}, got {at!r}")
    target = _check_id(
        new_session if new_session is not None else f"{parent}.fork-{uuid.uuid4().hex[:12]}", "new_session"
    )
    with store.write(lock=f"transcript:{target}") as conn:
        if session_head(conn, parent) is None:
            raise TranscriptError(f"fork: session {parent!r} has no commits; nothing to fork")
        row = fetch_commit(conn, at)
        if row is None or not in_chain(conn, parent, row.session_id, row.seq):
            raise TranscriptError(f"fork: commit {at!r} is not in the chain of session {parent!r}")
        if target == parent or session_head(conn, target) is not None or fetch_fork(conn, target) is not None:
            raise TranscriptError(f"fork: session {target!r} already exists; fork into a new session id")
        made = ForkRow(
            session_id=target,
            parent_session=parent,
            fork_commit=row.hash,
            fork_seq=row.seq,
            created_at=store.clock.now(),
        )
        insert_fork(conn, made)
        if also is not None:
            also(conn, made)
    return target
