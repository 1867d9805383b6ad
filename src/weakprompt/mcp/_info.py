"""What a server says about one of its tools, and the filter that picks which ones a section offers."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from ..jsontypes import JSONObject

if TYPE_CHECKING:
    import mcp.types as mcp_types

__all__ = ["McpToolInfo", "ToolFilter"]


@attrs.frozen
class McpToolInfo:
    """One tool as the server listed it (names and hints as sent; ``None`` where the server said nothing)."""

    name: str
    description: str
    input_schema: JSONObject
    output_schema: JSONObject | None = None
    title: str | None = None
    read_only: bool | None = None
    destructive: bool | None = None
    idempotent: bool | None = None
    open_world: bool | None = None
    meta: JSONObject = attrs.field(factory=dict[str, Any])

    @classmethod
    def from_sdk(cls, tool: mcp_types.Tool) -> McpToolInfo:
        hints = tool.annotations
        return cls(
            name=tool.name,
            description=tool.description or "",
            input_schema=dict(tool.input_schema),
            output_schema=dict(tool.output_schema) if tool.output_schema is not None else None,
            title=tool.title,
            read_only=hints.read_only_hint if hints is not None else None,
            destructive=hints.destructive_hint if hints is not None else None,
            idempotent=hints.idempotent_hint if hints is not None else None,
            open_world=hints.open_world_hint if hints is not None else None,
            meta=dict(tool.meta or {}),
        )


def _names(value: Collection[str] | None) -> frozenset[str] | None:
    return None if value is None else frozenset(value)


@attrs.frozen
class ToolFilter:
    """Which of a server's tools to offer; every condition given must hold.

    ``include`` / ``exclude`` name tools as the server names them.
    ``read_only=True`` keeps tools the server hints are read-only;
    ``destructive=False`` drops tools it hints may destroy (a tool without the
    hint counts as destructive, as the MCP spec says; ``read_only`` defaults to
    not read-only). ``meta`` keeps tools whose ``_meta`` holds each given
    key with that value. ``where`` is any predicate on :class:`McpToolInfo`.
    """

    include: frozenset[str] | None = attrs.field(default=None, converter=_names)
    exclude: frozenset[str] = attrs.field(default=frozenset[str](), converter=frozenset)
    read_only: bool | None = None
    destructive: bool | None = None
    meta: Mapping[str, object] = attrs.field(factory=dict[str, object])
    where: Callable[[McpToolInfo], bool] | None = None

    def accepts(self, info: McpToolInfo) -> bool:
        if self.include is not None and info.name not in self.include:
            return False
        if info.name in self.exclude:
            return False
        if self.read_only is not None and bool(info.read_only) != self.read_only:
            return False
        if self.destructive is not None:
            # Per the MCP spec a missing hint means "may be destructive" unless the tool is read-only.
            destructive = info.destructive if info.destructive is not None else not info.read_only
            if destructive != self.destructive:
                return False
        if any(info.meta.get(key, _MISSING) != value for key, value in self.meta.items()):
            return False
        return self.where is None or bool(self.where(info))


_MISSING = object()
