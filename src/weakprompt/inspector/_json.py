"""Reading stored JSON for display: never raising, whatever the database holds."""

from __future__ import annotations

import json
from typing import cast

from ..jsontypes import JSONObject, JSONValue

__all__ = ["as_int", "as_object", "as_str", "load_object", "pretty"]


def load_object(text: object) -> JSONObject:
    """A stored JSON object, or ``{}`` when the text is not one (a viewer must not fail on it)."""
    if not isinstance(text, str) or not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return cast("JSONObject", value) if isinstance(value, dict) else {}


def as_object(value: JSONValue | None) -> JSONObject:
    return cast("JSONObject", value) if isinstance(value, dict) else {}


def as_str(value: JSONValue | None) -> str | None:
    return value if isinstance(value, str) else None


def as_int(value: JSONValue | None) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def pretty(value: JSONValue | str) -> str:
    """Arguments for reading: a JSON text or object indented; any other text as it is."""
    if isinstance(value, str):
        try:
            decoded = json.loads(value)
        except ValueError:
            return value
        if not isinstance(decoded, (dict, list)):
            return value
        value = cast("JSONValue", decoded)
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False)
