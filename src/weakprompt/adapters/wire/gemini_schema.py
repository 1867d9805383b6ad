"""Gemini's subset of JSON Schema: what a tool's or an output's schema becomes in a request.

Gemini reads a fixed list of keywords in ``parameters_json_schema`` and
``response_json_schema``. The rest narrow what a valid value is and are
dropped here; the tool (or the output parser) still checks values against
the full schema, so nothing is lost but the hint to the model.
"""

from __future__ import annotations

from collections.abc import Mapping

from ...errors import ConfigurationError
from ...jsontypes import JSONObject, JSONValue

__all__ = ["gemini_schema"]

# The JSON Schema keywords Gemini reads in parameters_json_schema / response_json_schema.
_SCHEMA_KEYWORDS = frozenset(
    {"$id", "$defs", "$ref", "$anchor", "type", "format", "title", "description", "enum", "items"}
    | {"prefixItems", "minItems", "maxItems", "minimum", "maximum", "anyOf", "oneOf", "properties"}
    | {"additionalProperties", "required", "propertyOrdering", "nullable"}
)
_SCHEMA_MAPS = frozenset({"properties", "$defs"})
_SCHEMA_LISTS = frozenset({"anyOf", "oneOf", "prefixItems"})


def gemini_schema(schema: Mapping[str, JSONValue], *, where: str = "a schema") -> JSONObject:
    """``schema`` with only the JSON Schema keywords Gemini reads.

    ``const`` becomes a one-value ``enum``; ``allOf`` with one member is that
    member; ``null`` leaves an ``enum`` (Gemini's hold strings and numbers; a
    nullable field says so in its ``type``); other keywords (``default``, ``pattern``, ``minLength``...) are
    dropped: they narrow what a valid value is, and the tool (or the output
    parser) still checks its arguments against the full schema. An
    ``allOf`` of several members cannot be written in Gemini's subset and is
    refused, naming where it is.
    """
    return _schema_node(schema, where, "$")


def _schema_node(node: Mapping[str, JSONValue], where: str, path: str) -> JSONObject:
    out: JSONObject = {}
    for key, value in node.items():
        if key == "const":
            out["enum"] = [value]
        elif key == "allOf" and isinstance(value, list):
            if len(value) != 1 or not isinstance(value[0], dict):
                raise ConfigurationError(
                    f"GeminiAdapter: {where} uses allOf with {len(value)} members at {path}, "
                    "which Gemini's schema subset cannot express; simplify that type"
                )
            out.update(_schema_node(value[0], where, f"{path}.allOf[0]"))
        elif key not in _SCHEMA_KEYWORDS:
            continue
        elif key == "enum" and isinstance(value, list) and None in value:
            kept: list[JSONValue] = [
                item for item in value if item is not None
            ]  # Gemini's enums hold strings and numbers
            if kept:
                out[key] = kept
        elif key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {
                name: _schema_node(child, where, f"{path}.{key}.{name}") if isinstance(child, dict) else child
                for name, child in value.items()
            }
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            out[key] = [
                _schema_node(child, where, f"{path}.{key}[{i}]") if isinstance(child, dict) else child
                for i, child in enumerate(value)
            ]
        elif key in ("items", "additionalProperties") and isinstance(value, dict):
            out[key] = _schema_node(value, where, f"{path}.{key}")
        else:
            out[key] = value
    return out
