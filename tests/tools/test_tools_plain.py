"""``@tool`` on handlers with ordinary typed parameters, and handlers without a context."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from dataclasses import dataclass
from typing import Annotated

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from weakprompt.errors import PromptValidationError
from weakprompt.messages import ToolCall
from weakprompt.runtime import ToolDispatcher, ToolExecution
from weakprompt.serde import Meta
from weakprompt.session import Session
from weakprompt.tools import AnyTool, Tool, ToolArguments, ToolContext, ToolExample, ToolResult, tool


@dataclass(frozen=True)
class Cost:
    city: str
    nights: int
    euros: float


@tool
def city_cost(city: str, nights: int = 1, *, context: ToolContext) -> ToolResult[Cost]:
    """Cost of a stay in a city.

    Longer explanation that is not part of the tool description.

    Args:
        city: City name, e.g. Lisbon.
        nights: How many
            nights to stay.
    """
    assert isinstance(context, ToolContext)
    return ToolResult.ok(Cost(city, nights, 80.0 * nights))


def run(built: AnyTool, arguments: object) -> ToolExecution:
    dispatcher = ToolDispatcher([built], session=Session())
    return dispatcher.execute(ToolCall(id="c1", name=built.name, arguments=arguments))  # type: ignore[arg-type]


# -- what gets built -----------------------------------------------------------------


def test_parameters_become_a_generated_frozen_params_class() -> None:
    params_type = city_cost.params_type
    assert issubclass(params_type, ToolArguments)
    assert dataclasses.is_dataclass(params_type)
    assert [f.name for f in dataclasses.fields(params_type)] == ["city", "nights"]
    value = params_type(city="Lisbon")  # type: ignore[call-arg]
    with pytest.raises(dataclasses.FrozenInstanceError):
        value.city = "Porto"  # type: ignore[attr-defined]
    assert city_cost.result_type is Cost
    assert city_cost.name == "city_cost"


def test_docstring_gives_the_description_and_each_parameter_description() -> None:
    assert city_cost.description == "Cost of a stay in a city."
    schema = city_cost.parameters_schema()
    properties = schema["properties"]
    assert isinstance(properties, dict)
    assert properties["city"] == {"type": "string", "description": "City name, e.g. Lisbon."}
    nights = properties["nights"]
    assert isinstance(nights, dict)
    assert nights["description"] == "How many nights to stay."
    assert nights["default"] == 1
    assert schema["required"] == ["city"]


def test_schema_matches_the_equivalent_params_dataclass() -> None:
    @dataclass
    class Same:
        city: str = dataclasses.field(metadata={"description": "City name, e.g. Lisbon."})
        nights: int = dataclasses.field(default=1, metadata={"description": "How many nights to stay."})

    def handler(params: Same, *, context: ToolContext) -> ToolResult[Cost]:
        raise NotImplementedError

    classic = Tool(
        name="city_cost", description="Cost of a stay in a city.", handler=handler, params_type=Same
    )
    assert city_cost.spec() == classic.spec()


def test_numpy_and_rest_docstrings_are_read_too() -> None:
    @tool
    def numpy_style(city: str) -> ToolResult[None]:
        """Look a city up.

        Parameters
        ----------
        city : str
            The city.
        """
        return ToolResult.ok(None)

    @tool
    def rest_style(city: str) -> ToolResult[None]:
        """Look a city up.

        :param city: The city.
        """
        return ToolResult.ok(None)

    for built in (numpy_style, rest_style):
        properties = built.parameters_schema()["properties"]
        assert isinstance(properties, dict)
        assert properties["city"] == {"type": "string", "description": "The city."}


def test_a_parameter_listed_without_text_gets_no_description() -> None:
    @tool
    def numpy_bare(city: str) -> ToolResult[None]:
        """Look a city up.

        Parameters
        ----------
        city : str
        """
        return ToolResult.ok(None)

    properties = numpy_bare.parameters_schema()["properties"]
    assert isinstance(properties, dict)
    assert properties["city"] == {"type": "string"}


def test_explicit_description_and_name_win_over_the_docstring() -> None:
    @tool(name="stay-cost", description="Given.")
    def stay(city: str) -> ToolResult[None]:
        """From the docstring."""
        return ToolResult.ok(None)

    assert (stay.name, stay.description) == ("stay-cost", "Given.")


def test_an_annotated_description_wins_over_the_docstring() -> None:
    @tool
    def stay(city: Annotated[str, Meta(description="From Meta.", min_length=2)]) -> ToolResult[None]:
        """Stay somewhere.

        Args:
            city: From the docstring.
        """
        return ToolResult.ok(None)

    properties = stay.parameters_schema()["properties"]
    assert isinstance(properties, dict)
    assert properties["city"] == {"type": "string", "description": "From Meta.", "minLength": 2}


def test_a_handler_without_parameters_takes_an_empty_object() -> None:
    @tool
    def ping() -> ToolResult[str]:
        """Answer pong."""
        return ToolResult.ok("pong")

    schema = ping.parameters_schema()
    assert not schema.get("properties")
    execution = run(ping, "")
    assert execution.success and execution.result.value == "pong"


# -- calling ---------------------------------------------------------------------------


def test_the_dispatcher_calls_the_function_with_keyword_arguments_and_the_context() -> None:
    execution = run(city_cost, '{"city": "Lisbon", "nights": 2}')
    assert execution.success, execution.message
    assert execution.result.value == Cost("Lisbon", 2, 160.0)
    params = execution.event.params
    assert isinstance(params, city_cost.params_type)
    assert (params.city, params.nights) == ("Lisbon", 2)  # type: ignore[attr-defined]


def test_defaults_apply_when_the_model_omits_an_argument() -> None:
    execution = run(city_cost, {"city": "Porto"})
    assert execution.result.value == Cost("Porto", 1, 80.0)


def test_bad_arguments_are_failed_results_naming_the_problem() -> None:
    wrong_type = run(city_cost, {"city": "Porto", "nights": "two"})
    assert not wrong_type.success
    assert "nights" in wrong_type.message
    unknown = run(city_cost, {"city": "Porto", "guests": 2})
    assert not unknown.success and "guests" in unknown.message
    missing = run(city_cost, {})
    assert not missing.success and "city" in missing.message


@given(city=st.text(max_size=20), nights=st.integers(min_value=-(2**31), max_value=2**31))
def test_the_function_receives_exactly_what_the_model_sent(city: str, nights: int) -> None:
    seen: list[tuple[str, int]] = []

    @tool
    def echo(city: str, /, nights: int, *, label: str = "x") -> ToolResult[None]:
        """Echo the arguments."""
        seen.append((city, nights))
        return ToolResult.ok(None)

    execution = run(echo, {"city": city, "nights": nights})
    assert execution.success, execution.message
    assert seen == [(city, nights)]


def test_context_is_optional_and_not_passed_when_undeclared() -> None:
    calls: list[str] = []

    @tool
    def shout(text: str) -> ToolResult[str]:
        """Upper-case the text."""
        calls.append(text)
        return ToolResult.ok(text.upper())

    assert run(shout, {"text": "hi"}).result.value == "HI"
    assert calls == ["hi"]


def test_mutable_defaults_are_copied_for_each_call() -> None:
    @tool
    def collect(tags: list[str] = ["a"]) -> ToolResult[list[str]]:
        """Add a tag."""
        tags.append("b")
        return ToolResult.ok(list(tags))

    assert run(collect, {}).result.value == ["a", "b"]
    assert run(collect, {}).result.value == ["a", "b"]


def test_examples_may_give_the_input_as_a_mapping() -> None:
    @tool(examples=(ToolExample("two nights", {"city": "Lisbon", "nights": 2}, Cost("Lisbon", 2, 160.0)),))
    def cost(city: str, nights: int = 1) -> ToolResult[Cost]:
        """Cost of a stay."""
        return ToolResult.ok(Cost(city, nights, 80.0 * nights))

    (example,) = cost.examples
    assert isinstance(example.input, cost.params_type)
    with pytest.raises(
        PromptValidationError, match=r"(?s)tool 'bad': example 0: input does not match.*nights"
    ):

        @tool(name="bad", examples=(ToolExample("x", {"city": "L", "nights": "2"}, None),))
        def bad(city: str, nights: int = 1) -> ToolResult[None]:
            """Bad example."""
            return ToolResult.ok(None)

    with pytest.raises(PromptValidationError, match=r"example 0: input is str, expected BadInputArguments"):

        @tool(name="bad", examples=(ToolExample("x", "Lisbon", None),))
        def bad_input(city: str) -> ToolResult[None]:
            """Bad example."""
            return ToolResult.ok(None)


# -- refused handlers ------------------------------------------------------------------


def test_context_must_be_keyword_only() -> None:
    with pytest.raises(PromptValidationError, match=r"tool 'f': make 'context' keyword-only"):

        @tool
        def f(city: str, context: ToolContext) -> ToolResult[None]:
            """Doc."""
            return ToolResult.ok(None)


def test_a_context_under_another_name_is_refused() -> None:
    with pytest.raises(PromptValidationError, match=r"'ctx' is a ToolContext.*named 'context'"):

        @tool
        def f(city: str, *, ctx: ToolContext) -> ToolResult[None]:
            """Doc."""
            return ToolResult.ok(None)


@pytest.mark.parametrize("star", ["*args: str", "**kwargs: str"])
def test_star_parameters_are_refused(star: str) -> None:
    namespace: dict[str, object] = {"ToolResult": ToolResult}
    exec(f"def f(city: str, {star}) -> ToolResult[None]:\n    '''Doc.'''\n", namespace)
    with pytest.raises(PromptValidationError, match=r"tool 'f': the handler takes \*"):
        tool(namespace["f"])  # type: ignore[call-overload]


def test_a_missing_annotation_names_the_parameter() -> None:
    with pytest.raises(PromptValidationError, match=r"parameter 'nights' has no annotation"):

        @tool
        def f(city: str, nights=1) -> ToolResult[None]:  # type: ignore[no-untyped-def]
            """Doc."""
            return ToolResult.ok(None)


def test_an_unresolvable_annotation_is_reported() -> None:
    with pytest.raises(PromptValidationError, match=r"tool 'f': cannot resolve.*NameError"):

        @tool
        def f(city: str, count: Missing) -> ToolResult[None]:  # type: ignore[name-defined]  # noqa: F821
            """Doc."""
            return ToolResult.ok(None)


def test_an_unresolvable_first_annotation_is_reported() -> None:
    with pytest.raises(PromptValidationError, match=r"tool 'f': cannot resolve the annotation.*'params'"):

        @tool
        def f(params: Missing) -> ToolResult[None]:  # type: ignore[name-defined]  # noqa: F821
            """Doc."""
            return ToolResult.ok(None)


def test_a_type_without_a_schema_is_reported() -> None:
    with pytest.raises(PromptValidationError, match=r"tool 'f': params field 'when' \(complex\) cannot be"):

        @tool
        def f(city: str, when: complex) -> ToolResult[None]:
            """Doc."""
            return ToolResult.ok(None)


def test_the_docstring_may_not_describe_parameters_the_handler_lacks() -> None:
    with pytest.raises(PromptValidationError, match=r"describes a parameter 'town'.*parameters: city"):

        @tool
        def f(city: str, *, context: ToolContext) -> ToolResult[None]:
            """Doc.

            Args:
                context: Documenting the context is fine.
                town: Not a parameter.
            """
            return ToolResult.ok(None)


def test_a_plain_tool_needs_a_description_source() -> None:
    with pytest.raises(PromptValidationError, match="give description= or a docstring"):

        @tool
        def f(city: str) -> ToolResult[None]:
            return ToolResult.ok(None)


def test_a_plain_return_annotation_is_the_result_type() -> None:
    @tool
    def f(city: str) -> str:
        """Doc."""
        return city

    assert f.result_type is str


# -- the params form without a context ---------------------------------------------------


@attrs.frozen
class Lookup:
    entity_id: str


def test_a_params_handler_may_leave_out_the_context() -> None:
    @tool
    def lookup(params: Lookup) -> ToolResult[str]:
        """Fetch an entity."""
        return ToolResult.ok(params.entity_id.upper())

    assert lookup.params_type is Lookup
    assert lookup.result_type is str
    assert run(lookup, {"entity_id": "ab"}).result.value == "AB"


def test_a_params_handler_with_kwargs_gets_the_context_through_them() -> None:
    seen: list[object] = []

    def lookup(params: Lookup, **extra: object) -> ToolResult[None]:
        """Fetch an entity."""
        seen.append(extra.get("context"))
        return ToolResult.ok(None)

    built = tool(lookup)
    assert built.handler is lookup
    assert run(built, {"entity_id": "a"}).success
    assert isinstance(seen[0], ToolContext)


# -- cost --------------------------------------------------------------------------------


def test_docstring_parser_is_imported_only_for_plain_tools() -> None:
    code = """
import sys
from dataclasses import dataclass
from weakprompt.tools import ToolContext, ToolResult, tool

@dataclass
class P:
    x: int

@tool
def classic(params: P, *, context: ToolContext) -> ToolResult[None]:
    '''Doc.'''
    return ToolResult.ok(None)

before = "docstring_parser" in sys.modules

@tool
def plain(x: int) -> ToolResult[None]:
    '''Doc.'''
    return ToolResult.ok(None)

print(before, "docstring_parser" in sys.modules)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]


def test_an_annotated_context_under_another_name_is_refused_too() -> None:
    def f(city: str, *, ctx: Annotated[ToolContext, "ctx"]) -> ToolResult[None]:
        """Doc."""
        return ToolResult.ok(None)

    f.__annotations__ = {"city": str, "ctx": Annotated[ToolContext, "ctx"], "return": ToolResult[None]}
    with pytest.raises(PromptValidationError, match=r"'ctx' is a ToolContext"):
        tool(f)
