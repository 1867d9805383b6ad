"""Typed values, tool params and tool-call arguments for any type serde supports.

Everything starts as schema-valid JSON (see ``_generate``) and goes through
``serde.parse``, exactly the road a model's arguments take. A value the
schema admits but a class's own validation refuses is left out, so what
comes out is what a handler can really receive.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Literal, TypeVar, overload

from hypothesis import strategies as st
from hypothesis.strategies import SearchStrategy

from weakprompt.jsontypes import JSONObject, JSONValue
from weakprompt.serde import SerdeError, dump, parse
from weakprompt.tools import AnyTool, Tool

from ._generate import json_for

__all__ = ["arguments_for", "params_for", "parsed_json_for", "values_for"]

T = TypeVar("T")
P = TypeVar("P")


class _Refused:
    __slots__ = ()


_REFUSED = _Refused()


def _parser(tp: object) -> Callable[[JSONValue], object]:
    def read(data: JSONValue) -> object:
        try:
            return parse(tp, data)
        except SerdeError:  # a class's own validator said no
            return _REFUSED

    return read


def _kept(item: tuple[JSONValue, object]) -> bool:
    return item[1] is not _REFUSED


def parsed_json_for(tp: object) -> SearchStrategy[tuple[JSONValue, object]]:
    """``(json, value)`` pairs: schema-valid JSON that ``serde.parse`` accepts, and what it builds."""
    read = _parser(tp)

    def pair(data: JSONValue) -> tuple[JSONValue, object]:
        return data, read(data)

    return json_for(tp).map(pair).filter(_kept)


def _second(item: tuple[JSONValue, object]) -> object:
    return item[1]


@overload
def values_for(tp: type[T]) -> SearchStrategy[T]: ...
@overload
def values_for(tp: object) -> SearchStrategy[Any]: ...
def values_for(tp: object) -> SearchStrategy[Any]:
    """Values of ``tp`` as ``serde.parse`` builds them, honouring every schema constraint.

    ``tp`` is any annotation serde supports: scalars with ``Meta`` bounds,
    lengths and patterns, ``Literal``, enums, unions, optionals, lists,
    tuples, dicts, datetimes, UUIDs, decimals, paths, dataclasses and attrs
    classes. Raises ``SerdeTypeError`` for a type serde cannot map.
    """
    return parsed_json_for(tp).map(_second)


def params_for(tool: Tool[P, Any]) -> SearchStrategy[P]:
    """Params objects ``tool``'s handler can receive."""
    return values_for(tool.params_type)


def _either_form(item: tuple[tuple[JSONValue, object], bool]) -> JSONObject:
    (data, value), canonical = item
    out = dump(value) if canonical else data
    assert isinstance(out, dict)  # params are always dataclasses or attrs classes
    return out


@overload
def arguments_for(tool: AnyTool, *, as_text: Literal[False] = False) -> SearchStrategy[JSONObject]: ...
@overload
def arguments_for(tool: AnyTool, *, as_text: Literal[True]) -> SearchStrategy[str]: ...
def arguments_for(
    tool: AnyTool, *, as_text: bool = False
) -> SearchStrategy[JSONObject] | SearchStrategy[str]:
    """The arguments a model could send for ``tool``: a JSON object, or its text with ``as_text=True``.

    Half the time it is ``serde.dump`` of a params value (every field
    written out); otherwise it is JSON as a model writes it, where optional
    fields may be left out or sent as ``null`` (what strict-mode clients do).
    """
    objects = st.tuples(parsed_json_for(tool.params_type), st.booleans()).map(_either_form)
    if not as_text:
        return objects
    return st.tuples(objects, st.booleans()).map(_dumps)


def _dumps(item: tuple[JSONObject, bool]) -> str:
    return json.dumps(item[0], ensure_ascii=item[1])
