"""SQL for blobs and commits; plain rows in and out, no transcript logic.

The statements here run on every commit and every compile, so they are
prepared (:mod:`weakprompt.store.prepared`) and take several rows at once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

import attrs
from sqlalchemy import Connection, bindparam, select

from ..canonical import canonical_json, parse_canonical_json
from ..jsontypes import JSONObject, JSONValue
from . import tables
from .fork_rows import fetch_fork
from .prepared import PreparedInsertIgnore, PreparedStatement, Row

__all__ = [
    "CommitRow",
    "blob_params",
    "commit_params",
    "fetch_commit",
    "fetch_commits",
    "insert_commits",
    "metadata_json",
    "put_blob",
    "put_blobs",
    "session_head",
]


@attrs.frozen
class CommitRow:
    """One ``commits`` row with its blob's decoded JSON content."""

    hash: str
    session_id: str
    seq: int
    parent_hash: str | None
    operation: str
    edit_target: str | None
    role: str
    blob_hash: str
    content: JSONValue
    message: str | None
    metadata: JSONObject
    token_count: int
    created_at: datetime


_BLOB_COLUMNS = ("hash", "content", "size_bytes", "created_at")
_PUT_BLOBS = PreparedInsertIgnore(tables.blobs, _BLOB_COLUMNS)


def blob_params(blob_hash: str, canonical: str, created_at: datetime) -> dict[str, object]:
    """The ``blobs`` row of one content-addressed blob."""
    return {
        "hash": blob_hash,
        "content": canonical,
        "size_bytes": len(canonical.encode("utf-8")),
        "created_at": created_at.isoformat(),
    }


def put_blob(conn: Connection, blob_hash: str, canonical: str, created_at: datetime) -> None:
    """Store a blob once; a hash already present is left as it is."""
    _PUT_BLOBS.executemany(conn, [blob_params(blob_hash, canonical, created_at)])


def put_blobs(conn: Connection, rows: Sequence[Mapping[str, object]]) -> None:
    """Store several blobs (rows from :func:`blob_params`) in one statement; duplicates are skipped."""
    unique = list({str(r["hash"]): r for r in rows}.values())
    _PUT_BLOBS.executemany(conn, unique)


_COMMIT_COLUMNS_WRITTEN = (
    "hash",
    "session_id",
    "seq",
    "parent_hash",
    "operation",
    "edit_target",
    "role",
    "blob_hash",
    "message",
    "metadata_json",
    "token_count",
    "created_at",
)
_INSERT_COMMITS = PreparedStatement(tables.commits.insert(), columns=_COMMIT_COLUMNS_WRITTEN)


def metadata_json(metadata: JSONObject) -> str:
    """How commit metadata is stored: canonical JSON (lone surrogates escaped, see weakprompt.canonical)."""
    return canonical_json(metadata)


def commit_params(row: CommitRow, metadata_text: str | None = None) -> dict[str, object]:
    """The ``commits`` row of ``row``; pass ``metadata_text`` when its canonical JSON is at hand."""
    return {
        "hash": row.hash,
        "session_id": row.session_id,
        "seq": row.seq,
        "parent_hash": row.parent_hash,
        "operation": row.operation,
        "edit_target": row.edit_target,
        "role": row.role,
        "blob_hash": row.blob_hash,
        "message": row.message,
        "metadata_json": metadata_json(row.metadata) if metadata_text is None else metadata_text,
        "token_count": row.token_count,
        "created_at": row.created_at.isoformat(),
    }


def insert_commits(conn: Connection, rows: Sequence[Mapping[str, object]]) -> None:
    """Insert commit rows (from :func:`commit_params`) in one statement, in the order given."""
    _INSERT_COMMITS.executemany(conn, rows)


_HEAD = PreparedStatement(
    select(tables.commits.c.hash, tables.commits.c.seq)
    .where(tables.commits.c.session_id == bindparam("session_id"))
    .order_by(tables.commits.c.seq.desc())
    .limit(1)
)


def session_head(conn: Connection, session_id: str) -> tuple[str, int] | None:
    """``(hash, seq)`` of the newest commit of the session, or None if it has none.

    A fork with no commit of its own yet has its fork commit as head.
    """
    row = _HEAD.first(conn, {"session_id": session_id})
    if row is not None:
        return str(row[0]), int(row[1])
    fork = fetch_fork(conn, session_id)
    return None if fork is None else (fork.fork_commit, fork.fork_seq)


_COMMIT_COLUMNS = (
    tables.commits.c.hash,
    tables.commits.c.session_id,
    tables.commits.c.seq,
    tables.commits.c.parent_hash,
    tables.commits.c.operation,
    tables.commits.c.edit_target,
    tables.commits.c.role,
    tables.commits.c.blob_hash,
    tables.commits.c.message,
    tables.commits.c.metadata_json,
    tables.commits.c.token_count,
    tables.commits.c.created_at,
    tables.blobs.c.content,
)


_SELECT_COMMITS = select(*_COMMIT_COLUMNS).join(
    tables.blobs, tables.blobs.c.hash == tables.commits.c.blob_hash
)
_COMMIT_BY_HASH = PreparedStatement(_SELECT_COMMITS.where(tables.commits.c.hash == bindparam("hash")))
_COMMITS_AFTER = PreparedStatement(
    _SELECT_COMMITS.where(
        tables.commits.c.session_id == bindparam("session_id"), tables.commits.c.seq > bindparam("after_seq")
    ).order_by(tables.commits.c.seq)
)


def _to_row(m: Row) -> CommitRow:
    """Decode one row of ``_COMMIT_COLUMNS`` (in that order)."""
    (
        hash_,
        session_id,
        seq,
        parent,
        operation,
        target,
        role,
        blob_hash,
        message,
        meta,
        tokens,
        created,
        content,
    ) = m
    raw_metadata = str(meta)
    metadata: JSONValue = {} if raw_metadata == "{}" else parse_canonical_json(raw_metadata)
    return CommitRow(
        hash=str(hash_),
        session_id=str(session_id),
        seq=int(seq),
        parent_hash=None if parent is None else str(parent),
        operation=str(operation),
        edit_target=None if target is None else str(target),
        role=str(role),
        blob_hash=str(blob_hash),
        content=parse_canonical_json(str(content)),
        message=None if message is None else str(message),
        metadata=metadata if isinstance(metadata, dict) else {},
        token_count=int(tokens),
        created_at=datetime.fromisoformat(str(created)),
    )


def fetch_commit(conn: Connection, commit_hash: str) -> CommitRow | None:
    row = _COMMIT_BY_HASH.first(conn, {"hash": commit_hash})
    return None if row is None else _to_row(row)


def fetch_commits(conn: Connection, session_id: str, *, after_seq: int = -1) -> list[CommitRow]:
    """The session's chain with ``seq > after_seq``, oldest first (uses the (session, seq) index).

    A fork's chain holds its parent's commits up to the fork commit, then its own.
    Its own commits start after that ``seq``; so, since a session's ``seq`` has no
    gaps, only a chain whose own commits do not start right after ``after_seq``
    can be a fork, and only then is the fork row asked for.
    """
    own = [_to_row(r) for r in _COMMITS_AFTER.all(conn, {"session_id": session_id, "after_seq": after_seq})]
    if own and own[0].seq == after_seq + 1:
        return own
    fork = fetch_fork(conn, session_id)
    if fork is None or fork.fork_seq <= after_seq:
        return own
    shared = fetch_commits(conn, fork.parent_session, after_seq=after_seq)
    return [row for row in shared if row.seq <= fork.fork_seq] + own
