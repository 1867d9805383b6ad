"""JSON type aliases: the one place where "any JSON" is spelled out."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeAlias

__all__ = ["JSONArray", "JSONObject", "JSONScalar", "JSONValue", "JSONLike"]

JSONScalar: TypeAlias = str | int | float | bool | None
JSONValue: TypeAlias = "JSONScalar | list[JSONValue] | dict[str, JSONValue]"
JSONObject: TypeAlias = dict[str, JSONValue]
JSONArray: TypeAlias = list[JSONValue]
# Read-only view accepted by functions that never mutate their input.
JSONLike: TypeAlias = "JSONScalar | Sequence[JSONLike] | Mapping[str, JSONLike]"
