"""Handlers may return plain values; types JSON cannot express are refused where they are defined."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, TypeVar, Union

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from weakprompt.errors import PromptValidationError
from weakprompt.messages import ToolCall
from weakprompt.prompt import MarkdownSection, PromptTemplate
from weakprompt.runtime import ToolDispatcher, ToolExecution
from weakprompt.serde import Meta
from weakprompt.serde.expressible import unexpressible
from weakprompt.session import Session
from weakprompt.tools import AnyTool, NoParams, Tool, ToolContext, ToolResult, tool


@dataclass(frozen=True)
class Lookup:
    city: str


@dataclass(frozen=True)
class Weather:
    city: str
    celsius: float


@attrs.frozen
class AttrsWeather:
    city: str


T = TypeVar("T")


def run(built: AnyTool, arguments: dict[str, object]) -> ToolExecution:
    dispatcher = ToolDispatcher([built], session=Session())
    return dispatcher.execute(ToolCall(id="c1", name=built.name, arguments=arguments))  # type: ignore[arg-type]


def run_async(built: AnyTool, arguments: dict[str, object]) -> ToolExecution:
    dispatcher = ToolDispatcher([built], session=Session())
    call = ToolCall(id="c1", name=built.name, arguments=arguments)  # type: ignore[arg-type]
    return asyncio.run(dispatcher.execute_async(call))


# -- plain return values ----------------------------------------------------------------------


@tool
def forecast(city: str) -> str:
    """Forecast for a city."""
    return f"sunny in {city}"


@tool
def weather(params: Lookup, *, context: ToolContext) -> Weather:
    """Weather in a city."""
    return Weather(params.city, 21.5)


@tool
async def weather_later(params: Lookup) -> AttrsWeather:
    """Weather in a city, asynchronously."""
    await asyncio.sleep(0)
    return AttrsWeather(params.city)


@tool
def totals(city: str) -> dict[str, list[int]]:
    """JSON data."""
    return {city: [1, 2]}


@tool
def forget(city: str) -> None:
    """Forget a city; nothing to report."""


@tool
def refuse(city: str) -> ToolResult[str]:
    """Still allowed to fail."""
    return ToolResult.error(f"no data for {city}")


def test_a_plain_str_return_is_a_successful_result_carrying_it() -> None:
    execution = run(forecast, {"city": "Lisbon"})
    assert forecast.result_type is str
    assert execution.result == ToolResult.ok("sunny in Lisbon")
    assert execution.message == '"sunny in Lisbon"' and execution.event.success


def test_a_plain_dataclass_return_from_the_params_form_is_shown_as_json() -> None:
    execution = run(weather, {"city": "Oslo"})
    assert weather.result_type is Weather
    assert execution.result.value == Weather("Oslo", 21.5) and execution.result.success
    assert execution.message == '{"city":"Oslo","celsius":21.5}'


@pytest.mark.parametrize("runner", [run, run_async])
def test_an_async_handler_returning_a_plain_attrs_value_succeeds(
    runner: Callable[[AnyTool, dict[str, object]], ToolExecution],
) -> None:
    execution = runner(weather_later, {"city": "Rome"})
    assert execution.result == ToolResult.ok(AttrsWeather("Rome"))
    assert execution.message == '{"city":"Rome"}'


def test_plain_json_data_is_a_result_value() -> None:
    assert run(totals, {"city": "Bern"}).message == '{"Bern":[1,2]}'


def test_a_handler_annotated_none_returning_none_is_a_success_without_a_value() -> None:
    execution = run(forget, {"city": "Bern"})
    assert forget.result_type is None
    assert execution.result == ToolResult.ok(None)
    assert execution.result.success and execution.message == ""


def test_returning_a_tool_result_keeps_its_failure() -> None:
    execution = run(refuse, {"city": "Bern"})
    assert not execution.result.success and execution.message == "no data for Bern"


@given(st.text())
def test_any_plain_text_comes_back_as_the_value(text: str) -> None:
    @tool
    def echo(value: str) -> str:
        """Echo."""
        return value

    execution = run(echo, {"value": text})
    assert execution.result.value == text or not execution.result.success  # lone surrogates are refused


# -- types JSON cannot express are refused where they are defined --------------------------------


@dataclass(frozen=True)
class WithCallback:
    city: str
    callback: Callable[[str], None]


@dataclass(frozen=True)
class Nested:
    inner: WithPattern | None


@dataclass(frozen=True)
class WithPattern:
    ok: int
    patterns: list[re.Pattern[str]]


def test_a_params_callable_field_is_refused_by_tool_naming_the_field() -> None:
    def lookup(params: WithCallback) -> str:
        """Look up."""
        return params.city

    with pytest.raises(
        PromptValidationError,
        match=r"^tool 'lookup': params field 'callback' \(collections\.abc\.Callable\[\[str\], None\]\) "
        r"cannot be expressed as JSON",
    ):
        tool(lookup)


def test_a_plain_parameter_typed_callable_is_refused_naming_the_parameter() -> None:
    def notify(city: str, callback: Callable[[str], None]) -> str:
        """Notify."""
        return city

    with pytest.raises(PromptValidationError, match=r"^tool 'notify': params field 'callback'"):
        tool(notify)


def test_a_result_type_re_pattern_is_refused_by_tool() -> None:
    def compile_it(pattern: str) -> re.Pattern[str]:
        """Compile."""
        return re.compile(pattern)

    with pytest.raises(
        PromptValidationError, match=r"^tool 'compile_it': result type \(re\.Pattern\[str\]\) cannot be"
    ):
        tool(compile_it)


def test_tool_result_of_re_pattern_is_refused_at_definition_not_at_call_time() -> None:
    def compile_it(pattern: str) -> ToolResult[re.Pattern[str]]:
        """Compile."""
        return ToolResult.ok(re.compile(pattern))

    with pytest.raises(PromptValidationError, match=r"^tool 'compile_it': result type"):
        tool(compile_it)


def test_a_nested_result_field_is_named_by_its_path() -> None:
    def find(params: Lookup) -> Nested:
        """Find."""
        return Nested(None)

    with pytest.raises(
        PromptValidationError, match=r"result field 'inner\.patterns\[\]' \(re\.Pattern\[str\]\)"
    ):
        tool(find)


def test_an_explicit_result_type_json_cannot_express_is_refused_by_the_constructor() -> None:
    def handler(params: NoParams, *, context: ToolContext) -> ToolResult[None]:
        return ToolResult.ok(None)

    with pytest.raises(PromptValidationError, match=r"^tool 't': result type \(re\.Pattern\) cannot be"):
        Tool(name="t", description="d", handler=handler, result_type=re.Pattern)  # type: ignore[arg-type]


class Shown:
    """Not a dataclass, but it says how the model sees it."""

    def render(self) -> str:
        return "shown"


def test_a_result_class_that_renders_itself_needs_no_json() -> None:
    @tool
    def show(city: str) -> Shown:
        """Show."""
        return Shown()

    assert show.result_type is Shown
    assert run(show, {"city": "x"}).message == "shown"


def test_an_output_type_with_a_re_pattern_field_is_refused_naming_the_template_and_field() -> None:
    with pytest.raises(
        PromptValidationError,
        match=r"^prompt tests/out: output field 'patterns\[\]' \(re\.Pattern\[str\]\) cannot be expressed",
    ):
        PromptTemplate(
            ns="tests",
            key="out",
            sections=[MarkdownSection(title="T", key="t", template="Answer.")],
            output_type=WithPattern,
        )


def test_an_output_list_of_a_class_with_a_callable_is_refused() -> None:
    with pytest.raises(PromptValidationError, match=r"output field '\[\]\.callback'"):
        PromptTemplate(
            ns="tests",
            key="out",
            sections=[MarkdownSection(title="T", key="t", template="Answer.")],
            output_type=list[WithCallback],
        )


# -- how the field path is found ---------------------------------------------------------------


@attrs.frozen
class AttrsHolder:
    name: str
    pattern: Annotated[re.Pattern[str], Meta(description="a compiled pattern")]


@dataclass
class Unresolvable:
    later: NotDefinedAnywhere  # type: ignore[name-defined]  # noqa: F821


class PlainClass:
    pass


def test_the_path_goes_through_annotated_attrs_fields_and_mappings() -> None:
    found = unexpressible(dict[str, AttrsHolder])
    assert found is not None
    assert (found.path, found.type) == ("[].pattern", re.Pattern[str])


def test_a_class_whose_annotations_do_not_resolve_is_itself_the_problem() -> None:
    found = unexpressible(list[Unresolvable])
    assert found is not None
    assert found.path == "[]" and found.type is Unresolvable and "cannot resolve" in found.reason


def test_a_plain_class_or_a_callable_is_the_innermost_part() -> None:
    assert unexpressible(str) is None
    plain = unexpressible(tuple[int, PlainClass])
    assert plain is not None and (plain.path, plain.type) == ("[]", PlainClass)
    assert f"({__name__}.PlainClass)" in plain.describe("tool 'x'", "result")
    callable_field = unexpressible(Callable[[int], int])
    assert callable_field is not None and callable_field.path == ""
    typevar = unexpressible(list[T])  # type: ignore[valid-type]
    assert typevar is not None and typevar.path == "[]" and typevar.type is T


def test_a_handler_returning_a_result_or_a_plain_value_has_the_plain_type() -> None:
    @tool
    def either(params: Lookup) -> ToolResult[Weather] | Weather:
        """Either form."""
        if not params.city:
            return ToolResult.error("which city?")
        return Weather(params.city, 1.0)

    @tool
    def widened(city: str) -> ToolResult[int] | str:
        """Widened."""
        return city

    @tool
    def maybe(city: str) -> ToolResult | None:  # type: ignore[type-arg]
        """Nothing either way."""
        return None

    assert either.result_type is Weather
    assert widened.result_type == int | str or widened.result_type == Union[int, str]  # noqa: UP007
    assert maybe.result_type is None
    assert run(either, {"city": ""}).message == "which city?"
    assert run(either, {"city": "Oslo"}).result.value == Weather("Oslo", 1.0)
