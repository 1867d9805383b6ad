"""Arguments a tool must refuse, each labelled with why.

A valid argument object is drawn first, then one thing about it is broken:
a value of the wrong JSON type, a missing required field, an unknown key,
a number outside its bounds, a string or array of the wrong length, a
pattern or format miss, a value outside a ``Literal``/enum; or the whole
text is not an object, or not JSON at all. Mutations are placed only where
they cannot accidentally land on another branch of a union, so every
example is refused by serde and by the JSON Schema alike.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from collections.abc import Callable, Collection, Iterator, Sequence
from typing import Literal, TypeAlias, get_args

import attrs
from hypothesis import reject
from hypothesis import strategies as st
from hypothesis.strategies import DrawFn, SearchStrategy

from weakprompt.jsonpath import join_path, render_key
from weakprompt.jsontypes import JSONObject, JSONValue
from weakprompt.serde.introspect import type_model
from weakprompt.serde.nodes import (
    ARRAY,
    BOOLEAN,
    NULL,
    NUMBER,
    OBJECT,
    STRING,
    AnyNode,
    ClassRef,
    DictNode,
    EnumNode,
    FormatNode,
    ListNode,
    LiteralNode,
    LiteralValue,
    Node,
    NumberNode,
    StrNode,
    TupleNode,
    TypeModel,
    UnionNode,
    kinds_of,
)
from weakprompt.tools import AnyTool

from ._generate import json_for_model
from ._values import arguments_for

__all__ = ["InvalidArguments", "InvalidKind", "invalid_arguments_for", "json_path"]

InvalidKind: TypeAlias = Literal[
    "wrong_type",
    "missing_field",
    "unknown_field",
    "out_of_range",
    "not_an_integer",
    "too_short",
    "too_long",
    "wrong_length",
    "pattern_mismatch",
    "bad_format",
    "not_allowed_value",
    "not_an_object",
    "broken_json",
]
_KIND_ORDER: tuple[InvalidKind, ...] = get_args(InvalidKind)

Step: TypeAlias = str | int


@attrs.frozen
class InvalidArguments:
    """Argument text a tool must refuse, and why.

    ``path`` is the JSON path of the broken place in serde's notation
    (``$.items[2].name``); ``kind`` names the mistake for filtering,
    ``reason`` explains it in words.
    """

    text: str
    kind: InvalidKind
    reason: str
    path: str = "$"

    def __str__(self) -> str:
        return f"{self.kind} at {self.path}: {self.reason} ({self.text})"


def json_path(steps: Sequence[Step]) -> str:
    """serde's path notation (:mod:`weakprompt.jsonpath`): ``$``, ``.key``, ``["odd key"]``, ``[index]``."""
    return join_path([f"[{step}]" if isinstance(step, int) else render_key(step) for step in steps])


def invalid_arguments_for(
    tool: AnyTool, *, kinds: Collection[InvalidKind] | None = None
) -> SearchStrategy[InvalidArguments]:
    """Argument texts ``tool`` must refuse, each with the reason it is invalid.

    ``kinds`` keeps only those mistakes; asking for one the params type has
    no place for (``pattern_mismatch`` without a pattern) finds no examples.
    """
    wanted = frozenset(_KIND_ORDER if kinds is None else kinds)
    unknown = sorted(wanted - set(_KIND_ORDER))
    if unknown:
        raise ValueError(f"unknown kinds of invalid arguments: {', '.join(unknown)}")
    sources: list[SearchStrategy[InvalidArguments]] = []
    valid = arguments_for(tool)
    if wanted - _WHOLE_TEXT:
        inside = _mutated(valid, _Mutator(type_model(tool.params_type)), wanted)
        sources += [inside, inside, inside]  # most examples break one place inside the object
    if "not_an_object" in wanted:
        sources.append(_not_an_object(valid))
    if "broken_json" in wanted:
        sources.append(_broken_json(valid))
    return _invalid(tuple(sources))


_WHOLE_TEXT = frozenset({"not_an_object", "broken_json"})


@st.composite
def _invalid(draw: DrawFn, sources: tuple[SearchStrategy[InvalidArguments], ...]) -> InvalidArguments:
    return draw(draw(st.sampled_from(sources)))


# -- whole-text mistakes --------------------------------------------------------------------------

_NON_OBJECTS: tuple[JSONValue, ...] = ([], "text", 0, 1.5, None, True, [{}])


@st.composite
def _not_an_object(draw: DrawFn, valid: SearchStrategy[JSONObject]) -> InvalidArguments:
    wrapped: JSONValue = [draw(valid)]
    value = draw(st.sampled_from((*_NON_OBJECTS, wrapped)))
    return InvalidArguments(
        text=json.dumps(value),
        kind="not_an_object",
        reason=f"{_describe(value)} instead of an object of arguments",
    )


@st.composite
def _broken_json(draw: DrawFn, valid: SearchStrategy[JSONObject]) -> InvalidArguments:
    text = json.dumps(draw(valid))
    how = draw(st.sampled_from(("truncated", "trailing text", "single quotes", "unquoted key")))
    if how == "truncated":
        broken = text[: draw(st.integers(1, len(text) - 1))]
    elif how == "trailing text":
        broken = text + draw(st.sampled_from(("x", "}", ",", " {}")))
    elif how == "single quotes" and '"' in text:
        broken = text.replace('"', "'")
    else:
        how = "unquoted key"
        broken = "{key: 1" + text[1:] if text == "{}" else "{key: 1, " + text[1:]
    return InvalidArguments(text=broken, kind="broken_json", reason=f"not JSON ({how})")


# -- one broken place ----------------------------------------------------------------------------

_ALL_KINDS = frozenset({OBJECT, ARRAY, STRING, NUMBER, BOOLEAN, NULL})
_WRONG_VALUES: dict[str, JSONValue] = {
    OBJECT: {},
    ARRAY: [],
    STRING: "text",
    NUMBER: 7,
    BOOLEAN: True,
    NULL: None,
}
# Format checks the JSON Schema validator makes without optional extras.
_BAD_FORMATS: dict[str, str] = {"date": "2024-13-45", "uuid": "not-a-uuid"}
_PLAIN_CHARS = ("", "0", "a", "Z", " ", "-", "_", ".", "!", "~", "é")

Mutation: TypeAlias = tuple[JSONValue, InvalidKind, str]
Build: TypeAlias = Callable[[DrawFn], Mutation]
Labelled: TypeAlias = tuple[InvalidKind, Build]


@attrs.frozen
class _Option:
    path: tuple[Step, ...]
    kind: InvalidKind
    build: Build
    # Where serde reports the mistake, when that is not ``path`` (a missing or unknown key).
    shown: tuple[Step, ...] | None = None

    @staticmethod
    def at(path: tuple[Step, ...], labelled: Labelled, *, key: str | None = None) -> _Option:
        return _Option(path, labelled[0], labelled[1], None if key is None else (*path, key))


@st.composite
def _mutated(
    draw: DrawFn, valid: SearchStrategy[JSONObject], mutator: _Mutator, wanted: frozenset[str]
) -> InvalidArguments:
    arguments = draw(valid)
    options = [option for option in mutator.options(arguments) if option.kind in wanted]
    if not options:
        reject()  # nowhere in this object for the wanted mistakes; try another object
    # Kind first, then place: a type with many fields would otherwise drown
    # the rarer mistakes (bounds, patterns) in wrong-type ones.
    kind = draw(st.sampled_from(sorted({option.kind for option in options}, key=_KIND_ORDER.index)))
    option = draw(st.sampled_from([option for option in options if option.kind == kind]))
    replacement, kind, reason = option.build(draw)
    broken = _replace(arguments, option.path, replacement)
    shown = option.path if option.shown is None else option.shown
    return InvalidArguments(text=json.dumps(broken), kind=kind, reason=reason, path=json_path(shown))


def _replace(data: JSONValue, path: Sequence[Step], replacement: JSONValue) -> JSONValue:
    if not path:
        return replacement
    head, rest = path[0], path[1:]
    if isinstance(data, dict):
        assert isinstance(head, str)
        out = dict(data)
        out[head] = _replace(data[head], rest, replacement)
        return out
    assert isinstance(data, list) and isinstance(head, int)
    items = list(data)
    items[head] = _replace(items[head], rest, replacement)
    return items


def _kind_of(value: JSONValue) -> str:
    if value is None:
        return NULL
    if isinstance(value, bool):
        return BOOLEAN
    if isinstance(value, (int, float)):
        return NUMBER
    if isinstance(value, str):
        return STRING
    if isinstance(value, list):
        return ARRAY
    return OBJECT


def _describe(value: JSONValue) -> str:
    text = json.dumps(value, ensure_ascii=False)
    if len(text) > 40:
        text = text[:37] + "..."
    return f"{_kind_of(value)} {text}"


class _Mutator:
    """Finds the places in an argument object where one change surely makes it invalid."""

    def __init__(self, model: TypeModel) -> None:
        self.model = model
        self._no_match: dict[StrNode, tuple[str, ...]] = {}
        self._items: dict[Node, SearchStrategy[JSONValue]] = {}

    def options(self, arguments: JSONObject) -> list[_Option]:
        found: list[_Option] = []
        self._visit(self.model.root, arguments, (), kinds_of(self.model.root), found)
        return found

    def _visit(
        self, node: Node, data: JSONValue, path: tuple[Step, ...], allowed: frozenset[str], out: list[_Option]
    ) -> None:
        if isinstance(node, AnyNode):
            return  # any JSON is fine here
        wrong = sorted(_ALL_KINDS - allowed)
        if wrong:
            out.append(_Option.at(path, _wrong_type(wrong, allowed)))
        if _kind_of(data) not in kinds_of(node):
            return  # a null standing for a field's default: only its type can be wrong
        match node:
            case UnionNode():
                # Descend only into the one branch that can take this kind of value:
                # a change inside it cannot make another branch accept the result.
                matching = [option for option in node.options if _kind_of(data) in kinds_of(option)]
                if len(matching) == 1:
                    self._visit(matching[0], data, path, allowed, out)
            case ClassRef():
                assert isinstance(data, dict)
                self._object(node.cls, data, path, out)
            case ListNode():
                assert isinstance(data, list)
                out.extend(_Option.at(path, build) for build in self._sized(node, data, ARRAY))
                for index, item in enumerate(data):
                    self._visit(node.item, item, (*path, index), kinds_of(node.item), out)
            case TupleNode():
                assert isinstance(data, list)
                out.append(_Option.at(path, _arity(data, len(node.items))))
                for index, (item_node, item) in enumerate(zip(node.items, data, strict=True)):
                    self._visit(item_node, item, (*path, index), kinds_of(item_node), out)
            case DictNode():
                assert isinstance(data, dict)
                out.extend(_Option.at(path, build) for build in self._sized(node, data, OBJECT))
                for key, item in data.items():
                    self._visit(node.value, item, (*path, key), kinds_of(node.value), out)
            case NumberNode():
                assert isinstance(data, (int, float))
                out.extend(_Option.at(path, build) for build in _numbers(node, data))
            case StrNode():
                assert isinstance(data, str)
                out.extend(_Option.at(path, build) for build in self._strings(node, data))
            case FormatNode():
                bad = _BAD_FORMATS.get(node.format or "")
                if bad is not None:
                    out.append(
                        _Option.at(path, _fixed(bad, "bad_format", f"{bad!r} is not a valid {node.format}"))
                    )
                elif node.pattern is not None:
                    text = "1.2.3"
                    out.append(
                        _Option.at(path, _fixed(text, "bad_format", f"{text!r} is not a plain decimal"))
                    )
            case LiteralNode() | EnumNode():
                out.extend(_Option.at(path, build) for build in _outsiders(node.values))
            case _:
                pass

    def _object(self, cls: type, data: JSONObject, path: tuple[Step, ...], out: list[_Option]) -> None:
        fields = self.model.classes[cls].fields
        keys = {spec.key for spec in fields}
        extra = "unexpected"
        while extra in keys:
            extra += "_"
        out.append(_Option.at(path, _with_key(data, extra), key=extra))
        for spec in fields:
            if spec.key not in data:
                continue
            if spec.required:
                out.append(_Option.at(path, _without_key(data, spec.key), key=spec.key))
            allowed = kinds_of(spec.node)
            if not spec.required:
                allowed |= {NULL}  # null means "use the default"
            self._visit(spec.node, data[spec.key], (*path, spec.key), allowed, out)

    def _sized(
        self, node: ListNode | DictNode, data: list[JSONValue] | JSONObject, kind: str
    ) -> Iterator[Labelled]:
        what = "items" if kind == ARRAY else "properties"
        size = len(data)
        item_node = node.item if isinstance(node, ListNode) else node.value
        if node.min_length:
            low = node.min_length
            yield _fixed(
                _shrunk(data, low - 1), "too_short", f"{low - 1} {what}, fewer than the minimum {low}"
            )
        if node.max_length is not None:
            high = node.max_length
            items = self._items.get(item_node)
            if items is None:
                items = self._items[item_node] = json_for_model(attrs.evolve(self.model, root=item_node))

            def longer(draw: DrawFn) -> Mutation:
                grown = _grown(data, high + 1 - size, items, draw)
                return grown, "too_long", f"{high + 1} {what}, more than the maximum {high}"

            yield "too_long", longer

    def _strings(self, node: StrNode, data: str) -> Iterator[Labelled]:
        if node.min_length:
            low = node.min_length
            yield _fixed(data[: low - 1], "too_short", f"{low - 1} characters, fewer than the minimum {low}")
        if node.max_length is not None:
            high = node.max_length
            grown = data + "x" * (high + 1 - len(data))
            yield _fixed(grown, "too_long", f"{len(grown)} characters, more than the maximum {high}")
        if node.pattern is not None:
            for text in self._non_matching(node)[:3]:
                yield _fixed(text, "pattern_mismatch", f"{text!r} has no match for pattern {node.pattern!r}")

    def _non_matching(self, node: StrNode) -> tuple[str, ...]:
        """Short strings of allowed length the pattern cannot find a match in."""
        cached = self._no_match.get(node)
        if cached is None:
            assert node.pattern is not None
            pattern = re.compile(node.pattern)
            low = node.min_length or 0
            high = node.max_length
            found: list[str] = []
            for char in _PLAIN_CHARS:
                for size in sorted({low, max(low, 1), low + 1}):
                    text = char * size
                    if (
                        low <= len(text)
                        and (high is None or len(text) <= high)
                        and text not in found
                        and pattern.search(text) is None
                    ):
                        found.append(text)
            cached = self._no_match[node] = tuple(found)
        return cached


def _fixed(value: JSONValue, kind: InvalidKind, reason: str) -> Labelled:
    def build(_draw: DrawFn) -> Mutation:
        return value, kind, reason

    return kind, build


def _wrong_type(wrong: list[str], allowed: frozenset[str]) -> Labelled:
    expected = " or ".join(sorted(allowed))

    def build(draw: DrawFn) -> Mutation:
        value = _WRONG_VALUES[draw(st.sampled_from(wrong))]
        return value, "wrong_type", f"{_describe(value)} where {expected} is expected"

    return "wrong_type", build


def _with_key(data: JSONObject, key: str) -> Labelled:
    def build(draw: DrawFn) -> Mutation:
        value = draw(st.sampled_from((1, "x", None, True)))
        return {**data, key: value}, "unknown_field", f"unknown field {key!r}"

    return "unknown_field", build


def _without_key(data: JSONObject, key: str) -> Labelled:
    rest = {name: value for name, value in data.items() if name != key}
    return _fixed(rest, "missing_field", f"required field {key!r} is missing")


def _arity(data: list[JSONValue], count: int) -> Labelled:
    if data:
        return _fixed(data[:-1], "wrong_length", f"{count - 1} items where exactly {count} are expected")
    return _fixed([None], "wrong_length", "1 item where exactly 0 are expected")


def _shrunk(data: list[JSONValue] | JSONObject, size: int) -> JSONValue:
    if isinstance(data, list):
        return data[:size]
    return dict(list(data.items())[:size])


def _grown(
    data: list[JSONValue] | JSONObject, more: int, items: SearchStrategy[JSONValue], draw: DrawFn
) -> JSONValue:
    if isinstance(data, list):
        return [*data, *(draw(items) for _ in range(more))]
    fresh = (key for key in (f"k{index}" for index in itertools.count()) if key not in data)
    return {**data, **{key: draw(items) for key in itertools.islice(fresh, more)}}


def _numbers(node: NumberNode, value: int | float) -> Iterator[Labelled]:
    if node.integer:
        base = value if abs(value) < 2**52 else 0
        odd = base + 0.5
        yield _fixed(odd, "not_an_integer", f"{odd} is not a whole number")
    for bound, words, outside in (
        (node.ge, "below the minimum", _below),
        (node.gt, "not above the exclusive minimum", _at_or_below),
        (node.le, "above the maximum", _above),
        (node.lt, "not below the exclusive maximum", _at_or_above),
    ):
        if bound is None or not math.isfinite(bound):
            continue
        bad = outside(bound, node.integer)
        yield _fixed(bad, "out_of_range", f"{bad} is {words} {bound}")


def _below(bound: int | float, integer: bool) -> int | float:
    if integer:
        return math.ceil(bound) - 1
    lower = bound - 1
    return lower if lower < bound else math.nextafter(bound, -math.inf)


def _above(bound: int | float, integer: bool) -> int | float:
    if integer:
        return math.floor(bound) + 1
    higher = bound + 1
    return higher if higher > bound else math.nextafter(bound, math.inf)


def _at_or_below(bound: int | float, integer: bool) -> int | float:
    return math.floor(bound) if integer else bound


def _at_or_above(bound: int | float, integer: bool) -> int | float:
    return math.ceil(bound) if integer else bound


def _outsiders(values: tuple[LiteralValue, ...]) -> Iterator[Labelled]:
    """A value of each JSON kind the literal uses that is not one of its values."""
    allowed = ", ".join(json.dumps(value) for value in values)
    kinds = {_kind_of(value) for value in values}
    if STRING in kinds:
        text = "unexpected"
        while text in values:
            text += "_"
        yield _fixed(text, "not_allowed_value", f"{text!r} is not one of {allowed}")
    if NUMBER in kinds:
        numbers = [abs(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
        number = math.floor(max(numbers)) + 1
        yield _fixed(number, "not_allowed_value", f"{number} is not one of {allowed}")
    if BOOLEAN in kinds:
        flags = {value for value in values if isinstance(value, bool)}
        if len(flags) == 1:
            other = not flags.pop()
            yield _fixed(other, "not_allowed_value", f"{json.dumps(other)} is not one of {allowed}")
