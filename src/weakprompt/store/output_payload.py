"""How a stored tool output's bytes are kept in ``tool_output_blobs``, written and read back.

A payload can be very large (a 100 MB log, a binary dump), so nothing here
makes a second full copy of it when it can be helped:

- it is compressed a piece at a time (zlib level 6), and kept as it is
  (``raw``) when the pieces show that compression does not save at least a
  tenth: random or already compressed data would only cost time to inflate;
- on SQLite a large payload is read through incremental blob I/O, straight
  into the one ``bytes`` object returned (a plain SELECT would have SQLite
  hold a copy of its own as well);
- reading checks the encoding, the size and the content hash; any mismatch
  is a :class:`~weakprompt.errors.StoreError`, never wrong data.
"""

from __future__ import annotations

import hashlib
import zlib
from datetime import datetime
from typing import Any

import attrs
from sqlalchemy import ClauseElement, Connection, Integer, bindparam, literal_column, null, select

from ..errors import StoreError
from . import tables
from .prepared import PreparedInsertIgnore, PreparedStatement

__all__ = [
    "ENCODINGS",
    "RAW_ENCODING",
    "ZLIB_ENCODING",
    "EncodedPayload",
    "encode_payload",
    "fetch_blob",
    "payload_hash",
    "put_output_blob",
]

ZLIB_ENCODING = "zlib"
RAW_ENCODING = "raw"
ENCODINGS = (ZLIB_ENCODING, RAW_ENCODING)

_LEVEL = 6
_PIECE = 1 << 20
"""Bytes compressed, written or hashed at a time."""
_WORTH_IT = 0.9
"""Compressed data is kept only when it is at most this fraction of the payload."""
_TOO_SMALL = 64
"""Payloads shorter than this are kept raw without trying: zlib's header, checksum and flush
markers take about a fifth of that, so compressing could save a few dozen bytes at most, and
most tool results of this size (a status line, a number) would not compress at all."""
_STREAMED = 1 << 16
"""On SQLite, payloads larger than this are read through blob I/O."""

_blobs = tables.tool_output_blobs


def payload_hash(data: bytes) -> str:
    """sha256 hex digest of the raw output bytes (the content address of the payload)."""
    digest = hashlib.sha256()
    view = memoryview(data)
    for start in range(0, len(view), _PIECE):
        digest.update(view[start : start + _PIECE])
    return digest.hexdigest()


@attrs.frozen
class EncodedPayload:
    """A payload ready to store: its encoding and the stored bytes.

    A ``raw`` payload's ``data`` is the payload itself (no copy); a
    ``zlib`` one's is the compressor's output, gathered in one growing
    buffer (bound as it is: no joined copy is made).
    """

    encoding: str
    size_bytes: int
    data: bytes | bytearray = attrs.field(repr=lambda data: f"<{len(data)} bytes>")

    @property
    def stored_bytes(self) -> int:
        return len(self.data)


def encode_payload(data: bytes) -> EncodedPayload:
    """``data`` compressed a piece at a time, or kept raw once compressing it is seen not to pay."""
    size = len(data)
    if size < _TOO_SMALL:
        return EncodedPayload(RAW_ENCODING, size, data)
    view = memoryview(data)
    compressor = zlib.compressobj(_LEVEL)
    out = bytearray()
    for start in range(0, size, _PIECE):
        end = min(size, start + _PIECE)
        out += compressor.compress(view[start:end])
        # A sync flush per piece costs a few bytes and shows how far compression has really got.
        out += compressor.flush(zlib.Z_SYNC_FLUSH)
        if len(out) > _WORTH_IT * end:  # not paying so far: stop spending time on it
            return EncodedPayload(RAW_ENCODING, size, data)
    out += compressor.flush()
    if len(out) > _WORTH_IT * size:  # small payloads: the zlib header alone may not pay
        return EncodedPayload(RAW_ENCODING, size, data)
    return EncodedPayload(ZLIB_ENCODING, size, out)


# -- writing ----------------------------------------------------------------------------------------

_PUT_BLOB = PreparedInsertIgnore(
    _blobs, ("hash", "data", "encoding", "size_bytes", "stored_bytes", "created_at")
)


def put_output_blob(conn: Connection, blob_hash: str, payload: EncodedPayload, created_at: datetime) -> None:
    """Store one encoded payload; a hash already present is left as it is.

    The stored bytes are bound as one value: SQLite copies a bound value
    once more while it builds the row (incremental blob I/O would not
    help: a zero-filled placeholder in a column other than the last is
    built in memory just the same), so a large payload that does not
    compress costs about two copies inside SQLite while it is written.
    """
    row: dict[str, object] = {
        "hash": blob_hash,
        "data": payload.data,
        "encoding": payload.encoding,
        "size_bytes": payload.size_bytes,
        "stored_bytes": payload.stored_bytes,
        "created_at": created_at.isoformat(),
    }
    _PUT_BLOB.executemany(conn, [row])


# -- reading ----------------------------------------------------------------------------------------


def _blob_row(dialect: str) -> ClauseElement:
    # SQLite also gives the rowid, which incremental blob I/O needs.
    rowid = literal_column("rowid", Integer) if dialect == "sqlite" else null()
    columns = (_blobs.c.encoding, _blobs.c.size_bytes, _blobs.c.stored_bytes, rowid)
    return select(*columns).where(_blobs.c.hash == bindparam("hash"))


_BLOB_ROW = PreparedStatement(_blob_row)
_BLOB_DATA = PreparedStatement(select(_blobs.c.data).where(_blobs.c.hash == bindparam("hash")))


def _stored_bytes(conn: Connection, blob_hash: str, stored_bytes: int, rowid: int | None) -> bytes:
    """The stored bytes of the row (``stored_bytes`` only picks how they are read)."""
    if rowid is not None and stored_bytes > _STREAMED:
        # One read straight into the bytes object returned: SQLite keeps no copy of its own.
        driver: Any = conn.connection.driver_connection  # the sqlite3.Connection in this transaction
        with driver.blobopen(_blobs.name, "data", rowid, readonly=True) as blob:
            return bytes(blob.read())
    found = _BLOB_DATA.first(conn, {"hash": blob_hash})
    return b"" if found is None else bytes(found[0])


def fetch_blob(conn: Connection, blob_hash: str) -> bytes:
    """The payload stored under ``blob_hash``, decoded and checked against its size and hash."""
    found = _BLOB_ROW.first(conn, {"hash": blob_hash})
    what = f"stored tool output {blob_hash[:12]}"
    if found is None:
        raise StoreError(f"{what} is missing its payload: the store is damaged")
    encoding, size, stored_bytes = str(found[0]), int(found[1]), int(found[2])
    rowid = None if found[3] is None else int(found[3])
    if encoding not in ENCODINGS:
        raise StoreError(f"{what} uses unknown encoding {encoding!r}")
    data = _stored_bytes(conn, blob_hash, stored_bytes, rowid)
    if encoding == ZLIB_ENCODING:
        try:
            # An output buffer of exactly the recorded size is handed back as it is, not copied.
            data = zlib.decompress(data, bufsize=max(size, 1))
        except zlib.error as exc:
            raise StoreError(f"{what} cannot be decompressed: {exc}") from exc
    if len(data) != size:
        raise StoreError(f"{what} has {len(data)} bytes, the store recorded {size}")
    if payload_hash(data) != blob_hash:
        raise StoreError(f"{what} does not match its content hash: the store is damaged")
    return data
