"""Edge cases of the kit's generators: odd bounds, odd keys, odd types."""

from __future__ import annotations

import dataclasses
import json
import math
import re
from typing import Annotated, Any, Literal

import pytest
from hypothesis import find, given, settings
from hypothesis import strategies as st
from hypothesis.errors import NoSuchExample, Unsatisfiable
from jsonschema import Draft202012Validator

from weakprompt.serde import Meta, SerdeError, parse, schema
from weakprompt.serde.nodes import FormatNode, NumberNode
from weakprompt.testing import InvalidArguments, InvalidKind, invalid_arguments_for, json_for, values_for
from weakprompt.testing._generate import float_bounds, formatted_strings_for, int_bounds
from weakprompt.testing._invalid import json_path
from weakprompt.tools import Tool, ToolContext, ToolResult


@pytest.mark.parametrize(
    ("node", "expected"),
    [
        (NumberNode(integer=True, ge=0.5, lt=3), (1, 2)),
        (NumberNode(integer=True, gt=1, le=2.5), (2, 2)),
        (NumberNode(integer=True, ge=-math.inf, le=math.inf), (None, None)),
        (NumberNode(integer=True, ge=math.inf), None),
        (NumberNode(integer=True, le=-math.inf), None),
        (NumberNode(integer=True, gt=2, lt=3), None),
    ],
)
def test_integer_ranges_follow_the_bounds(node: NumberNode, expected: object) -> None:
    assert int_bounds(node) == expected


@pytest.mark.parametrize(
    ("node", "expected"),
    [
        (NumberNode(integer=False, ge=0, gt=0), (0, True, None, False)),
        (NumberNode(integer=False, gt=-1, ge=0, le=1, lt=2), (0, False, 1, False)),
        (NumberNode(integer=False, ge=1, lt=1), None),
        (NumberNode(integer=False, ge=2, le=1), None),
    ],
)
def test_float_ranges_pick_the_tighter_bound(node: NumberNode, expected: object) -> None:
    assert float_bounds(node) == expected


@pytest.mark.parametrize(
    "tp",
    [
        Annotated[int, Meta(gt=2, lt=3)],
        Annotated[float, Meta(ge=1, lt=1)],
        Annotated[str, Meta(pattern="^a$", min_length=3)],
    ],
)
def test_a_type_no_value_satisfies_yields_nothing(tp: object) -> None:
    with pytest.raises((NoSuchExample, Unsatisfiable)):
        find(values_for(tp), lambda value: True, settings=settings(max_examples=20, database=None))


def test_a_narrow_float_range_gets_no_integral_numbers() -> None:
    @settings(max_examples=50, database=None)
    @given(json_for(Annotated[float, Meta(gt=0.1, lt=0.9)]))
    def check(value: object) -> None:
        assert isinstance(value, float) and 0.1 < value < 0.9

    check()


def test_patterns_with_a_unicode_flag_still_generate() -> None:
    text = find(values_for(Annotated[str, Meta(pattern=r"(?u)^\w+$")]), lambda value: True)

    assert re.fullmatch(r"\w+", text)


def test_unhashable_annotations_are_generated_without_caching() -> None:
    unhashable = Annotated[int, Meta(ge=3), ["not", "hashable"]]

    assert find(json_for(unhashable), lambda value: True) == 3


def test_a_format_the_kit_does_not_know_is_refused_clearly() -> None:
    with pytest.raises(TypeError, match="cannot generate complex strings yet"):
        formatted_strings_for(FormatNode(complex, None, None, complex))


def test_json_paths_quote_keys_that_are_not_identifiers() -> None:
    assert json_path(["items", 2, "odd key", "ok"]) == '$.items[2]["odd key"].ok'


@dataclasses.dataclass(frozen=True)
class Scores:
    scores: dict[str, float]


@given(key=st.text(min_size=1, max_size=3))
def test_json_paths_name_a_key_exactly_as_serde_does(key: str) -> None:
    """Control characters, quotes and backslashes in a key: the kit points where serde points."""
    with pytest.raises(SerdeError) as refused:
        parse(Scores, {"scores": {key: []}})
    assert [issue.path for issue in refused.value.issues] == [json_path(["scores", key])]


@dataclasses.dataclass(frozen=True)
class Odd:
    """Fields chosen to reach the corners of the mutator."""

    unexpected: int
    anything: Any
    labels: Annotated[dict[str, int], Meta(min_length=1, max_length=2)]
    empty: tuple[()]
    choice: Literal["unexpected", True, 2.5]
    flag: Literal[False, None]
    huge: Annotated[float, Meta(ge=-1e300, le=1e300)]
    either: list[int] | str
    both: int | float | None = None
    every_kind: dict[str, int] | list[int] | str | int | bool | None = None


def _take(params: Odd, *, context: ToolContext) -> ToolResult[None]:
    return ToolResult(message="ok")


ODD = Tool(name="odd", description="Odd fields.", handler=_take)


ODD_VALIDATOR = Draft202012Validator(schema(Odd), format_checker=Draft202012Validator.FORMAT_CHECKER)


@pytest.mark.parametrize(
    "kind",
    [
        "wrong_type",
        "unknown_field",
        "missing_field",
        "too_short",
        "too_long",
        "wrong_length",
        "not_allowed_value",
        "out_of_range",
        "not_an_integer",
    ],
)
def test_invalid_arguments_for_odd_fields_are_refused_by_both(kind: InvalidKind) -> None:
    @settings(max_examples=40, deadline=None)
    @given(invalid_arguments_for(ODD, kinds=[kind]))
    def refused(bad: InvalidArguments) -> None:
        data = json.loads(bad.text)
        assert not ODD_VALIDATOR.is_valid(data), bad
        with pytest.raises(SerdeError):
            parse(Odd, data)
        if bad.kind == "unknown_field":
            assert bad.path == "$.unexpected_"  # "unexpected" is taken by a field

    refused()


def test_state_of_compares_values_that_cannot_be_copied_as_they_are() -> None:
    import threading

    from weakprompt.session import Session
    from weakprompt.testing import state_of

    @dataclasses.dataclass(frozen=True)
    class Guarded:
        lock: Any

    session = Session()
    value = Guarded(threading.Lock())
    session[Guarded].seed([value])

    assert state_of(session)[Guarded][0] is value
