"""A server's answer to ``tools/call`` as a ``ToolResult``: structured content first, errors as failures."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ..tools import ToolResult

if TYPE_CHECKING:
    import mcp.types as mcp_types

__all__ = ["content_text", "tool_result"]


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
    structured = result.structured_content
    if structured is not None:
        # The model reads the compact JSON; the value stays for events and reducers.
        try:
            text = json.dumps(structured, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        except ValueError:  # NaN or an infinity, which JSON cannot carry: the text content stands in
            return ToolResult(
                message=content_text(result.content), value=structured, exclude_value_from_context=True
            )
        return ToolResult(message=text, value=structured, exclude_value_from_context=True)
    return ToolResult(message=content_text(result.content))
