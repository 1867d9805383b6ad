"""The kit's strategies: values, arguments and invalid arguments for every type form serde maps."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Annotated, Any, TypeVar, get_args

import pytest
from hypothesis import Phase, find, given, settings
from hypothesis import strategies as st
from hypothesis.errors import NoSuchExample, Unsatisfiable
from jsonschema import Draft202012Validator

from testing_kit_support import EVERYTHING_TOOL, TYPE_FORMS, Everything, Point, TreeNode
from weakprompt.messages import ToolCall
from weakprompt.serde import Meta, SerdeError, StrictSchemaError, dump, parse, schema
from weakprompt.testing import (
    InvalidArguments,
    InvalidKind,
    arguments_for,
    invalid_arguments_for,
    params_for,
    tool_calls_for,
    values_for,
)
from weakprompt.tools import NoParams, Tool, ToolContext, ToolResult

FORMATS = Draft202012Validator.FORMAT_CHECKER


def validator(tp: object, *, strict: bool = False) -> Draft202012Validator:
    return Draft202012Validator(schema(tp, strict=strict), format_checker=FORMATS)


def holder(tp: object) -> type:
    """A class with one field of ``tp``: the only way to get a strict schema for a bare form."""
    return dataclasses.make_dataclass("Holder", [("value", tp)], frozen=True)


@pytest.mark.parametrize("form", list(TYPE_FORMS), ids=list(TYPE_FORMS))
def test_generated_values_parse_and_validate_against_the_schemas(form: str) -> None:
    tp = TYPE_FORMS[form]
    plain = validator(tp)
    # A one-field class around the form: the value inside is drawn by the form's own
    # generator, and the class has a strict schema wherever the form allows one.
    wrapped = holder(tp)
    try:
        strict: Draft202012Validator | None = validator(wrapped, strict=True)
    except StrictSchemaError:  # Any and dict have no strict-mode schema
        strict = None

    @settings(max_examples=200, deadline=None)
    @given(boxed=values_for(wrapped))
    def check(boxed: Any) -> None:
        value = boxed.value
        data = dump(value)
        assert json.loads(json.dumps(data)) == data
        assert list(plain.iter_errors(data)) == []
        assert parse(tp, data) == value
        boxed_data = dump(boxed)
        assert parse(wrapped, boxed_data) == boxed
        if strict is not None:
            assert list(strict.iter_errors(boxed_data)) == []

    check()


def test_every_type_form_gets_values_of_its_type() -> None:
    point = find(values_for(Point), lambda p: True)
    tree = find(values_for(TreeNode), lambda t: len(t.children) > 0)

    assert point == Point(x=0, y=0.5) or isinstance(point, Point)
    assert isinstance(tree, TreeNode) and isinstance(tree.children[0], TreeNode)


def test_values_shrink_to_the_simplest_counterexample() -> None:
    bounded = Annotated[int, Meta(ge=10, le=1000)]

    assert find(values_for(bounded), lambda n: n > 15) == 16
    assert find(values_for(Point), lambda p: p.x > 5) == Point(x=6, y=0.5)
    assert find(values_for(list[Point]), lambda ps: len(ps) >= 2) == [Point(0, 0.5), Point(0, 0.5)]


def test_strategies_compose_with_ordinary_hypothesis_strategies() -> None:
    pairs = st.tuples(values_for(Point), st.integers(0, 3))
    filtered = values_for(Point).filter(lambda p: p.x < 0).map(lambda p: p.x)

    assert find(pairs, lambda pair: pair[1] == 3) == (Point(0, 0.5), 3)
    assert find(filtered, lambda x: True) == -1


@settings(max_examples=100, deadline=None)
@given(arguments=arguments_for(EVERYTHING_TOOL), text=arguments_for(EVERYTHING_TOOL, as_text=True))
def test_arguments_are_json_objects_the_tool_accepts(arguments: dict[str, Any], text: str) -> None:
    check = validator(Everything)
    for data in (arguments, json.loads(text)):
        assert isinstance(data, dict)
        assert list(check.iter_errors(data)) == []
        assert isinstance(parse(Everything, data), Everything)


T = TypeVar("T")
NO_SHRINKING = settings(phases=[Phase.generate], max_examples=500, database=None)


def first(strategy: st.SearchStrategy[T], condition: Callable[[T], bool]) -> T:
    """The first generated example meeting ``condition`` (a big type is slow to shrink)."""
    return find(strategy, condition, settings=NO_SHRINKING)


def test_arguments_include_model_style_nulls_and_omissions_and_full_dumps() -> None:
    arguments = arguments_for(EVERYTHING_TOOL)
    every_field = len(dataclasses.fields(Everything))

    assert "maybe" not in first(arguments, lambda a: "maybe" not in a)
    assert first(arguments, lambda a: a.get("items", []) is None)["items"] is None
    assert len(first(arguments, lambda a: len(a) == every_field)) == every_field


@settings(max_examples=100, deadline=None)
@given(params=params_for(EVERYTHING_TOOL))
def test_params_are_instances_of_the_tools_params_type(params: Everything) -> None:
    assert isinstance(params, Everything)
    assert 0 <= len(params.items) <= 3 and all(0 <= item <= 9 for item in params.items)


@dataclasses.dataclass(frozen=True)
class Even:
    number: int

    def __post_init__(self) -> None:
        if self.number % 2:
            raise ValueError("odd")


def test_values_the_class_itself_refuses_are_left_out() -> None:
    @settings(max_examples=50, deadline=None)
    @given(values_for(Even))
    def check(value: Even) -> None:
        assert value.number % 2 == 0

    check()


# -- invalid arguments -------------------------------------------------------------------------------


def refused_by_serde(tp: type, data: object) -> SerdeError | None:
    try:
        parse(tp, data)
    except SerdeError as exc:
        return exc
    return None


def _tool(params_type: type) -> Tool[Any, Any]:
    def handler(params: Any, *, context: ToolContext) -> ToolResult[None]:
        return ToolResult(message="ok")

    return Tool(name="t", description="A tool.", handler=handler, params_type=params_type, result_type=None)


@pytest.mark.parametrize(
    "params_type", [Everything, Point, holder(TreeNode), NoParams, holder(TYPE_FORMS["union constrained"])]
)
def test_invalid_arguments_are_refused_by_serde_and_by_the_schema(params_type: type) -> None:
    tool = _tool(params_type)
    check = validator(params_type)

    @settings(max_examples=200, deadline=None)
    @given(invalid_arguments_for(tool))
    def refused(bad: InvalidArguments) -> None:
        try:
            data = json.loads(bad.text)
        except ValueError:
            assert bad.kind == "broken_json"
            return
        assert bad.kind != "broken_json" and bad.text.strip()
        assert check.is_valid(data) is False, bad
        error = refused_by_serde(params_type, data)
        assert error is not None, bad
        if bad.kind not in ("not_an_object", "too_short", "too_long", "wrong_length"):
            # The label points where serde found the problem (or inside it, for unions).
            assert any(bad.path.startswith(issue.path) for issue in error.issues), (bad, error.issues)

    refused()


ALL_KINDS: tuple[InvalidKind, ...] = get_args(InvalidKind)


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_every_kind_of_mistake_can_be_asked_for(kind: InvalidKind) -> None:
    check = validator(Everything)

    @settings(max_examples=15, deadline=None)
    @given(invalid_arguments_for(EVERYTHING_TOOL, kinds=[kind]))
    def only_that_kind(bad: InvalidArguments) -> None:
        assert bad.kind == kind and bad.reason and bad.path.startswith("$") and kind in str(bad)
        if kind != "broken_json":
            data = json.loads(bad.text)
            assert not check.is_valid(data)
            assert refused_by_serde(Everything, data) is not None

    only_that_kind()


def test_asking_for_an_unknown_kind_is_an_error() -> None:
    with pytest.raises(ValueError, match="unknown kinds of invalid arguments: typo"):
        invalid_arguments_for(EVERYTHING_TOOL, kinds=["typo"])  # type: ignore[list-item]


def test_a_mistake_the_type_has_no_place_for_finds_nothing() -> None:
    with pytest.raises((NoSuchExample, Unsatisfiable)):
        find(invalid_arguments_for(_tool(Point), kinds=["pattern_mismatch"]), lambda bad: True)


def test_invalid_examples_shrink_to_a_small_labelled_example() -> None:
    bad = find(invalid_arguments_for(_tool(Point)), lambda b: b.kind == "missing_field")

    assert bad == InvalidArguments(
        text="{}", kind="missing_field", reason="required field 'x' is missing", path="$.x"
    )


# -- tool calls ---------------------------------------------------------------------------------------


def _outcome(call: ToolCall) -> str:
    if call.name not in {"everything", "t"}:
        return "unknown"
    params_type = Everything if call.name == "everything" else Point
    arguments = call.arguments
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return "broken"
    return "valid" if refused_by_serde(params_type, arguments) is None else "invalid"


@pytest.mark.parametrize("outcome", ["unknown", "broken", "valid", "invalid"])
def test_tool_calls_cover_valid_invalid_and_unknown_names(outcome: str) -> None:
    calls = tool_calls_for([EVERYTHING_TOOL, _tool(Point)])

    assert _outcome(first(calls, lambda call: _outcome(call) == outcome)) == outcome


def test_tool_calls_can_be_restricted_to_valid_ones() -> None:
    @settings(max_examples=60, deadline=None)
    @given(tool_calls_for([EVERYTHING_TOOL], invalid=False, unknown=False))
    def check(call: ToolCall) -> None:
        assert call.name == "everything"
        arguments = json.loads(call.arguments) if isinstance(call.arguments, str) else call.arguments
        assert refused_by_serde(Everything, arguments) is None

    check()
