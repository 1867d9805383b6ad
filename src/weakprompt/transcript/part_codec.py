"""Parts as stored JSON: how a message's typed content is written into its blob and read back.

Binary data is written as base64 inside the message's blob for now; the
payload shape names each field so a later store can move the bytes out
(keyed by the part's digest) without changing what a reader gets back.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence

from ..errors import TranscriptError
from ..jsontypes import JSONObject, JSONValue
from ..parts import DocumentPart, ImagePart, Part, ReasoningPart, TextPart

__all__ = ["parts_from_json", "parts_to_json"]


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
        stored["data"] = base64.b64encode(part.data).decode("ascii")
    if part.url is not None:
        stored["url"] = part.url
    if part.name is not None:
        stored["name"] = part.name
    return stored


def parts_to_json(parts: Sequence[Part]) -> list[JSONValue]:
    """The parts as JSON objects, one each, in order."""
    return [_part_json(part) for part in parts]


def _text(raw: JSONObject, key: str, where: str) -> str:
    value = raw.get(key)
    if not isinstance(value, str):
        raise TranscriptError(f"{where}: {key!r} must be a string, got {value!r}")
    return value


def _optional(raw: JSONObject, key: str, where: str) -> str | None:
    return None if raw.get(key) is None else _text(raw, key, where)


def _part_from_json(raw: JSONValue, where: str) -> Part:
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
        encoded = _optional(raw, "data", where)
        if encoded is not None:
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


def parts_from_json(raw: JSONValue, where: str) -> tuple[Part, ...]:
    """The parts a stored list holds; anything malformed is a ``TranscriptError`` naming ``where``."""
    if not isinstance(raw, list):
        raise TranscriptError(f"{where} is not a list: {raw!r}")
    return tuple(_part_from_json(item, f"{where}[{index}]") for index, item in enumerate(raw))
