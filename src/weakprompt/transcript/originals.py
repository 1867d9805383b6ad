"""Keeping the original of a rewritten tool result, addressable by its content hash.

When a hook edits or summarizes a result before it is committed, the text
the tool really returned never becomes a commit. It is stored as a blob
instead, in the same form a commit stores its message, so its hash is the
hash the unmodified commit would have had, and
:meth:`Transcript.get_blob` returns it as a :class:`Message`.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

import attrs
from sqlalchemy import Connection, select

from ..canonical import canonical_json, content_hash, find_surrogate, parse_canonical_json
from ..errors import TranscriptError
from ..messages import Message
from ..store import tables
from ..store.commit_rows import put_blob
from ..store.part_blob_rows import PartBlob, put_part_blobs
from ..store.store import Store
from .part_store import load_part_blobs, part_blobs
from .records import message_from_payload, message_payload
from .turns import TurnRecord

__all__ = ["load_message_blob", "stage_message_blob", "store_message_blob"]


def store_message_blob(store: Store, message: Message, now: datetime) -> str:
    """Store ``message`` as a content-addressed blob (once) and return its hash.

    Written in its own transaction: if the commit that refers to it then
    fails, an unreferenced blob is all that remains, which is harmless.
    """
    payload = message_payload(message)
    digest = content_hash(payload)
    with store.write() as conn:
        _BlobWrite(digest, canonical_json(payload), now, part_blobs(message.parts)).write(conn)
    return digest


def stage_message_blob(turn: TurnRecord, message: Message, now: datetime) -> str:
    """Like :func:`store_message_blob`, written in ``turn``'s transaction; the hash is known at once.

    So the original and the commit that refers to it are stored together or
    not at all.
    """
    payload = message_payload(message)
    digest = content_hash(payload)
    turn.attach(_BlobWrite(digest, canonical_json(payload), now, part_blobs(message.parts)))
    return digest


@attrs.frozen
class _BlobWrite:
    """One content-addressed blob, stored with a turn (a :class:`~.turns.TurnWrite`)."""

    digest: str
    canonical: str
    now: datetime
    parts: tuple[PartBlob, ...] = ()

    def write(self, conn: Connection) -> None:
        put_blob(conn, self.digest, self.canonical, self.now)
        if self.parts:
            put_part_blobs(conn, self.parts, self.now)

    def plan(self) -> Callable[[Connection], None]:
        return self.write  # it reads nothing

    def committed(self) -> None:
        return None


def load_message_blob(store: Store, blob_hash: str) -> Message:
    """The message stored under ``blob_hash``; TranscriptError when there is none."""
    if not isinstance(blob_hash, str) or not blob_hash or find_surrogate(blob_hash) is not None:
        raise TranscriptError(f"a blob hash must be a non-empty string, got {blob_hash!r}")
    query = select(tables.blobs.c.content).where(tables.blobs.c.hash == blob_hash)
    with store.read() as conn:
        row = conn.execute(query).first()
        if row is None:
            raise TranscriptError(f"no stored blob {blob_hash!r}")
        payload = parse_canonical_json(str(row[0]))
        blobs = load_part_blobs(conn, [payload])
    return message_from_payload(payload, {}, blobs=blobs)
