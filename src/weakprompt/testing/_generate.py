"""Schema-valid JSON drawn from serde's own type model, node by node.

The JSON Schema a model is shown and the parser that judges its answer are
both built from ``weakprompt.serde``'s normalised node tree; drawing from the
same tree means every constraint the schema states (bounds, lengths,
patterns, literals, formats, required and optional fields) is honoured here
too, and a constraint serde adds later fails loudly instead of being skipped.
"""

from __future__ import annotations

import copy
import datetime as dt
import functools
import math
import re
import uuid
from collections.abc import Callable
from decimal import Decimal
from pathlib import PurePath

from hypothesis import strategies as st
from hypothesis.strategies import SearchStrategy

from weakprompt.jsontypes import JSONValue
from weakprompt.serde.errors import SerdeTypeError
from weakprompt.serde.introspect import type_model
from weakprompt.serde.nodes import (
    NULL,
    AnyNode,
    BoolNode,
    ClassRef,
    DictNode,
    EnumNode,
    FormatNode,
    ListNode,
    LiteralNode,
    Node,
    NoneNode,
    NumberNode,
    PydanticNode,
    StrNode,
    TupleNode,
    TypeModel,
    UnionNode,
    kinds_of,
)

__all__ = [
    "ANY_JSON",
    "float_bounds",
    "int_bounds",
    "json_for",
    "json_for_model",
    "number_edges",
    "strings_for",
    "with_edges",
]

# Integers a float field may receive as JSON numbers: exactly representable.
_FLOAT_SAFE_INT = 2**53

_JSON_SCALARS: SearchStrategy[JSONValue] = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-_FLOAT_SAFE_INT, _FLOAT_SAFE_INT),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=8),
)


def _json_containers(children: SearchStrategy[JSONValue]) -> SearchStrategy[JSONValue]:
    return st.one_of(
        st.lists(children, max_size=3),
        st.dictionaries(st.text(max_size=6), children, max_size=3),
    )


ANY_JSON: SearchStrategy[JSONValue] = st.recursive(_JSON_SCALARS, _json_containers, max_leaves=8)
"""Any JSON value (finite numbers only), kept small so it shrinks fast."""


def json_for(tp: object) -> SearchStrategy[JSONValue]:
    """JSON that ``serde.schema(tp)`` admits, as a model may write it.

    Optional fields are sometimes left out or sent as ``null``. A class's own
    validation (``__post_init__``, attrs validators) is not consulted: that
    is what makes this the right input for checking that a schema and its
    parser agree. Use :func:`values_for` for values a handler can receive.
    """
    try:
        return _cached_json_for(tp)
    except TypeError:  # unhashable annotation
        return json_for_model(type_model(tp))


@functools.cache
def _cached_json_for(tp: object) -> SearchStrategy[JSONValue]:
    return json_for_model(type_model(tp))


def json_for_model(model: TypeModel) -> SearchStrategy[JSONValue]:
    return _Generator(model).node(model.root)


class _Generator:
    def __init__(self, model: TypeModel) -> None:
        self.model = model
        self.classes: dict[type, SearchStrategy[JSONValue]] = {}

    def node(self, node: Node) -> SearchStrategy[JSONValue]:
        match node:
            case AnyNode():
                return ANY_JSON
            case NoneNode():
                return st.none()
            case BoolNode():
                return st.booleans()
            case NumberNode():
                return numbers_for(node)
            case StrNode():
                return strings_for(node)
            case FormatNode():
                return formatted_strings_for(node)
            case LiteralNode() | EnumNode():
                return st.sampled_from(node.values) if node.values else st.nothing()
            case ListNode():
                low, high = _sizes(node.min_length, node.max_length)
                item = self.node(node.item)
                edges = _sized(_edge_sizes(node.min_length, node.max_length), lambda n: _list_of(item, n))
                return with_edges(st.lists(item, min_size=low, max_size=high), edges)
            case TupleNode():
                return st.tuples(*(self.node(item) for item in node.items)).map(_as_json_list)
            case DictNode():
                low, high = _sizes(node.min_length, node.max_length)
                value = self.node(node.value)
                edges = _sized(_edge_sizes(node.min_length, node.max_length), lambda n: _object_of(value, n))
                general = st.dictionaries(st.text(max_size=8), value, min_size=low, max_size=high)
                return with_edges(general, edges)
            case UnionNode():
                return st.one_of(*(self.node(option) for option in node.options))
            case ClassRef():
                return self.ref(node.cls)
            case PydanticNode():  # pragma: no branch (the cases cover every kind of node)
                raise SerdeTypeError(
                    f"the testing kit cannot generate JSON for the pydantic model {node.cls.__qualname__} "
                    "(its schema is pydantic's own); use a dataclass or attrs class to generate values"
                )

    def ref(self, cls: type) -> SearchStrategy[JSONValue]:
        strategy = self.classes.get(cls)
        if strategy is None:
            # Deferred so a class that refers to itself is drawn lazily, not built forever.
            strategy = st.deferred(lambda: self.object(cls))
            self.classes[cls] = strategy
        return strategy

    def object(self, cls: type) -> SearchStrategy[JSONValue]:
        required: dict[str, SearchStrategy[JSONValue]] = {}
        optional: dict[str, SearchStrategy[JSONValue]] = {}
        for spec in self.model.classes[cls].fields:
            value = self.node(spec.node)
            if spec.required:
                required[spec.key] = value
            elif NULL in kinds_of(spec.node):
                optional[spec.key] = value
            else:
                # serde reads an explicit null for a defaulted field as "use the default",
                # and the schema says so; models that must send every key rely on it.
                optional[spec.key] = st.one_of(value, st.none())
        return st.fixed_dictionaries(required, optional=optional)


# Unbounded arrays and objects get at most this many entries beyond their minimum:
# nested containers multiply, and small examples are faster to run and to read.
MAX_EXTRA_ITEMS = 5


def _sizes(low: int | None, high: int | None) -> tuple[int, int]:
    start = low or 0
    return start, start + MAX_EXTRA_ITEMS if high is None else high


def _as_json_list(items: tuple[JSONValue, ...]) -> JSONValue:
    return list(items)


# -- bounds, drawn exactly -----------------------------------------------------------------------

# Half the values of a bounded node are drawn at one of its bounds (or, for an exclusive bound,
# at the nearest admitted value): a handler that breaks only at ``le=4096`` is then found in
# every run, not only when the general strategy happens to land there.

# Arrays and objects longer than this are not drawn at their bounds (nor strings longer than
# MAX_EDGE_LENGTH): an example that large is slow to build, check and read.
MAX_EDGE_ITEMS = 1_000
MAX_EDGE_LENGTH = 100_000

# Up to this many items, an array at its bound draws every item; beyond it, a few drawn items
# repeat (cheap to draw, and the length is what the bound is about).
_DRAWN_EDGE_ITEMS = 8


def with_edges(
    general: SearchStrategy[JSONValue], edges: SearchStrategy[JSONValue] | None
) -> SearchStrategy[JSONValue]:
    """``general`` or, as often, a value from ``edges``.

    ``general`` comes first, so a failure that does not need a bound shrinks
    towards its small examples.
    """
    return general if edges is None else st.one_of(general, edges)


def _sized(
    sizes: list[int], make: Callable[[int], SearchStrategy[JSONValue]]
) -> SearchStrategy[JSONValue] | None:
    """One strategy over the ``sizes`` (a size is drawn first, so the share of ``general`` stays a half)."""
    if not sizes:
        return None
    return st.sampled_from(sizes).flatmap(make)


def _edge_sizes(low: int | None, high: int | None, limit: int = MAX_EDGE_ITEMS) -> list[int]:
    """The sizes the schema states as bounds (an unstated one is no edge), up to ``limit``."""
    stated = [size for size in (low, high) if size is not None and size <= limit]
    return sorted(set(stated))


def _list_of(item: SearchStrategy[JSONValue], size: int) -> SearchStrategy[JSONValue]:
    if size <= _DRAWN_EDGE_ITEMS:
        return st.lists(item, min_size=size, max_size=size)

    def repeated(drawn: list[JSONValue]) -> JSONValue:
        return [copy.deepcopy(drawn[index % len(drawn)]) for index in range(size)]

    return st.lists(item, min_size=1, max_size=3).map(repeated)


def _object_of(value: SearchStrategy[JSONValue], size: int) -> SearchStrategy[JSONValue]:
    if size <= _DRAWN_EDGE_ITEMS:
        return st.dictionaries(st.text(max_size=8), value, min_size=size, max_size=size)

    def numbered(drawn: tuple[str, list[JSONValue]]) -> JSONValue:
        prefix, values = drawn  # distinct keys, numbered after one drawn prefix
        return {f"{prefix}{index}": copy.deepcopy(values[index % len(values)]) for index in range(size)}

    return st.tuples(st.text(max_size=4), st.lists(value, min_size=1, max_size=3)).map(numbered)


# -- numbers -------------------------------------------------------------------------------------


def int_bounds(node: NumberNode) -> tuple[int | None, int | None] | None:
    """The inclusive integer range ``node`` admits (``None`` ends are open); ``None`` if empty."""
    lows = [_int_edge(node.ge, up=True, strict=False), _int_edge(node.gt, up=True, strict=True)]
    highs = [_int_edge(node.le, up=False, strict=False), _int_edge(node.lt, up=False, strict=True)]
    if _EMPTY in lows or _EMPTY in highs:
        return None
    low = max((edge for edge in lows if isinstance(edge, int)), default=None)
    high = min((edge for edge in highs if isinstance(edge, int)), default=None)
    if low is not None and high is not None and low > high:
        return None
    return low, high


_EMPTY = "empty"


def _int_edge(bound: int | float | None, *, up: bool, strict: bool) -> int | str | None:
    """The first integer past a lower bound (``up``) or before an upper one."""
    if bound is None or bound == (-math.inf if up else math.inf):
        return None
    if not math.isfinite(bound):
        return _EMPTY
    if up:
        return math.floor(bound) + 1 if strict else math.ceil(bound)
    return math.ceil(bound) - 1 if strict else math.floor(bound)


def float_bounds(node: NumberNode) -> tuple[float | None, bool, float | None, bool] | None:
    """``(low, low_exclusive, high, high_exclusive)`` for a float node; ``None`` if empty."""
    low: float | None = None
    low_open = False
    if node.ge is not None:
        low = node.ge
    if node.gt is not None and (low is None or node.gt >= low):
        low, low_open = node.gt, True
    high: float | None = None
    high_open = False
    if node.le is not None:
        high = node.le
    if node.lt is not None and (high is None or node.lt <= high):
        high, high_open = node.lt, True
    if low is not None and high is not None and (low > high or (low == high and (low_open or high_open))):
        return None
    return low, low_open, high, high_open


def number_edges(node: NumberNode) -> list[JSONValue]:
    """The numbers at ``node``'s bounds: each inclusive bound, and the nearest value inside an exclusive one.

    A float node gets the bounds as floats and, where the range holds whole
    numbers a model could write (within 2^53), as integers too.
    """
    ints = int_bounds(node)
    found: list[JSONValue] = []
    if ints is not None:
        # a float field is sent whole numbers only where a float holds them exactly
        limit = math.inf if node.integer else _FLOAT_SAFE_INT
        found.extend(edge for edge in ints if edge is not None and abs(edge) <= limit)
    if not node.integer:
        bounds = float_bounds(node)
        if bounds is not None:
            low, low_open, high, high_open = bounds
            if low is not None:
                found.append(math.nextafter(low, math.inf) if low_open else float(low))
            if high is not None:
                found.append(math.nextafter(high, -math.inf) if high_open else float(high))
    edges: list[JSONValue] = []
    for edge in found:
        if _admits(node, edge) and not any(type(edge) is type(seen) and edge == seen for seen in edges):
            edges.append(edge)
    return edges


def _admits(node: NumberNode, number: JSONValue) -> bool:
    assert isinstance(number, int | float)
    return (
        math.isfinite(number)
        and (node.ge is None or number >= node.ge)
        and (node.gt is None or number > node.gt)
        and (node.le is None or number <= node.le)
        and (node.lt is None or number < node.lt)
    )


def numbers_for(node: NumberNode) -> SearchStrategy[JSONValue]:
    edges = number_edges(node)
    return with_edges(_numbers_within(node), st.sampled_from(edges) if edges else None)


def _numbers_within(node: NumberNode) -> SearchStrategy[JSONValue]:
    ints = int_bounds(node)
    if node.integer:
        if ints is None:
            return st.nothing()
        return st.integers(ints[0], ints[1])
    bounds = float_bounds(node)
    if bounds is None:
        return st.nothing()
    low, low_open, high, high_open = bounds
    floats: SearchStrategy[JSONValue] = st.floats(
        min_value=low,
        max_value=high,
        exclude_min=low_open,
        exclude_max=high_open,
        allow_nan=False,
        allow_infinity=False,
    )
    if ints is None:
        return floats
    # A model may well write an integral number for a float field.
    int_low = -_FLOAT_SAFE_INT if ints[0] is None else max(ints[0], -_FLOAT_SAFE_INT)
    int_high = _FLOAT_SAFE_INT if ints[1] is None else min(ints[1], _FLOAT_SAFE_INT)
    if int_low > int_high:
        return floats
    return st.one_of(floats, st.integers(int_low, int_high))


# -- strings -------------------------------------------------------------------------------------


def strings_for(node: StrNode) -> SearchStrategy[JSONValue]:
    """Text within the length bounds that contains a match of the pattern.

    serde and the JSON Schema validator both read patterns with Python's
    ``re.search``. Generation compiles the pattern with ``re.ASCII`` so ``\\d``,
    ``\\w`` and ``\\s`` draw the characters ECMA-262 (what a provider's
    validator uses) means by them; a final check with the pattern exactly as
    written keeps only strings both readings accept.
    """
    low = node.min_length or 0
    high = node.max_length
    if node.pattern is None:
        edges = _sized(_edge_sizes(node.min_length, high, MAX_EDGE_LENGTH), _text_of)
        return with_edges(st.text(min_size=low, max_size=high), edges)
    pattern = re.compile(node.pattern)
    drawn = re.compile(node.pattern, re.ASCII) if _ascii_compatible(node.pattern) else pattern
    candidates = st.one_of(st.from_regex(drawn, fullmatch=True), st.from_regex(drawn))
    return candidates.filter(_string_check(pattern, low, high))


def _text_of(size: int) -> SearchStrategy[JSONValue]:
    """Text of exactly ``size`` characters, cheap to draw however long: a drawn piece, repeated."""
    if size == 0:
        return st.just("")

    def repeated(piece: str) -> JSONValue:
        return (piece * (size // len(piece) + 1))[:size]

    return st.text(min_size=1, max_size=4).map(repeated)


def _ascii_compatible(pattern: str) -> bool:
    try:
        re.compile(pattern, re.ASCII)
    except (re.error, ValueError):  # e.g. an inline (?u) flag: "ASCII and UNICODE flags are incompatible"
        return False
    return True


def _string_check(pattern: re.Pattern[str], low: int, high: int | None) -> Callable[[str], bool]:
    def accepted(text: str) -> bool:
        if len(text) < low or (high is not None and len(text) > high):
            return False
        if text.endswith("\n") and "$" in pattern.pattern:
            # Python's "$" also matches before a final newline; ECMA's does not.
            return False
        return pattern.search(text) is not None

    return accepted


# -- formats -------------------------------------------------------------------------------------

# Whole-minute UTC offsets: what RFC 3339 (the "date-time" and "time" formats) can write.
_OFFSETS: SearchStrategy[dt.tzinfo] = st.integers(-(23 * 60 + 59), 23 * 60 + 59).map(
    lambda minutes: dt.timezone(dt.timedelta(minutes=minutes))
)
_PATH_PART = st.text(alphabet="abcxyz019._-", min_size=1, max_size=6)


def _isoformat(value: dt.date | dt.time) -> JSONValue:
    return value.isoformat()


def _text(value: object) -> JSONValue:
    return str(value)


def _path(parts: list[str]) -> JSONValue:
    return "/".join(parts)


def formatted_strings_for(node: FormatNode) -> SearchStrategy[JSONValue]:
    """Canonical text of the Python type a format node carries."""
    tp = node.py_type
    if issubclass(tp, dt.datetime):
        return st.datetimes(timezones=_OFFSETS).map(_isoformat)
    if issubclass(tp, dt.date):
        return st.dates().map(_isoformat)
    if issubclass(tp, dt.time):
        return st.times(timezones=_OFFSETS).map(_isoformat)
    if issubclass(tp, uuid.UUID):
        return st.uuids().map(_text)
    if issubclass(tp, Decimal):
        return st.decimals(allow_nan=False, allow_infinity=False).map(_text)
    if issubclass(tp, PurePath):
        return st.lists(_PATH_PART, min_size=1, max_size=3).map(_path)
    raise TypeError(f"weakprompt.testing cannot generate {tp.__qualname__} strings yet")
