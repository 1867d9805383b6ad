"""Stored tool outputs of a session: the list, one output with its extractions, and its full
payload streamed a piece at a time (never read whole into memory).

A payload is checked before its first byte is sent: it is inflated and
hashed piece by piece, and any mismatch (an unknown encoding, data that
does not inflate, a wrong size or hash) is a :class:`DamagedOutput`, so a
damaged row gets an error page instead of a response that stops halfway.
"""

from __future__ import annotations

import hashlib
import re
import zlib
from collections.abc import Iterator
from typing import Any, cast

import attrs
from sqlalchemy import Connection, Integer, func, literal_column, select, text

from ..runtime.results.extraction import EXTRACTION_KEY
from ..store import Store, tables
from ..store.output_record import ToolResultMetadata
from ..transcript.shaped import TOOL_OUTPUT_NAME
from ._json import as_object, as_str, load_object

__all__ = [
    "DamagedOutput",
    "OutputDetail",
    "OutputExtraction",
    "OutputListing",
    "check_payload",
    "list_outputs",
    "load_output",
    "stream_payload",
]

_PIECE = 1 << 20
_outputs = tables.tool_outputs
_blobs = tables.tool_output_blobs


class DamagedOutput(Exception):
    """A stored payload that cannot be read back as it was stored."""


@attrs.frozen
class OutputListing:
    outputs: tuple[ToolResultMetadata, ...]
    total: int
    offset: int
    limit: int


@attrs.frozen
class OutputExtraction:
    """A ``tool_output`` call of the session that asked about this output."""

    commit_hash: str
    seq: int
    created_at: str
    strategy: str
    fallback_reason: str | None
    answer: str


@attrs.frozen
class OutputDetail:
    record: ToolResultMetadata
    encoding: str
    stored_bytes: int
    extractions: tuple[OutputExtraction, ...]


def _record(row: Any) -> ToolResultMetadata:
    return ToolResultMetadata(
        session_id=str(row.session_id),
        seq=int(row.seq),
        tool_call_id=str(row.tool_call_id),
        tool_name=str(row.tool_name),
        arguments=str(row.arguments),
        handle=str(row.handle),
        stored_hash=str(row.blob_hash),
        size_bytes=int(row.size_bytes),
        lines=int(row.lines),
        tokens=int(row.tokens),
        is_error=bool(row.is_error),
        oversized=bool(row.oversized),
        summary=str(row.summary),
        preview=str(row.preview),
        created_at=_time(row.created_at),
    )


def _time(value: object) -> Any:
    from datetime import datetime

    try:
        return datetime.fromisoformat(str(value))
    except ValueError:
        return datetime.fromtimestamp(0)


def list_outputs(store: Store, session_id: str, *, offset: int = 0, limit: int = 100) -> OutputListing:
    """The session's stored outputs in the order they were stored (rows only: no payload is read)."""
    with store.read() as conn:
        total = conn.execute(
            select(func.count()).select_from(_outputs).where(_outputs.c.session_id == session_id)
        ).scalar_one()
        rows = conn.execute(
            select(_outputs)
            .where(_outputs.c.session_id == session_id)
            .order_by(_outputs.c.seq)
            .offset(offset)
            .limit(limit)
        ).all()
    return OutputListing(
        outputs=tuple(_record(r) for r in rows), total=int(total), offset=offset, limit=limit
    )


_TOOL_OUTPUT_REPLIES = text(
    "SELECT c.hash, c.seq, c.created_at, c.metadata_json, b.content FROM commits c "
    "JOIN blobs b ON b.hash = c.blob_hash "
    "WHERE c.session_id = :session AND c.role = 'tool' AND c.message = :message ORDER BY c.seq"
)
_HEADER = re.compile(
    r"^(?:ABSTRACT FROM TOOL OUTPUT|TOOL_OUTPUT FAILED FOR) .* WITH HANDLE (\S+), STRATEGY:([^:\n]*):"
)


def load_output(store: Store, session_id: str, seq: int) -> OutputDetail | None:
    """One stored output's row, how its payload is kept, and every extraction that asked about it."""
    with store.read() as conn:
        row = conn.execute(
            select(_outputs).where(_outputs.c.session_id == session_id, _outputs.c.seq == seq)
        ).first()
        if row is None:
            return None
        record = _record(row)
        blob = conn.execute(
            select(_blobs.c.encoding, _blobs.c.stored_bytes).where(_blobs.c.hash == record.stored_hash)
        ).first()
        extractions = _extractions(conn, session_id, record.handle)
    return OutputDetail(
        record=record,
        encoding="missing" if blob is None else str(blob[0]),
        stored_bytes=0 if blob is None else int(blob[1]),
        extractions=extractions,
    )


def _extractions(conn: Connection, session_id: str, handle: str) -> tuple[OutputExtraction, ...]:
    found: list[OutputExtraction] = []
    message = f"tool result: {TOOL_OUTPUT_NAME}"
    for commit_hash, seq, created_at, metadata, content in conn.execute(
        _TOOL_OUTPUT_REPLIES, {"session": session_id, "message": message}
    ):
        reply = as_str(load_object(content).get("content")) or ""
        match = _HEADER.match(reply)
        if match is None or match.group(1) != handle:
            continue
        outcome = as_object(load_object(metadata).get(EXTRACTION_KEY))
        answer = reply.split("\n\n", 1)[1] if "\n\n" in reply else ""
        found.append(
            OutputExtraction(
                commit_hash=str(commit_hash),
                seq=int(seq),
                created_at=str(created_at),
                strategy=as_str(outcome.get("strategy")) or match.group(2),
                fallback_reason=as_str(outcome.get("fallback_reason")),
                answer=answer,
            )
        )
    return tuple(found)


# -- the payload ------------------------------------------------------------------------------------


@attrs.frozen
class _BlobInfo:
    blob_hash: str
    encoding: str
    size_bytes: int
    stored_bytes: int
    rowid: int | None


def _blob_info(conn: Connection, blob_hash: str) -> _BlobInfo:
    rowid = literal_column("rowid" if conn.dialect.name == "sqlite" else "NULL", Integer)
    found = conn.execute(
        select(_blobs.c.encoding, _blobs.c.size_bytes, _blobs.c.stored_bytes, rowid).where(
            _blobs.c.hash == blob_hash
        )
    ).first()
    if found is None:
        raise DamagedOutput(f"the payload {blob_hash[:12]} is missing from tool_output_blobs")
    rowid_value = cast("int | None", found[3])  # NULL off SQLite
    return _BlobInfo(
        blob_hash,
        str(found[0]),
        int(found[1]),
        int(found[2]),
        rowid_value,
    )


def _stored_pieces(store: Store, info: _BlobInfo) -> Iterator[bytes]:
    """The stored bytes, a piece per short read transaction (SQLite: incremental blob I/O)."""
    for start in range(0, info.stored_bytes, _PIECE):
        with store.read() as conn:
            if info.rowid is not None:
                driver: Any = conn.connection.driver_connection
                with driver.blobopen(_blobs.name, "data", info.rowid, readonly=True) as blob:
                    piece = b""
                    if start < len(blob):
                        blob.seek(start)
                        piece = bytes(blob.read(_PIECE))
            else:
                query = select(func.substr(_blobs.c.data, start + 1, _PIECE)).where(
                    _blobs.c.hash == info.blob_hash
                )
                value = conn.execute(query).scalar()
                piece = b"" if value is None else bytes(value)
        if not piece:
            raise DamagedOutput(
                f"the payload {info.blob_hash[:12]} ends before its recorded {info.stored_bytes} bytes"
            )
        yield piece


def _payload_pieces(store: Store, info: _BlobInfo) -> Iterator[bytes]:
    """The payload's own bytes, inflated a bounded piece at a time."""
    if info.encoding == "raw":
        yield from _stored_pieces(store, info)
        return
    if info.encoding != "zlib":
        raise DamagedOutput(f"the payload {info.blob_hash[:12]} uses an unknown encoding {info.encoding!r}")
    inflate = zlib.decompressobj()
    try:
        for piece in _stored_pieces(store, info):
            out = inflate.decompress(piece, _PIECE)
            while out:
                yield out
                out = inflate.decompress(inflate.unconsumed_tail, _PIECE) if inflate.unconsumed_tail else b""
        rest = inflate.flush()
    except zlib.error as exc:
        raise DamagedOutput(f"the payload {info.blob_hash[:12]} cannot be decompressed: {exc}") from exc
    yield rest  # usually empty: every piece was inflated as it came
    if not inflate.eof:
        raise DamagedOutput(
            f"the payload {info.blob_hash[:12]} is cut short: its compressed data does not end"
        )


def check_payload(store: Store, record: ToolResultMetadata) -> None:
    """Read the payload once, a piece at a time, checking size and hash (else :class:`DamagedOutput`)."""
    with store.read() as conn:
        info = _blob_info(conn, record.stored_hash)
    digest = hashlib.sha256()
    size = 0
    for piece in _payload_pieces(store, info):
        size += len(piece)
        if size > info.size_bytes:
            break
        digest.update(piece)
    if size != info.size_bytes:
        raise DamagedOutput(
            f"the payload {info.blob_hash[:12]} holds {size}+ bytes, the store recorded {info.size_bytes}"
        )
    if digest.hexdigest() != info.blob_hash:
        raise DamagedOutput(f"the payload {info.blob_hash[:12]} does not match its content hash")


def stream_payload(store: Store, record: ToolResultMetadata) -> Iterator[bytes]:
    """The payload, a piece at a time (call :func:`check_payload` first: this one only reads)."""
    with store.read() as conn:
        info = _blob_info(conn, record.stored_hash)
    yield from _payload_pieces(store, info)
