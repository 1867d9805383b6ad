"""The store side of message parts: the payloads a write stores, and the bytes a read loads back.

Apart from :mod:`~weakprompt.transcript.records` and
:mod:`~weakprompt.transcript.part_codec`, which code reading commits imports
without loading the store (SQLAlchemy).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from sqlalchemy import Connection

from ..jsontypes import JSONValue
from ..parts import BinaryPart, Part
from ..store.commit_rows import CommitRow
from ..store.part_blob_rows import PartBlob, fetch_part_blobs
from .part_codec import PartBlobs, payload_digests
from .records import CommitInfo, commit_info

__all__ = ["commit_infos", "load_part_blobs", "part_blobs"]


def part_blobs(parts: Iterable[Part]) -> tuple[PartBlob, ...]:
    """The payloads to store for ``parts``: one per distinct digest of a part given as bytes."""
    found: dict[str, PartBlob] = {}
    for part in parts:
        if isinstance(part, BinaryPart) and part.data is not None:
            found.setdefault(part.digest, PartBlob(part.digest, part.media_type, part.data))
    return tuple(found.values())


def load_part_blobs(conn: Connection, payloads: Iterable[JSONValue]) -> PartBlobs:
    """The stored bytes every part of ``payloads`` refers to, read in one query (none: no query)."""
    digests: set[str] = set()
    for payload in payloads:
        digests |= payload_digests(payload)
    return fetch_part_blobs(conn, digests) if digests else {}


def commit_infos(conn: Connection, rows: Sequence[CommitRow]) -> list[CommitInfo]:
    """Decode stored rows, with the bytes of their parts loaded through ``conn``."""
    blobs = load_part_blobs(conn, (row.content for row in rows))
    return [commit_info(row, blobs=blobs) for row in rows]
