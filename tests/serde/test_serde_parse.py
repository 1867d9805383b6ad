"""parse: strictness, coercion, extra keys, defaults, formats, error reporting."""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import uuid
from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any, Literal, NewType

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from weakprompt.errors import WeakpromptError
from weakprompt.serde import Meta, SerdeError, SerdeIssue, SerdeTypeError, dump, parse


@dataclasses.dataclass(frozen=True)
class Point:
    x: int
    y: float
    label: str = "origin"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Status(enum.Enum):
    TODO = "todo"
    DONE = "done"


@dataclasses.dataclass(frozen=True)
class Step:
    title: str
    status: Status = Status.TODO


@dataclasses.dataclass(frozen=True)
class Plan:
    steps: list[Step]
    tags: tuple[str, ...] = ()


@attrs.frozen
class Slotted:
    _secret: str
    level: Level = Level.LOW
    extras: list[int] = attrs.Factory(list)


@dataclasses.dataclass(frozen=True)
class Tree:
    value: int
    children: list[Tree] = dataclasses.field(default_factory=list)


@dataclasses.dataclass(frozen=True)
class Positive:
    amount: int

    def __post_init__(self) -> None:
        if self.amount <= 0:
            raise ValueError("amount must be positive")


def _issues(tp: object, data: object, **kwargs: Any) -> tuple[SerdeIssue, ...]:
    with pytest.raises(SerdeError) as caught:
        parse(tp, data, **kwargs)
    return caught.value.issues


# -- plain values --------------------------------------------------------------


def test_parse_builds_nested_values() -> None:
    plan = parse(Plan, {"steps": [{"title": "a"}, {"title": "b", "status": "done"}], "tags": ["x"]})
    assert plan == Plan(steps=[Step("a"), Step("b", Status.DONE)], tags=("x",))


def test_missing_optional_fields_take_defaults_and_null_means_default() -> None:
    assert parse(Point, {"x": 1, "y": 2}) == Point(1, 2.0)
    assert parse(Point, {"x": 1, "y": 2, "label": None}) == Point(1, 2.0)
    assert parse(Slotted, {"secret": "s"}) == Slotted("s")


def test_attrs_private_attribute_uses_its_init_alias() -> None:
    value = parse(Slotted, {"secret": "s", "level": 2, "extras": [1]})
    assert value == Slotted("s", Level.HIGH, [1])
    assert dump(value) == {"secret": "s", "level": 2, "extras": [1]}


def test_recursive_types_parse() -> None:
    data = {"value": 1, "children": [{"value": 2, "children": [{"value": 3}]}]}
    assert parse(Tree, data) == Tree(1, [Tree(2, [Tree(3)])])
    (issue,) = _issues(Tree, {"value": 1, "children": [{"value": 2, "children": [{"value": "x"}]}]})
    assert issue.path == "$.children[0].children[0].value"


@pytest.mark.parametrize(
    ("tp", "bad"),
    [
        (int, "3"),
        (int, True),
        (int, 1.5),
        (float, "1.5"),
        (float, False),
        (bool, 1),
        (bool, "true"),
        (str, 3),
        (None, 0),
        (Literal["a"], "b"),
        (list[int], {"a": 1}),
        (dict[str, int], [1]),
        (tuple[int, str], [1]),
        (tuple[int, str], [1, "a", 2]),
    ],
)
def test_no_silent_coercion(tp: object, bad: object) -> None:
    with pytest.raises(SerdeError):
        parse(tp, bad)


def test_integral_numbers_are_integers_and_ints_are_floats() -> None:
    assert parse(int, 3.0) == 3 and type(parse(int, 3.0)) is int
    assert type(parse(float, 3)) is float
    assert type(parse(int | float, 3)) is int
    assert type(parse(int | float, 3.0)) is float
    assert type(parse(float | int, 3)) is int


@pytest.mark.parametrize(
    ("tp", "given_value", "expected"),
    [
        (int, "3", 3),
        (int, " -4 ", -4),
        (float, "1.5", 1.5),
        (float, "2", 2.0),
        (bool, "TRUE", True),
        (bool, "false", False),
        (bool, 0, False),
        (str, 12, "12"),
        (str, 1.5, "1.5"),
        (Decimal, 1.5, Decimal("1.5")),
        (Decimal, 7, Decimal(7)),
        (Literal[1, 2], "2", 2),
        (Literal[True], "true", True),
        (Literal[0.5], "0.5", 0.5),
        (Level, "2", Level.HIGH),
        (int | None, "5", 5),
    ],
)
def test_coerce_accepts_strings_for_numbers_and_booleans(
    tp: object, given_value: object, expected: object
) -> None:
    assert parse(tp, given_value, coerce=True) == expected


@pytest.mark.parametrize(("tp", "bad"), [(int, "3.5"), (bool, "yes"), (bool, 2), (str, True), (Level, "x")])
def test_coerce_still_rejects_nonsense(tp: object, bad: object) -> None:
    with pytest.raises(SerdeError):
        parse(tp, bad, coerce=True)


def test_extra_keys_forbidden_by_default_and_ignorable() -> None:
    issues = _issues(Point, {"x": 1, "y": 2, "z": 3, "odd key": 4})
    assert [issue.path for issue in issues] == ["$.z", '$["odd key"]']
    assert 'unknown field "z"' in issues[0].received
    assert "x, y, label" in issues[0].expected
    assert parse(Point, {"x": 1, "y": 2, "z": 3}, extra="ignore") == Point(1, 2.0)


def test_extra_policy_is_checked() -> None:
    with pytest.raises(ValueError, match="extra"):
        parse(Point, {}, extra="allow")  # type: ignore[arg-type]


def test_all_issues_are_reported_with_paths() -> None:
    issues = _issues(Plan, {"steps": [{"title": 1}, {"status": "later"}, "x"], "tags": [1, "ok", None]})
    assert [issue.path for issue in issues] == [
        "$.steps[0].title",
        "$.steps[1].title",
        "$.steps[1].status",
        "$.steps[2]",
        "$.tags[0]",
        "$.tags[2]",
    ]
    assert issues[1].received == "nothing (missing)"
    assert issues[2].expected == 'one of "todo", "done"'
    assert issues[3].expected == "object Step"


def test_constructor_errors_become_issues() -> None:
    (issue,) = _issues(Positive, {"amount": 0})
    assert issue.path == "$"
    assert "amount must be positive" in issue.received


def test_mapping_and_tuple_inputs_are_accepted() -> None:
    class Frozen(dict[str, object]):
        pass

    assert parse(Point, Frozen(x=1, y=2)) == Point(1, 2.0)
    assert parse(list[int], (1, 2)) == [1, 2]
    assert parse(Sequence[int], [1, 2]) == (1, 2)


def test_dict_values_and_keys_are_checked() -> None:
    assert parse(dict[str, int], {"a": 1}) == {"a": 1}
    (issue,) = _issues(dict[str, int], {"a": "1"})
    assert issue.path == "$.a"
    issues = _issues(dict[str, int], {1: 1})
    assert issues[0].expected == "string key"


# -- constraints -------------------------------------------------------------------


@dataclasses.dataclass
class Limits:
    count: Annotated[int, Meta(ge=1, lt=10)]
    ratio: float = dataclasses.field(default=0.5, metadata={"gt": 0, "le": 1})
    code: Annotated[str, Meta(min_length=2, max_length=4, pattern="^[A-Z]+$")] = "AB"
    items: Annotated[list[int], Meta(min_length=1, max_length=2)] = dataclasses.field(
        default_factory=lambda: [1]
    )
    table: Annotated[dict[str, int], Meta(max_length=1)] = dataclasses.field(default_factory=dict)


@pytest.mark.parametrize(
    ("data", "path"),
    [
        ({"count": 0}, "$.count"),
        ({"count": 10}, "$.count"),
        ({"count": 1, "ratio": 0}, "$.ratio"),
        ({"count": 1, "ratio": 1.5}, "$.ratio"),
        ({"count": 1, "code": "A"}, "$.code"),
        ({"count": 1, "code": "ABCDE"}, "$.code"),
        ({"count": 1, "code": "ab"}, "$.code"),
        ({"count": 1, "items": []}, "$.items"),
        ({"count": 1, "items": [1, 2, 3]}, "$.items"),
        ({"count": 1, "table": {"a": 1, "b": 2}}, "$.table"),
    ],
)
def test_constraints_are_enforced(data: dict[str, object], path: str) -> None:
    (issue,) = _issues(Limits, data)
    assert issue.path == path


def test_constraints_accept_boundaries() -> None:
    value = parse(Limits, {"count": 9, "ratio": 1, "code": "ABCD", "items": [1, 2], "table": {"a": 1}})
    assert value == Limits(9, 1.0, "ABCD", [1, 2], {"a": 1})


def test_constraint_words_in_expected() -> None:
    (issue,) = _issues(Limits, {"count": 0})
    assert issue.expected == "integer >= 1 and < 10"
    (issue,) = _issues(Limits, {"count": 1, "code": "a"})
    assert issue.expected == "string with 2 to 4 characters matching /^[A-Z]+$/"


# -- formats -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tp", "text", "value"),
    [
        (dt.datetime, "2024-05-01T12:30:00+00:00", dt.datetime(2024, 5, 1, 12, 30, tzinfo=dt.UTC)),
        (dt.datetime, "2024-05-01T12:30:00", dt.datetime(2024, 5, 1, 12, 30)),
        (dt.date, "2024-05-01", dt.date(2024, 5, 1)),
        (dt.time, "12:30:00", dt.time(12, 30)),
        (uuid.UUID, "12345678-1234-5678-1234-567812345678", uuid.UUID("12345678123456781234567812345678")),
        (Decimal, "-12.50", Decimal("-12.50")),
        (Decimal, "1E+3", Decimal("1E+3")),
        (Path, "a/b.txt", Path("a/b.txt")),
    ],
)
def test_format_types_round_trip(tp: type, text: str, value: object) -> None:
    assert parse(tp, text) == value
    assert parse(tp, dump(value)) == value


@pytest.mark.parametrize(
    ("tp", "bad"),
    [
        (dt.datetime, "yesterday"),
        (dt.datetime, "20240501"),
        (dt.date, "2024-5-1"),
        (dt.date, "2024-02-30"),
        (dt.date, "2024-05-01\n"),
        (uuid.UUID, "12345678123456781234567812345678"),
        (uuid.UUID, "nope"),
        (Decimal, "NaN"),
        (Decimal, "1,5"),
        (Decimal, 1.5),
        (Path, 3),
    ],
)
def test_format_types_reject_bad_text(tp: type, bad: object) -> None:
    with pytest.raises(SerdeError):
        parse(tp, bad)


def test_any_accepts_whatever_json() -> None:
    @dataclasses.dataclass
    class Loose:
        payload: Any
        other: object = None

    assert parse(Loose, {"payload": [1, {"a": None}]}) == Loose([1, {"a": None}])


def test_union_reports_the_one_branch_with_the_right_shape() -> None:
    (issue,) = _issues(Step | None, {"title": 3})
    assert issue.path == "$.title"
    (issue,) = _issues(int | str, [1])
    assert issue.expected == "integer or string"
    (issue,) = _issues(Step | dict[str, int], {"title": "x", "bad": "y"})
    assert issue.path == "$"


def test_unsupported_types_raise_type_errors() -> None:
    class Plain:
        pass

    for bad in (Plain, set[int], list, dict[int, str], Literal[Status.TODO]):
        with pytest.raises(SerdeTypeError):
            parse(bad, None)


def test_serde_error_is_a_weakprompt_error() -> None:
    with pytest.raises(WeakpromptError):
        parse(int, "x")


@given(st.integers(-(2**70), 2**70))
def test_any_integer_parses_as_int_and_float(number: int) -> None:
    assert parse(int, number) == number
    if abs(number) < 2**53:
        assert parse(float, number) == float(number)


@given(st.text())
def test_strings_pass_through_unchanged(text: str) -> None:
    assert parse(str, text) == text
    with pytest.raises(SerdeError):
        parse(int, text)


UserId = NewType("UserId", int)


def test_newtype_maps_to_its_underlying_type() -> None:
    assert parse(UserId, 3) == 3
    with pytest.raises(SerdeError):
        parse(UserId, "3")


def test_unhashable_annotations_parse_without_caching() -> None:
    odd = Annotated[int, {"unhashable": []}]
    assert parse(odd, 4) == 4
    assert parse(odd, 5) == 5
    with pytest.raises(SerdeError):
        parse(odd, "x")


def test_literal_with_null_and_constrained_optional() -> None:
    assert parse(Literal["a", None], None) is None
    assert parse(Literal["a", None], "a") == "a"
    bounded = Annotated[int | None, Meta(ge=0)]
    assert parse(bounded, None) is None
    assert parse(bounded, 0) == 0
    with pytest.raises(SerdeError):
        parse(bounded, -1)
