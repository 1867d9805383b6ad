"""Hypothesis strategies shared by the serde property tests.

``shapes()`` builds random dataclass types (nested, optional, literal, enum,
list, dict, tuple fields) with ``make_dataclass``; ``values_for(tp)`` draws
instances of a type; ``fuzzy_json_for(tp)`` draws JSON that is often almost,
but not quite, valid for it. A few sanity tests at the bottom keep the
strategies honest.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import functools
import itertools
import json
import types
import typing
import uuid
from decimal import Decimal
from pathlib import PurePosixPath
from typing import Literal, Union, get_args, get_origin

from hypothesis import given
from hypothesis import strategies as st

from weakprompt.serde import dump
from weakprompt.testing import json_for

_counter = itertools.count()

JSON_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**40), 2**40)
    | st.floats(allow_nan=False, allow_infinity=False, width=64)
    | st.text(max_size=6)
)
ANY_JSON = st.recursive(
    JSON_SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=6,
)

_LITERAL_VALUES = st.one_of(
    st.sampled_from(["a", "b", "c", "on", "off", ""]),
    st.integers(-3, 3),
    st.booleans(),
)


@st.composite
def literal_types(draw: st.DrawFn) -> object:
    values = draw(st.lists(_LITERAL_VALUES, min_size=1, max_size=4, unique_by=lambda v: (type(v), v)))
    return Literal[tuple(values)]  # type: ignore[valid-type]


@st.composite
def enum_types(draw: st.DrawFn) -> type[enum.Enum]:
    if draw(st.booleans()):
        values: list[object] = draw(st.lists(st.sampled_from(["x", "y", "z", "w"]), min_size=1, unique=True))
    else:
        values = draw(st.lists(st.integers(0, 9), min_size=1, max_size=4, unique=True))
    members = {f"M{index}": value for index, value in enumerate(values)}
    return enum.Enum(f"E{next(_counter)}", members)  # type: ignore[return-value]


def scalar_types(*, with_formats: bool) -> st.SearchStrategy[object]:
    plain = st.sampled_from([str, int, float, bool])
    options = [plain, plain, literal_types(), enum_types()]
    if with_formats:
        options.append(st.sampled_from([dt.datetime, dt.date, uuid.UUID, Decimal, PurePosixPath]))
    else:
        # formats that jsonschema checks without optional extras
        options.append(st.sampled_from([dt.date, uuid.UUID, Decimal, PurePosixPath]))
    return st.one_of(*options)


def _make_class(field_types: list[object]) -> type:
    fields = [(f"f{index}", tp) for index, tp in enumerate(field_types)]
    return dataclasses.make_dataclass(f"Shape{next(_counter)}", fields, frozen=True)


def _extend(
    children: st.SearchStrategy[object], *, with_dicts: bool = True, with_unions: bool = False
) -> st.SearchStrategy[object]:
    extra = [children.map(lambda tp: dict[str, tp])] if with_dicts else []  # type: ignore[valid-type]
    if with_unions:
        # General unions can be ambiguous for round trips (str | Path), so only
        # the schema/parse agreement test asks for them.
        extra.append(st.lists(children, min_size=2, max_size=3).map(lambda tps: Union[tuple(tps)]))  # noqa: UP007
    return st.one_of(
        children.map(lambda tp: list[tp]),  # type: ignore[valid-type]
        *extra,
        children.map(lambda tp: tuple[tp, ...]),  # type: ignore[valid-type]
        st.lists(children, min_size=1, max_size=3).map(lambda tps: tuple[tuple(tps)]),  # type: ignore[misc]
        children.map(lambda tp: typing.Optional[tp]),  # noqa: UP045
        st.lists(children, min_size=0, max_size=3).map(_make_class),
    )


@functools.cache
def field_types(
    *, with_formats: bool = True, with_dicts: bool = True, with_unions: bool = False
) -> st.SearchStrategy[object]:
    return st.recursive(
        scalar_types(with_formats=with_formats),
        functools.partial(_extend, with_dicts=with_dicts, with_unions=with_unions),
        max_leaves=5,
    )


@st.composite
def shapes(
    draw: st.DrawFn,
    *,
    with_formats: bool = True,
    with_dicts: bool = True,
    with_unions: bool = False,
    allow_defaults: bool = True,
) -> type:
    """A random dataclass type; some trailing fields get defaults."""
    kinds_strategy = field_types(with_formats=with_formats, with_dicts=with_dicts, with_unions=with_unions)
    kinds = draw(st.lists(kinds_strategy, min_size=0, max_size=5))
    defaults_from = len(kinds) - draw(st.integers(0, len(kinds))) if allow_defaults else len(kinds)
    fields: list[tuple[str, object, dataclasses.Field[object]] | tuple[str, object]] = []
    for index, tp in enumerate(kinds):
        name = f"f{index}"
        if index >= defaults_from:
            value = draw(values_for(tp))
            if isinstance(value, (list, dict)) or dataclasses.is_dataclass(value):
                fields.append((name, tp, dataclasses.field(default_factory=lambda v=value: v)))
            else:
                fields.append((name, tp, dataclasses.field(default=value)))
        else:
            fields.append((name, tp))
    return dataclasses.make_dataclass(f"Root{next(_counter)}", fields, frozen=True)


_PATH_PART = st.text(alphabet="abc._-", min_size=1, max_size=4).filter(lambda part: part not in (".", ".."))


@functools.cache
def values_for(tp: object) -> st.SearchStrategy[object]:
    """Instances of ``tp`` (as ``parse`` would build them)."""
    origin = get_origin(tp)
    args = get_args(tp)
    if tp is str:
        return st.text(max_size=8)
    if tp is bool:
        return st.booleans()
    if tp is int:
        return st.integers(-(2**53), 2**53)
    if tp is float:
        return st.floats(allow_nan=False, allow_infinity=False, width=64)
    if tp is type(None) or tp is None:
        return st.none()
    if tp is dt.datetime:
        offsets = st.sampled_from([dt.UTC, dt.timezone(dt.timedelta(hours=5, minutes=30))])
        return st.datetimes(timezones=offsets)
    if tp is dt.date:
        return st.dates()
    if tp is uuid.UUID:
        return st.uuids()
    if tp is Decimal:
        return st.decimals(
            allow_nan=False, allow_infinity=False, places=3, min_value=-(10**6), max_value=10**6
        )
    if tp is PurePosixPath:
        return st.lists(_PATH_PART, min_size=1, max_size=3).map(lambda parts: PurePosixPath(*parts))
    if origin is Literal:
        return st.sampled_from(args)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return st.sampled_from(list(tp))
    if origin is list:
        return st.lists(values_for(args[0]), max_size=3)
    if origin is dict:
        return st.dictionaries(st.text(max_size=4), values_for(args[1]), max_size=3)
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return st.lists(values_for(args[0]), max_size=3).map(tuple)
        return st.tuples(*(values_for(arg) for arg in args))
    if origin is Union or origin is types.UnionType:
        return st.one_of(*(values_for(arg) for arg in args))
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        hints = typing.get_type_hints(tp)
        return st.builds(tp, **{f.name: values_for(hints[f.name]) for f in dataclasses.fields(tp)})
    raise AssertionError(f"no strategy for {tp!r}")


@functools.cache
def fuzzy_json_for(tp: object) -> st.SearchStrategy[object]:
    """JSON that is valid for ``tp``, or wrong in one or more small places.

    The valid part comes from the testing kit: JSON the schema admits as a
    model writes it (optional fields left out or sent as null), which
    ``values_for(tp).map(dump)`` alone (every field written) never produces.
    """
    return st.one_of(
        json_for(tp),
        _nearly(tp),
        ANY_JSON,
    )


def _nearly(tp: object) -> st.SearchStrategy[object]:
    origin = get_origin(tp)
    args = get_args(tp)
    wrong_or_right = st.deferred(lambda: ANY_JSON)
    if origin is list or (origin is tuple and len(args) == 2 and args[1] is Ellipsis):
        return st.lists(st.deferred(lambda: fuzzy_json_for(args[0])), max_size=3)
    if origin is tuple:
        return st.lists(
            st.one_of(*(st.deferred(lambda arg=arg: fuzzy_json_for(arg)) for arg in args)),
            min_size=max(0, len(args) - 1),
            max_size=len(args) + 1,
        )
    if origin is dict:
        return st.dictionaries(st.text(max_size=3), st.deferred(lambda: fuzzy_json_for(args[1])), max_size=3)
    if origin is Union or origin is types.UnionType:
        return st.one_of(*(st.deferred(lambda arg=arg: fuzzy_json_for(arg)) for arg in args))
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return _nearly_object(tp)
    return wrong_or_right


@st.composite
def _nearly_object(draw: st.DrawFn, cls: type) -> object:
    hints = typing.get_type_hints(cls)
    out: dict[str, object] = {}
    for field in dataclasses.fields(cls):  # type: ignore[arg-type]
        choice = draw(st.integers(0, 9))
        if choice == 0:
            continue  # leave it out
        if choice == 1:
            out[field.name] = None
        else:
            out[field.name] = draw(fuzzy_json_for(hints[field.name]))
    if draw(st.integers(0, 9)) == 0:
        out[draw(st.sampled_from(["extra", "f9", "F0"]))] = draw(JSON_SCALARS)
    return out


@given(shapes(), st.data())
def test_values_for_builds_instances_of_the_shape(shape: type, data: st.DataObject) -> None:
    value = data.draw(values_for(shape))
    assert isinstance(value, shape)
    json.dumps(dump(value))  # plain JSON


@given(field_types())
def test_field_types_are_types(tp: object) -> None:
    assert tp is not None
