"""A server's answer to ``tools/call`` as a ``ToolResult``: structured content first, errors as failures.

Image, audio and binary embedded-resource content becomes real parts of the
result (:class:`~weakprompt.parts.ImagePart` for ``image/*``, a
:class:`~weakprompt.parts.DocumentPart` otherwise), which adapters send as
their provider takes them; the text names each one in a short placeholder.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import TYPE_CHECKING, Any, cast

from ..parts import DocumentPart, ImagePart
from ..tools import ToolResult

if TYPE_CHECKING:
    import mcp.types as mcp_types

__all__ = ["content_parts", "content_text", "tool_result"]

MediaPart = ImagePart | DocumentPart


def _block_text(block: object) -> str:
    kind = getattr(block, "type", "")
    if kind == "text":
        return str(getattr(block, "text", ""))
    if kind in ("image", "audio"):
        data = str(getattr(block, "data", ""))
        return f"[{kind} {getattr(block, 'mime_type', None) or '?'}, {len(data) * 3 // 4} bytes]"
    if kind == "resource_link":
        name = getattr(block, "name", "")
        return f"[resource {getattr(block, 'uri', '')}{' ' + name if name else ''}]"
    if kind == "resource":
        resource = getattr(block, "resource", None)
        text = getattr(resource, "text", None)
        if isinstance(text, str):
            return text
        blob = str(getattr(resource, "blob", ""))
        return f"[resource {getattr(resource, 'uri', '')}, {len(blob) * 3 // 4} bytes]"
    return f"[{kind or type(block).__name__} content]"


def _decoded_size(data: str) -> int:
    return len(data) * 3 // 4 - data[-2:].count("=")


def _media_placeholder(item: dict[str, object]) -> str | None:
    """A short stand-in for a media block inside structured content, or ``None`` when it is no media.

    Base64 data is useless text to a model and costs a token per few bytes;
    until results carry typed media the model reads the type and size only.
    """
    kind, data, mime = item.get("type"), item.get("data"), item.get("mimeType")
    if kind in ("image", "audio") and isinstance(data, str):
        return f"[{kind} {mime if isinstance(mime, str) else '?'}, {_decoded_size(data)} bytes]"
    resource = item.get("resource")
    if kind == "resource" and isinstance(resource, dict):
        inner = cast("dict[str, object]", resource)
        blob = inner.get("blob")
        if isinstance(blob, str):
            uri, mime = inner.get("uri", ""), inner.get("mimeType")
            shown = f" {mime}" if isinstance(mime, str) else ""
            return f"[resource {uri}{shown}, {_decoded_size(blob)} bytes]"
    return None


def _without_media(value: object) -> object:
    """``value`` with each media block (image, audio, binary resource) replaced by its placeholder."""
    if isinstance(value, dict):
        item = cast("dict[str, object]", value)
        placeholder = _media_placeholder(item)
        if placeholder is not None:
            return placeholder
        return {key: _without_media(inner) for key, inner in item.items()}
    if isinstance(value, list):
        return [_without_media(inner) for inner in cast("list[object]", value)]
    return value


def _media(data: object, mime: object, name: object = None) -> MediaPart | None:
    """The part base64 ``data`` holds (``None`` when it is not base64: its placeholder stands alone)."""
    if not isinstance(data, str):
        return None
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return None
    media_type = mime if isinstance(mime, str) and mime else "application/octet-stream"
    label = name if isinstance(name, str) and name else None
    if media_type.startswith("image/"):
        return ImagePart(media_type=media_type, data=raw, name=label)
    return DocumentPart(media_type=media_type, data=raw, name=label)


def _block_part(block: object) -> MediaPart | None:
    kind = getattr(block, "type", "")
    if kind in ("image", "audio"):
        return _media(getattr(block, "data", None), getattr(block, "mime_type", None))
    if kind == "resource":
        resource = getattr(block, "resource", None)
        blob = getattr(resource, "blob", None)
        uri = str(getattr(resource, "uri", ""))
        return _media(blob, getattr(resource, "mime_type", None), uri)
    return None


def _structured_parts(value: object, found: list[MediaPart]) -> None:
    """The media blocks inside structured content (servers such as server-filesystem put them there)."""
    if isinstance(value, dict):
        item = cast("dict[str, object]", value)
        kind = item.get("type")
        if kind in ("image", "audio"):
            part = _media(item.get("data"), item.get("mimeType"))
        elif kind == "resource" and isinstance(item.get("resource"), dict):
            inner = cast("dict[str, object]", item["resource"])
            part = _media(inner.get("blob"), inner.get("mimeType"), inner.get("uri"))
        else:
            part = None
            for inner_value in item.values():
                _structured_parts(inner_value, found)
        if part is not None:
            found.append(part)
    elif isinstance(value, list):
        for inner_value in cast("list[object]", value):
            _structured_parts(inner_value, found)


def content_parts(blocks: list[Any]) -> tuple[MediaPart, ...]:
    """The images, audio and binary resources of MCP content blocks, as parts, in order."""
    return tuple(part for part in (_block_part(block) for block in blocks) if part is not None)


def content_text(blocks: list[Any]) -> str:
    """The text the model reads for a list of MCP content blocks (binary parts named, not inlined)."""
    return "\n".join(_block_text(block) for block in blocks)


def tool_result(tool: str, result: mcp_types.CallToolResult) -> ToolResult[Any]:
    """``isError`` becomes a failed result; ``structured_content`` wins over text when present."""
    if result.is_error:
        text = content_text(result.content) if result.content else ""
        if not text and result.structured_content is not None:
            text = json.dumps(result.structured_content, ensure_ascii=False, separators=(",", ":"))
        return ToolResult.error(f"MCP tool {tool!r} reported an error: {text or '(no message)'}")
    parts = content_parts(result.content)
    structured = result.structured_content
    if structured is not None:
        if not parts:
            found: list[MediaPart] = []
            _structured_parts(structured, found)
            parts = tuple(found)
        # The model reads the compact JSON; the value stays for events and reducers.
        try:
            text = json.dumps(
                _without_media(structured), ensure_ascii=False, separators=(",", ":"), allow_nan=False
            )
        except ValueError:  # NaN or an infinity, which JSON cannot carry: the text content stands in
            return ToolResult(
                message=content_text(result.content),
                value=structured,
                exclude_value_from_context=True,
                parts=parts,
            )
        return ToolResult(message=text, value=structured, exclude_value_from_context=True, parts=parts)
    return ToolResult(message=content_text(result.content), parts=parts)
