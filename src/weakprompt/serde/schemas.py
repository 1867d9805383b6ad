"""``schema``: the JSON Schema of a type, built once per type and copied on return.

The schema writer (and the type model under it) loads with the first type
that needs a schema, not with ``import weakprompt``.
"""

from __future__ import annotations

import threading

from weakprompt.jsontypes import JSONObject, JSONValue
from weakprompt.serde.keys import cache_key

__all__ = ["schema"]

_CACHE: dict[tuple[object, bool], JSONObject] = {}
_LOCK = threading.Lock()


def schema(tp: object, *, strict: bool = False) -> JSONObject:
    """The JSON Schema for ``tp``; built once per ``(tp, strict)`` and copied on return."""
    try:
        key = (cache_key(tp), strict)
        cached = _CACHE.get(key)
    except TypeError:  # unhashable annotation: no caching
        return _build(tp, strict)
    if cached is None:
        cached = _build(tp, strict)
        with _LOCK:
            _CACHE[key] = cached
    return copy_json(cached)


def copy_json(value: JSONObject) -> JSONObject:
    """A deep copy of JSON data, much cheaper than ``copy.deepcopy``."""
    return {key: _copy(item) for key, item in value.items()}


def _copy(value: JSONValue) -> JSONValue:
    if isinstance(value, dict):
        return {key: _copy(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copy(item) for item in value]
    return value


def _build(tp: object, strict: bool) -> JSONObject:
    from weakprompt.serde.schema_writer import build_schema

    return build_schema(tp, strict)
