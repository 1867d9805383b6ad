"""SQL for blobs and commits; plain rows in and out, no transcript logic."""

from __future__ import annotations

import json
from datetime import datetime

import attrs
from sqlalchemy import Connection, RowMapping, select
from sqlalchemy.exc import IntegrityError

from ..jsontypes import JSONObject, JSONValue
from . import tables

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
    exists = conn.execute(select(tables.blobs.c.hash).where(tables.blobs.c.hash == blob_hash)).first()
    if exists is not None:
        return
    try:
        with conn.begin_nested():
            conn.execute(
                tables.blobs.insert().values(
                    hash=blob_hash,
                    content=canonical,
                    size_bytes=len(canonical.encode("utf-8")),
                    created_at=created_at.isoformat(),
                )
            )
    except IntegrityError:  # pragma: no cover - another writer stored it between select and insert
        pass


def insert_commit(conn: Connection, row: CommitRow) -> None:
    conn.execute(
        tables.commits.insert().values(
            hash=row.hash,
            session_id=row.session_id,
            seq=row.seq,
            parent_hash=row.parent_hash,
            operation=row.operation,
            edit_target=row.edit_target,
            role=row.role,
            blob_hash=row.blob_hash,
            message=row.message,
            metadata_json=json.dumps(row.metadata, sort_keys=True, separators=(",", ":"), ensure_ascii=False),
            token_count=row.token_count,
            created_at=row.created_at.isoformat(),
        )
    )


def session_head(conn: Connection, session_id: str) -> tuple[str, int] | None:
    """``(hash, seq)`` of the newest commit of the session, or None if it has none."""
    c = tables.commits.c
    row = conn.execute(
        select(c.hash, c.seq).where(c.session_id == session_id).order_by(c.seq.desc()).limit(1)
    ).first()
    return None if row is None else (str(row.hash), int(row.seq))


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


def _select_commits():  # pyright infers the Select type
    return select(*_COMMIT_COLUMNS).join(tables.blobs, tables.blobs.c.hash == tables.commits.c.blob_hash)


def _to_row(m: RowMapping) -> CommitRow:
    metadata: JSONValue = json.loads(str(m["metadata_json"]))
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
    row = conn.execute(_select_commits().where(tables.commits.c.hash == commit_hash)).mappings().first()
    return None if row is None else _to_row(row)


def fetch_commits(conn: Connection, session_id: str, *, after_seq: int = -1) -> list[CommitRow]:
    """The session's commits with ``seq > after_seq``, oldest first (uses the (session, seq) index)."""
    c = tables.commits.c
    query = _select_commits().where(c.session_id == session_id, c.seq > after_seq).order_by(c.seq)
    return [_to_row(r) for r in conn.execute(query).mappings()]
