"""Combining branch schemas for unions and optional values into the simplest
equivalent form: ``{"type": [...]}`` for plain scalars, one ``enum`` for
literals and enums (with ``null`` folded in), ``anyOf`` otherwise."""

from __future__ import annotations

from weakprompt.jsontypes import JSONObject, JSONValue

__all__ = ["merge_union", "nullable"]

_SCALAR_TYPES = frozenset({"string", "integer", "number", "boolean"})
_NULL: JSONObject = {"type": "null"}
_ENUM_KEYS = frozenset({"type", "enum"})


def nullable(schema: JSONObject) -> JSONObject:
    """``schema`` widened to also accept ``null``."""
    return merge_union([schema, dict(_NULL)])


def merge_union(parts: list[JSONObject]) -> JSONObject:
    unique: list[JSONObject] = []
    for part in parts:
        if part not in unique:
            unique.append(part)
    if len(unique) == 1:
        return unique[0]
    if all(part.keys() == {"type"} for part in unique):
        return {"type": _merge_types(part["type"] for part in unique)}
    if all(_is_enum_like(part) for part in unique):
        return _merge_enums(unique)
    nulls = [part for part in unique if part == _NULL]
    others = [part for part in unique if part != _NULL]
    if nulls and len(others) == 1 and _is_plain_scalar(others[0]):
        widened = dict(others[0])
        widened["type"] = _merge_types([others[0]["type"], "null"])
        return widened
    options: list[JSONValue] = []
    for part in unique:
        if part.keys() == {"anyOf"} and isinstance(part["anyOf"], list):
            options.extend(item for item in part["anyOf"] if item not in options)
        elif part not in options:
            options.append(part)
    return {"anyOf": options}


def _is_enum_like(part: JSONObject) -> bool:
    return part == _NULL or ("enum" in part and part.keys() <= _ENUM_KEYS)


def _is_plain_scalar(part: JSONObject) -> bool:
    kind = part.get("type")
    return isinstance(kind, str) and kind in _SCALAR_TYPES and "enum" not in part and "$ref" not in part


def _merge_types(kinds: object) -> JSONValue:
    merged: list[JSONValue] = []
    for kind in kinds:  # type: ignore[attr-defined]
        for name in kind if isinstance(kind, list) else [kind]:  # pyright: ignore[reportUnknownVariableType]
            if name not in merged:
                merged.append(name)  # pyright: ignore[reportUnknownArgumentType]
    return merged[0] if len(merged) == 1 else merged


def _merge_enums(parts: list[JSONObject]) -> JSONObject:
    values: list[JSONValue] = []
    seen: set[tuple[type, JSONValue]] = set()
    type_names: list[JSONValue] = []
    for part in parts:
        members = part.get("enum", [None])
        assert isinstance(members, list)
        for value in members:
            marker = (type(value), value if not isinstance(value, (dict, list)) else repr(value))
            if marker not in seen:
                seen.add(marker)
                values.append(value)
        kind = part.get("type")
        if kind is not None:
            type_names.append(kind)
    out: JSONObject = {}
    if type_names:
        out["type"] = _merge_types(type_names)
    out["enum"] = values
    return out
