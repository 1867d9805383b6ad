"""Parts as stored JSON: how a message's typed content is written into its blob and read back.

An image or document given as bytes is written as its digest (with its
media type, size and name); the bytes go to the store's ``part_blobs``
table once per digest (:func:`part_blobs`), in the same transaction as the
commit. Reading a message loads them back and checks they still hash to
their digest. A part given as a URL keeps its URL and has no stored bytes.
Base64 ``data`` written inline by earlier versions is still read.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, TypeAlias

from ..errors import TranscriptError
from ..jsontypes import JSONObject, JSONValue
from ..messages import Message, Role
from ..parts import (
    Content,
    DocumentPart,
    ImagePart,
    Part,
    ReasoningPart,
    TextPart,
    as_parts,
    text_of,
)

if TYPE_CHECKING:
    from ..store.part_blob_rows import PartBlob

__all__ = [
    "PartBlobs",
    "content_message",
    "parts_from_json",
    "parts_to_json",
    "payload_digests",
    "with_text",
]

PartBlobs: TypeAlias = "Mapping[str, PartBlob]"
"""Stored payloads by digest, as a reader of messages is handed them."""

_NO_BLOBS: PartBlobs = {}


def _part_json(part: Part) -> JSONObject:
    if isinstance(part, TextPart):
        return {"kind": "text", "text": part.text}
    if isinstance(part, ReasoningPart):
        stored: JSONObject = {"kind": "reasoning", "text": part.text, "issuer": part.issuer}
        for key, value in (("signature", part.signature), ("encrypted", part.encrypted), ("id", part.id)):
            if value is not None:
                stored[key] = value
        if part.redacted:
            stored["redacted"] = True
        return stored
    stored = {"kind": part.kind, "media_type": part.media_type}
    if part.data is not None:
        stored["digest"] = part.digest
        stored["size"] = part.size
    if part.url is not None:
        stored["url"] = part.url
    if part.name is not None:
        stored["name"] = part.name
    return stored


def parts_to_json(parts: Sequence[Part]) -> list[JSONValue]:
    """The parts as JSON objects, one each, in order (bytes named by digest, see :func:`part_blobs`)."""
    return [_part_json(part) for part in parts]


def payload_digests(payload: JSONValue) -> set[str]:
    """The digests a stored message payload refers to (none for a message without parts)."""
    if not isinstance(payload, dict):
        return set()
    raw = payload.get("parts")
    if not isinstance(raw, list):
        return set()
    return {
        digest for item in raw if isinstance(item, dict) and isinstance(digest := item.get("digest"), str)
    }


def _text(raw: JSONObject, key: str, where: str) -> str:
    value = raw.get(key)
    if not isinstance(value, str):
        raise TranscriptError(f"{where}: {key!r} must be a string, got {value!r}")
    return value


def _optional(raw: JSONObject, key: str, where: str) -> str | None:
    return None if raw.get(key) is None else _text(raw, key, where)


def _stored_bytes(digest: str, blobs: PartBlobs, where: str) -> bytes:
    """The bytes stored for ``digest``, checked against it: a missing or altered payload is refused."""
    blob = blobs.get(digest)
    if blob is None:
        raise TranscriptError(f"{where}: no stored bytes for {digest} (its part_blobs row is missing)")
    if "sha256:" + hashlib.sha256(blob.data).hexdigest() != digest:
        raise TranscriptError(f"{where}: the stored bytes of part {digest} do not hash to that digest")
    return blob.data


def _part_from_json(raw: JSONValue, where: str, blobs: PartBlobs) -> Part:
    if not isinstance(raw, dict):
        raise TranscriptError(f"{where} is not a JSON object: {raw!r}")
    kind = raw.get("kind")
    if kind == "text":
        return TextPart(_text(raw, "text", where))
    if kind == "reasoning":
        return ReasoningPart(
            text=_text(raw, "text", where),
            issuer=_text(raw, "issuer", where),
            signature=_optional(raw, "signature", where),
            encrypted=_optional(raw, "encrypted", where),
            redacted=raw.get("redacted") is True,
            id=_optional(raw, "id", where),
        )
    if kind in ("image", "document"):
        data: bytes | None = None
        digest = _optional(raw, "digest", where)
        encoded = _optional(raw, "data", where)
        if digest is not None:
            data = _stored_bytes(digest, blobs, where)
        elif encoded is not None:
            try:
                data = base64.b64decode(encoded, validate=True)
            except binascii.Error as exc:
                raise TranscriptError(f"{where}: 'data' is not base64: {exc}") from exc
        kind_class = ImagePart if kind == "image" else DocumentPart
        try:
            return kind_class(
                media_type=_text(raw, "media_type", where),
                data=data,
                url=_optional(raw, "url", where),
                name=_optional(raw, "name", where),
            )
        except ValueError as exc:
            raise TranscriptError(f"{where}: {exc}") from exc
    raise TranscriptError(f"{where} has an unknown kind: {kind!r}")


def parts_from_json(raw: JSONValue, where: str, blobs: PartBlobs = _NO_BLOBS) -> tuple[Part, ...]:
    """The parts a stored list holds, bytes taken from ``blobs`` by digest.

    Anything malformed, a digest ``blobs`` lacks, or bytes that do not hash
    to their digest is a ``TranscriptError`` naming ``where``.
    """
    if not isinstance(raw, list):
        raise TranscriptError(f"{where} is not a list: {raw!r}")
    return tuple(_part_from_json(item, f"{where}[{index}]", blobs) for index, item in enumerate(raw))


_CONTENT_ITEMS = (str, TextPart, ImagePart, DocumentPart, ReasoningPart)


def content_message(
    role: Role,
    content: Content,
    *,
    where: str,
    tool_call_id: str | None = None,
    name: str | None = None,
    is_error: bool = False,
) -> Message:
    """The message of ``content`` (a string, or strings and parts); a ``TranscriptError`` names a bad item."""
    if isinstance(content, str):
        return Message(role, content, tool_call_id=tool_call_id, name=name, is_error=is_error)
    if not isinstance(content, Sequence) or isinstance(content, bytes | bytearray):
        raise TranscriptError(
            f"{where}: content must be a string or a sequence of strings and parts, "
            f"got a {type(content).__name__}"
        )
    for index, item in enumerate(content):
        if not isinstance(item, _CONTENT_ITEMS):
            raise TranscriptError(
                f"{where}: content[{index}] is a {type(item).__name__}, expected a string or a part "
                "(TextPart, ImagePart, DocumentPart)"
            )
    return Message.of(role, content, tool_call_id=tool_call_id, name=name, is_error=is_error)


def with_text(parts: Sequence[Part], text: str) -> tuple[Part, ...]:
    """``parts`` with their text replaced by ``text`` (a hook's rewrite); images and documents are kept."""
    if text_of(parts) == text:
        return tuple(parts)
    return tuple(as_parts(text)) + tuple(part for part in parts if not isinstance(part, TextPart))
