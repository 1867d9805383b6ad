"""Reading a linked tool schema whatever shape the user gave it.

Schemas are stored exactly as linked (round-trip fidelity), so the wire
conversions must understand the three shapes people actually pass: the
neutral ``{"name", "description", "parameters"}``, OpenAI's
``{"type": "function", "function": {...}}`` and Anthropic's
``{"name", "description", "input_schema"}``.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from ..errors import TranscriptError
from ..jsontypes import JSONObject, JSONValue

__all__ = ["FunctionToolView", "EMPTY_PARAMETERS", "read_function_tool", "tool_schema_name"]

EMPTY_PARAMETERS: JSONObject = {"type": "object", "properties": {}}

# Anthropic tools whose ``type`` is a versioned built-in (``bash_20250124``,
# ``web_search_20250305``...) are passed through untouched to Anthropic.
_FUNCTION_TYPES = frozenset({"function", "custom"})


@attrs.frozen
class FunctionToolView:
    """The provider-independent parts of a function tool."""

    name: str
    description: str | None
    parameters: JSONObject
    strict: bool | None = None


def _as_object(value: JSONValue | None, where: str) -> JSONObject:
    if value is None:
        return dict(EMPTY_PARAMETERS)
    if not isinstance(value, dict):
        raise TranscriptError(
            f"{where}: the parameter schema must be a JSON object, got {type(value).__name__}"
        )
    return value


def tool_schema_name(schema: Mapping[str, JSONValue]) -> str | None:
    """The tool's name in any of the supported shapes, or None if it has none."""
    function = schema.get("function")
    if schema.get("type") == "function" and isinstance(function, dict):
        name = function.get("name")
    else:
        name = schema.get("name")
    return name if isinstance(name, str) and name else None


def read_function_tool(schema: JSONObject, *, index: int) -> FunctionToolView | None:
    """Normalise one linked schema; None for a provider built-in tool to pass through.

    Raises :class:`TranscriptError` naming the tool (or its position) when the
    schema is a function tool without a usable name or parameter schema.
    """
    function = schema.get("function")
    body: JSONObject = function if schema.get("type") == "function" and isinstance(function, dict) else schema
    kind = schema.get("type")
    if body is schema and kind is not None and kind not in _FUNCTION_TYPES:
        return None
    name = body.get("name")
    if not isinstance(name, str) or not name:
        raise TranscriptError(f"tool #{index}: a function tool needs a non-empty string 'name'")
    where = f"tool {name!r}"
    if "parameters" in body:
        parameters = _as_object(body["parameters"], where)
    else:
        parameters = _as_object(body.get("input_schema"), where)
    description = body.get("description")
    if description is not None and not isinstance(description, str):
        raise TranscriptError(f"{where}: 'description' must be a string")
    strict = body.get("strict")
    return FunctionToolView(
        name=name,
        description=description,
        parameters=parameters,
        strict=strict if isinstance(strict, bool) else None,
    )
