"""Provider-neutral tool schemas, tool overrides applied, computed once per template.

Building a schema and hashing its canonical JSON is the costly part of a
render, and both only change when a tool override changes, so a template keeps
them in a cache keyed by tool name and override content.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, TypeVar, cast

import attrs

from ..canonical import content_hash
from ..jsontypes import JSONObject, JSONValue
from ..tools import AnyTool, Tool

if TYPE_CHECKING:
    from .overrides import ToolOverride

__all__ = ["OverriddenTool", "ToolSchemaCache", "ToolSchemaEntry", "patch_param_descriptions"]

P = TypeVar("P")
R = TypeVar("R")


def patch_param_descriptions(parameters: JSONObject, descriptions: Mapping[str, str]) -> JSONObject:
    """A copy of ``parameters`` with ``descriptions`` set on top-level properties.

    Only the levels that change are copied, so the (shared, cached) input schema
    is never mutated.
    """
    if not descriptions:
        return parameters
    properties = cast("dict[str, JSONValue]", parameters.get("properties", {}))
    patched_properties: dict[str, JSONValue] = dict(properties)
    for name, text in descriptions.items():
        current = cast("dict[str, JSONValue]", properties[name])
        patched_properties[name] = {**current, "description": text}
    return {**parameters, "properties": patched_properties}


@attrs.frozen
class OverriddenTool(Tool[P, R]):
    """A tool whose description or parameter descriptions come from an override.

    It behaves as the original tool (same handler and types) while its
    ``parameters_schema()`` and ``spec()`` carry the overridden descriptions, so
    adapters that read the tool see what the rendered prompt advertises.
    """

    param_descriptions: Mapping[str, str] = attrs.field(
        factory=dict[str, str], kw_only=True, eq=False, hash=False
    )

    def parameters_schema(self, *, strict: bool = False) -> JSONObject:
        return patch_param_descriptions(super().parameters_schema(strict=strict), self.param_descriptions)


def _override_tool(tool: AnyTool, override: ToolOverride) -> AnyTool:
    return OverriddenTool(
        name=tool.name,
        description=override.description if override.description is not None else tool.description,
        handler=tool.handler,
        params_type=tool.params_type,
        result_type=tool.result_type,
        examples=tool.examples,
        accepts_overrides=tool.accepts_overrides,
        sequential=tool.sequential,
        requires_approval=tool.requires_approval,
        idempotent=tool.idempotent,
        required=tool.required,
        ends_run=tool.ends_run,
        param_descriptions=override.param_descriptions,
    )


_LIVE_LIMIT = 4096


@attrs.frozen
class ToolSchemaEntry:
    """One tool as advertised: the tool to offer (overrides applied), its schema and hash."""

    tool: AnyTool | None
    schema: JSONObject
    hash: str


@attrs.define
class ToolSchemaCache:
    """Memo of :class:`ToolSchemaEntry` per (tool name, override); counts hits and misses (for tests)."""

    _entries: dict[tuple[str, object], ToolSchemaEntry] = attrs.field(
        factory=dict[tuple[str, object], ToolSchemaEntry]
    )
    _live: dict[int, tuple[AnyTool, ToolSchemaEntry]] = attrs.field(
        factory=dict[int, "tuple[AnyTool, ToolSchemaEntry]"]
    )
    hits: int = 0
    misses: int = 0

    def entry(self, tool: AnyTool, override: ToolOverride | None = None) -> ToolSchemaEntry:
        """Schema and hash for ``tool`` with ``override`` applied (``None``: as declared).

        ``entry.tool`` is ``None`` when the declared tool is offered unchanged.
        """
        fingerprint: object = None
        if override is not None:
            fingerprint = (override.description, tuple(sorted(override.param_descriptions.items())))
        key = (tool.name, fingerprint)
        cached = self._entries.get(key)
        if cached is not None:
            self.hits += 1
            return cached
        self.misses += 1
        offered = _override_tool(tool, override) if override is not None else None
        schema: JSONObject = (offered or tool).spec()
        made = ToolSchemaEntry(tool=offered, schema=schema, hash=content_hash(schema))
        self._entries[key] = made
        return made

    def live_entry(self, tool: AnyTool) -> ToolSchemaEntry:
        """Schema and hash of a toolset's tool, kept per tool object (a changed tool is a new object).

        The entry holds the tool, so its id is not reused while cached; the
        memo is emptied when it grows past ``_LIVE_LIMIT`` tools.
        """
        cached = self._live.get(id(tool))
        if cached is not None and cached[0] is tool:
            self.hits += 1
            return cached[1]
        self.misses += 1
        if len(self._live) >= _LIVE_LIMIT:
            self._live.clear()
        schema = tool.spec()
        made = ToolSchemaEntry(tool=None, schema=schema, hash=content_hash(schema))
        self._live[id(tool)] = (tool, made)
        return made
