"""SQL for the bytes of message parts: one ``part_blobs`` row per digest, plain rows in and out.

A message blob names an image or document by its digest; the bytes live
here once, however many messages (and sessions) carry the same picture.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime

import attrs
from sqlalchemy import Connection, select

from . import tables
from .sql import insert_ignore

__all__ = ["PartBlob", "fetch_part_blobs", "put_part_blobs"]

_CHUNK = 500
"""Digests per ``IN (...)`` query: well under every driver's limit on bound values."""


@attrs.frozen
class PartBlob:
    """One stored payload: its media type and bytes."""

    digest: str
    media_type: str
    data: bytes = attrs.field(repr=False)


def put_part_blobs(conn: Connection, blobs: Iterable[PartBlob], created_at: datetime) -> None:
    """Store each payload once, inside ``conn``'s transaction; a digest already present is left as it is."""
    unique = {blob.digest: blob for blob in blobs}
    rows = [
        {
            "digest": blob.digest,
            "media_type": blob.media_type,
            "size_bytes": len(blob.data),
            "data": blob.data,
            "created_at": created_at.isoformat(),
        }
        for blob in unique.values()
    ]
    insert_ignore(conn, tables.part_blobs, rows)


def fetch_part_blobs(conn: Connection, digests: Iterable[str]) -> Mapping[str, PartBlob]:
    """The stored payloads among ``digests`` (a digest with no row is simply absent)."""
    wanted = sorted(set(digests))
    found: dict[str, PartBlob] = {}
    table = tables.part_blobs
    for start in range(0, len(wanted), _CHUNK):
        chunk = wanted[start : start + _CHUNK]
        query = select(table.c.digest, table.c.media_type, table.c.data).where(table.c.digest.in_(chunk))
        for digest, media_type, data in conn.execute(query):
            found[str(digest)] = PartBlob(str(digest), str(media_type), bytes(data))
    return found
