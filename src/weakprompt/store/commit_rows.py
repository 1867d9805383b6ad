"""SQL for blobs and commits; plain rows in and out, no transcript logic."""

from __future__ import annotations

import json
from datetime import datetime

import attrs
from sqlalchemy import Connection, RowMapping, bindparam, select

from ..jsontypes import JSONObject, JSONValue
from . import tables
from .sql import insert_ignore

__all__ = [
    "CommitRow",
    "fetch_commit",
    "fetch_commits",
    "insert_commit",
    "put_blob",
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


def put_blob(conn: Connection, blob_hash: str, canonical: str, created_at: datetime) -> None:
    """Store a blob once; a hash already present is left as it is."""
    row = {
        "hash": blob_hash,
        "content": canonical,
        "size_bytes": len(canonical.encode("utf-8")),
        "created_at": created_at.isoformat(),
    }
    insert_ignore(conn, tables.blobs, [row])


_INSERT_COMMIT = tables.commits.insert()


def insert_commit(conn: Connection, row: CommitRow) -> None:
    conn.execute(
        _INSERT_COMMIT,
        {
            "hash": row.hash,
            "session_id": row.session_id,
            "seq": row.seq,
            "parent_hash": row.parent_hash,
            "operation": row.operation,
            "edit_target": row.edit_target,
            "role": row.role,
            "blob_hash": row.blob_hash,
            "message": row.message,
            "metadata_json": json.dumps(
                row.metadata, sort_keys=True, separators=(",", ":"), ensure_ascii=False
            ),
            "token_count": row.token_count,
            "created_at": row.created_at.isoformat(),
        },
    )


_HEAD = (
    select(tables.commits.c.hash, tables.commits.c.seq)
    .where(tables.commits.c.session_id == bindparam("session_id"))
    .order_by(tables.commits.c.seq.desc())
    .limit(1)
)


def session_head(conn: Connection, session_id: str) -> tuple[str, int] | None:
    """``(hash, seq)`` of the newest commit of the session, or None if it has none."""
    row = conn.execute(_HEAD, {"session_id": session_id}).first()
    return None if row is None else (str(row[0]), int(row[1]))


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
_COMMIT_BY_HASH = _SELECT_COMMITS.where(tables.commits.c.hash == bindparam("hash"))
_COMMITS_AFTER = _SELECT_COMMITS.where(
    tables.commits.c.session_id == bindparam("session_id"), tables.commits.c.seq > bindparam("after_seq")
).order_by(tables.commits.c.seq)


def _to_row(m: RowMapping) -> CommitRow:
    raw_metadata = str(m["metadata_json"])
    metadata: JSONValue = {} if raw_metadata == "{}" else json.loads(raw_metadata)
    return CommitRow(
        hash=str(m["hash"]),
        session_id=str(m["session_id"]),
        seq=int(m["seq"]),
        parent_hash=None if m["parent_hash"] is None else str(m["parent_hash"]),
        operation=str(m["operation"]),
        edit_target=None if m["edit_target"] is None else str(m["edit_target"]),
        role=str(m["role"]),
        blob_hash=str(m["blob_hash"]),
        content=json.loads(str(m["content"])),
        message=None if m["message"] is None else str(m["message"]),
        metadata=metadata if isinstance(metadata, dict) else {},
        token_count=int(m["token_count"]),
        created_at=datetime.fromisoformat(str(m["created_at"])),
    )


def fetch_commit(conn: Connection, commit_hash: str) -> CommitRow | None:
    row = conn.execute(_COMMIT_BY_HASH, {"hash": commit_hash}).mappings().first()
    return None if row is None else _to_row(row)


def fetch_commits(conn: Connection, session_id: str, *, after_seq: int = -1) -> list[CommitRow]:
    """The session's commits with ``seq > after_seq``, oldest first (uses the (session, seq) index)."""
    rows = conn.execute(_COMMITS_AFTER, {"session_id": session_id, "after_seq": after_seq})
    return [_to_row(r) for r in rows.mappings().all()]
