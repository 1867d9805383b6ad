"""SQL for stored tool outputs: :class:`ToolResultMetadata` records in and out, no policy.

Payloads live once per content hash in ``tool_output_blobs`` (how their
bytes are encoded, written and read is :mod:`.output_payload`);
``tool_outputs`` has one small row per stored call, ordered per session by
``seq``. A session's rows can be deleted, and payloads no row refers to any
more are deleted with them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

import attrs
from sqlalchemy import Connection, bindparam, delete, exists, func, select, update

from . import tables
from .locks import advisory_lock
from .output_record import ToolResultMetadata
from .prepared import PreparedStatement

__all__ = [
    "blob_exists",
    "delete_orphan_blobs",
    "delete_outputs",
    "find_by_call",
    "find_by_handle",
    "has_oversized",
    "lock_output_blob",
    "insert_output",
    "known_call_ids",
    "list_outputs",
    "mark_oversized",
    "next_output_seq",
    "write_state",
    "WriteState",
]

_outputs = tables.tool_outputs
_blobs = tables.tool_output_blobs
_BATCH = 500  # bound parameters per IN (...) list


def lock_output_blob(conn: Connection, blob_hash: str) -> None:
    """Hold the payload ``blob_hash`` until the transaction ends (PostgreSQL; SQLite writers run alone).

    Storing a call that reuses a payload and deleting that payload as an
    orphan must not interleave, or the new row would point at nothing.
    """
    advisory_lock(conn, f"tool_output_blob:{blob_hash}")


# The statements run for every stored tool result are prepared (see weakprompt.store.prepared).
_BLOB_EXISTS = PreparedStatement(select(_blobs.c.hash).where(_blobs.c.hash == bindparam("hash")))
_COLUMNS = tuple(c.name for c in _outputs.columns)
_INSERT_OUTPUT = PreparedStatement(_outputs.insert(), columns=_COLUMNS)
_NEXT_SEQ = PreparedStatement(
    select(func.max(_outputs.c.seq)).where(_outputs.c.session_id == bindparam("session_id"))
)
# No ORDER BY: sorting by seq would have SQLite walk the session's rows in seq order (the
# primary key) looking for the call, one row per stored call; without it the (session_id,
# tool_call_id) index finds the call's rows directly, and the newest is picked here.
_FIND_BY_CALL = PreparedStatement(
    select(*_outputs.columns).where(
        _outputs.c.session_id == bindparam("session_id"), _outputs.c.tool_call_id == bindparam("call_id")
    )
)
_SEQ = _COLUMNS.index("seq")
_HAS_OVERSIZED = PreparedStatement(
    select(_outputs.c.seq)
    .where(_outputs.c.session_id == bindparam("session_id"), _outputs.c.oversized.is_(True))
    .limit(1)
)


@attrs.frozen
class WriteState:
    """What storing one call needs to know first, read in one statement."""

    call_stored: bool  # the session already has a row for this call id
    next_seq: int
    blob_stored: bool  # the payload is already stored (by any session)


# One statement instead of three: each statement run costs more than the keyed lookups in it.
_IN_SESSION = _outputs.c.session_id == bindparam("session_id")
_WRITE_STATE = PreparedStatement(
    select(
        select(_outputs.c.seq)
        .where(_IN_SESSION, _outputs.c.tool_call_id == bindparam("call_id"))
        .limit(1)
        .scalar_subquery(),
        select(func.max(_outputs.c.seq)).where(_IN_SESSION).scalar_subquery(),
        exists().where(_blobs.c.hash == bindparam("hash")),
    )
)


def write_state(conn: Connection, session_id: str, tool_call_id: str, blob_hash: str) -> WriteState:
    """Whether the call and the payload are stored already, and the session's next ``seq``."""
    found = _WRITE_STATE.first(conn, {"session_id": session_id, "call_id": tool_call_id, "hash": blob_hash})
    call_seq, last, blob = (None, None, False) if found is None else found
    next_seq = 0 if last is None else int(last) + 1
    return WriteState(call_stored=call_seq is not None, next_seq=next_seq, blob_stored=bool(blob))


def blob_exists(conn: Connection, blob_hash: str) -> bool:
    return _BLOB_EXISTS.first(conn, {"hash": blob_hash}) is not None


def next_output_seq(conn: Connection, session_id: str) -> int:
    found = _NEXT_SEQ.first(conn, {"session_id": session_id})
    last = None if found is None else found[0]
    return 0 if last is None else int(last) + 1


def mark_oversized(conn: Connection, session_id: str, seq: int) -> None:
    condition = (_outputs.c.session_id == session_id) & (_outputs.c.seq == seq)
    conn.execute(update(_outputs).where(condition).values(oversized=True))


def insert_output(conn: Connection, row: ToolResultMetadata) -> None:
    values = {  # every column; ``deduplicated`` is what one store call found, not a column
        "session_id": row.session_id,
        "seq": row.seq,
        "tool_call_id": row.tool_call_id,
        "handle": row.handle,
        "blob_hash": row.stored_hash,
        "tool_name": row.tool_name,
        "arguments": row.arguments,
        "size_bytes": row.size_bytes,
        "lines": row.lines,
        "tokens": row.tokens,
        "is_error": row.is_error,
        "oversized": row.oversized,
        "summary": row.summary,
        "preview": row.preview,
        "created_at": row.created_at.isoformat(),
    }
    _INSERT_OUTPUT.executemany(conn, [values])


def _row(mapping: Mapping[Any, Any]) -> ToolResultMetadata:
    return ToolResultMetadata(
        session_id=str(mapping["session_id"]),
        seq=int(mapping["seq"]),
        tool_call_id=str(mapping["tool_call_id"]),
        handle=str(mapping["handle"]),
        stored_hash=str(mapping["blob_hash"]),
        tool_name=str(mapping["tool_name"]),
        arguments=str(mapping["arguments"]),
        size_bytes=int(mapping["size_bytes"]),
        lines=int(mapping["lines"]),
        tokens=int(mapping["tokens"]),
        is_error=bool(mapping["is_error"]),
        oversized=bool(mapping["oversized"]),
        summary=str(mapping["summary"]),
        preview=str(mapping["preview"]),
        created_at=datetime.fromisoformat(str(mapping["created_at"])),
    )


def find_by_call(conn: Connection, session_id: str, tool_call_id: str) -> ToolResultMetadata | None:
    """The newest row of ``tool_call_id`` in the session (ids are meant to be unique; the last wins)."""
    found = _FIND_BY_CALL.all(conn, {"session_id": session_id, "call_id": tool_call_id})
    if not found:
        return None
    newest = max(found, key=lambda row: int(row[_SEQ]))
    return _row(dict(zip(_COLUMNS, newest, strict=True)))


def find_by_handle(conn: Connection, session_id: str, handle: str) -> ToolResultMetadata | None:
    """The first call of the session that stored the output behind ``handle``."""
    # As in find_by_call: no ORDER BY, so the (session_id, handle) index is used; the oldest is picked here.
    query = select(_outputs).where(_outputs.c.session_id == session_id, _outputs.c.handle == handle)
    found = conn.execute(query).mappings().all()
    return None if not found else _row(min(found, key=lambda row: int(row["seq"])))


def list_outputs(conn: Connection, session_id: str) -> list[ToolResultMetadata]:
    query = select(_outputs).where(_outputs.c.session_id == session_id).order_by(_outputs.c.seq)
    return [_row(m) for m in conn.execute(query).mappings()]


def has_oversized(conn: Connection, session_id: str) -> bool:
    return _HAS_OVERSIZED.first(conn, {"session_id": session_id}) is not None


def known_call_ids(conn: Connection, session_id: str, limit: int) -> list[str]:
    """Up to ``limit`` tool_call_ids of the session, newest first, without repeats."""
    query = (
        select(_outputs.c.tool_call_id, func.max(_outputs.c.seq).label("last"))
        .where(_outputs.c.session_id == session_id)
        .group_by(_outputs.c.tool_call_id)
        .order_by(func.max(_outputs.c.seq).desc())
        .limit(limit)
    )
    return [str(r[0]) for r in conn.execute(query)]


def delete_outputs(
    conn: Connection, session_id: str, seqs: Iterable[int] | None = None
) -> tuple[int, set[str]]:
    """Delete the session's rows (all, or those with the given ``seqs``).

    Returns how many rows went and the payload hashes they referred to.
    """
    session = _outputs.c.session_id == session_id
    if seqs is None:
        batches = [session]
    else:
        wanted = sorted(set(seqs))
        batches = [
            session & _outputs.c.seq.in_(wanted[i : i + _BATCH]) for i in range(0, len(wanted), _BATCH)
        ]
    removed = 0
    hashes: set[str] = set()
    for condition in batches:
        hashes.update(str(h) for h in conn.execute(select(_outputs.c.blob_hash).where(condition)).scalars())
        removed += conn.execute(delete(_outputs).where(condition)).rowcount
    return removed, hashes


def delete_orphan_blobs(conn: Connection, hashes: Iterable[str]) -> int:
    """Delete those payloads no row refers to any more; returns how many went."""
    candidates = sorted(set(hashes))
    removed = 0
    for start in range(0, len(candidates), _BATCH):
        batch = candidates[start : start + _BATCH]
        for blob_hash in batch:  # sorted: concurrent purges take these locks in one order
            lock_output_blob(conn, blob_hash)
        used = {
            str(h)
            for h in conn.execute(
                select(_outputs.c.blob_hash).where(_outputs.c.blob_hash.in_(batch)).distinct()
            ).scalars()
        }
        orphans = [h for h in batch if h not in used]
        if orphans:
            conn.execute(delete(_blobs).where(_blobs.c.hash.in_(orphans)))
            removed += len(orphans)
    return removed
