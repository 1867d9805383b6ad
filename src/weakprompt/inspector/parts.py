"""Message parts as the inspector shows them: what each stored part is, and its bytes served safely.

A page never inlines a part's bytes. An image is an ``<img>`` pointing at
``/part/<digest>``, which serves the stored bytes with their own content
type only when that type is a raster image a browser draws without running
anything (PNG, JPEG, GIF, WebP); every other part (SVG included: it can
carry script) is served as ``application/octet-stream``, as an attachment.
Every part response says ``nosniff`` and forbids scripts.
"""

from __future__ import annotations

import hashlib
import re

import attrs
from sqlalchemy import select

from ..jsontypes import JSONObject, JSONValue
from ..store import Store, tables
from ._json import as_int, as_str

__all__ = ["DIGEST", "SAFE_IMAGE_TYPES", "PartView", "load_part_bytes", "part_views"]

DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
"""What a part's address looks like; anything else is not looked up."""

SAFE_IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
"""Served with their own content type (and shown as thumbnails); anything else is a download."""


@attrs.frozen
class PartView:
    """One part of a message, as the page shows it (never its bytes)."""

    kind: str
    media_type: str = ""
    name: str | None = None
    size: int = 0
    digest: str | None = None
    url: str | None = None
    text: str = ""
    issuer: str = ""
    redacted: bool = False

    @property
    def thumbnail(self) -> bool:
        """An image whose stored bytes the page may show (served by ``/part/<digest>``)."""
        return self.kind == "image" and self.digest is not None and self.media_type in SAFE_IMAGE_TYPES


def _view(raw: JSONValue) -> PartView | None:
    if not isinstance(raw, dict):
        return None
    kind = as_str(raw.get("kind"))
    if kind == "reasoning":
        return PartView(
            kind="reasoning",
            text=as_str(raw.get("text")) or "",
            issuer=as_str(raw.get("issuer")) or "",
            redacted=raw.get("redacted") is True,
        )
    if kind in ("image", "document"):
        digest = as_str(raw.get("digest"))
        return PartView(
            kind=kind,
            media_type=as_str(raw.get("media_type")) or "",
            name=as_str(raw.get("name")),
            size=as_int(raw.get("size")),
            digest=digest if digest is not None and DIGEST.fullmatch(digest) else None,
            url=as_str(raw.get("url")),
        )
    return None  # text parts are the message's text, shown already


def part_views(payload: JSONObject) -> tuple[PartView, ...]:
    """The non-text parts a stored message payload holds (malformed entries are skipped)."""
    raw = payload.get("parts")
    if not isinstance(raw, list):
        return ()
    return tuple(view for view in (_view(item) for item in raw) if view is not None)


@attrs.frozen
class PartBytes:
    media_type: str
    data: bytes = attrs.field(repr=False)
    intact: bool


def load_part_bytes(store: Store, digest: str) -> PartBytes | None:
    """The stored bytes of ``digest`` with their media type, and whether they still hash to it."""
    table = tables.part_blobs
    with store.read() as conn:
        row = conn.execute(select(table.c.media_type, table.c.data).where(table.c.digest == digest)).first()
    if row is None:
        return None
    data = bytes(row[1])
    intact = "sha256:" + hashlib.sha256(data).hexdigest() == digest
    return PartBytes(str(row[0]), data, intact)
