"""SQL of forks: a session that starts from a commit of another session and shares its history.

A fork has no copy of the history it shares: its row names the parent
session and the commit it starts from (with that commit's ``seq``), and its
own commits continue the chain from there (parent hash the fork commit,
``seq`` counting on from it). Reading a fork's chain reads the parent's up
to the fork commit, then the fork's own commits; a fork of a fork reads
through each level.
"""

from __future__ import annotations

from datetime import datetime

import attrs
from sqlalchemy import Connection, bindparam, select

from . import tables
from .prepared import PreparedStatement, Row

__all__ = ["ForkRow", "chain_sessions", "fetch_fork", "in_chain", "insert_fork"]


@attrs.frozen
class ForkRow:
    """One ``forks`` row: ``session_id`` starts after ``fork_commit`` (``fork_seq``) of ``parent_session``."""

    session_id: str
    parent_session: str
    fork_commit: str
    fork_seq: int
    created_at: datetime


_COLUMNS = (
    tables.forks.c.session_id,
    tables.forks.c.parent_session,
    tables.forks.c.fork_commit,
    tables.forks.c.fork_seq,
    tables.forks.c.created_at,
)
_FORK = PreparedStatement(select(*_COLUMNS).where(tables.forks.c.session_id == bindparam("session_id")))


def _to_row(row: Row) -> ForkRow:
    session_id, parent, commit, seq, created = row
    return ForkRow(
        session_id=str(session_id),
        parent_session=str(parent),
        fork_commit=str(commit),
        fork_seq=int(seq),
        created_at=datetime.fromisoformat(str(created)),
    )


def fetch_fork(conn: Connection, session_id: str) -> ForkRow | None:
    """The fork row of ``session_id``, or None when it is not a fork."""
    row = _FORK.first(conn, {"session_id": session_id})
    return None if row is None else _to_row(row)


def insert_fork(conn: Connection, row: ForkRow) -> None:
    conn.execute(
        tables.forks.insert().values(
            session_id=row.session_id,
            parent_session=row.parent_session,
            fork_commit=row.fork_commit,
            fork_seq=row.fork_seq,
            created_at=row.created_at.isoformat(),
        )
    )


def chain_sessions(conn: Connection, session_id: str) -> dict[str, int | None]:
    """The sessions whose commits make up the chain of ``session_id``: each with the last ``seq`` it gives.

    ``None``: all of its commits (the session itself). An unforked session
    maps to itself alone.
    """
    found: dict[str, int | None] = {session_id: None}
    cutoff: int | None = None
    fork = fetch_fork(conn, session_id)
    while fork is not None and fork.parent_session not in found:
        cutoff = fork.fork_seq if cutoff is None else min(cutoff, fork.fork_seq)
        found[fork.parent_session] = cutoff
        fork = fetch_fork(conn, fork.parent_session)
    return found


def in_chain(conn: Connection, session_id: str, commit_session: str, commit_seq: int) -> bool:
    """Whether a commit (of ``commit_session``, at ``commit_seq``) is part of the chain of ``session_id``."""
    if commit_session == session_id:
        return True
    last = chain_sessions(conn, session_id).get(commit_session, -1)
    return last is not None and commit_seq <= last
