"""Tool definitions: validation at construction and type inference from handlers."""

from __future__ import annotations

import dataclasses
import functools
import string
from dataclasses import dataclass
from typing import TYPE_CHECKING, Never

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from weakprompt.errors import PromptValidationError
from weakprompt.tools import AnyTool, NoParams, Tool, ToolExample, ToolResult, tool

if TYPE_CHECKING:
    from weakprompt.tools import ToolContext


@dataclass
class LookupParams:
    entity_id: str
    limit: int = 10


@dataclass
class LookupResult:
    url: str


@attrs.frozen
class AttrsParams:
    query: str


def lookup(params: LookupParams, *, context: ToolContext) -> ToolResult[LookupResult]:
    """Fetch one entity by id.

    The rest of the docstring is not part of the description.
    """
    return ToolResult.ok(LookupResult(url=f"https://example.test/{params.entity_id}"))


def make(**overrides: object) -> AnyTool:
    fields: dict[str, object] = {"name": "lookup", "description": "Fetch an entity.", "handler": lookup}
    fields.update(overrides)
    return Tool(**fields)  # type: ignore[arg-type]


# -- inference -------------------------------------------------------------------


def test_params_and_result_types_are_read_from_the_handler_annotations() -> None:
    built = make()
    assert built.params_type is LookupParams
    assert built.result_type is LookupResult


def test_explicit_types_win_over_annotations() -> None:
    def untyped(params, *, context):  # type: ignore[no-untyped-def]
        return ToolResult.ok(None)

    built = Tool(
        name="untyped",
        description="no annotations at all",
        handler=untyped,  # pyright: ignore[reportUnknownArgumentType]
        params_type=AttrsParams,
        result_type=None,
    )
    assert built.params_type is AttrsParams
    assert built.result_type is None


def test_explicit_params_type_needs_no_annotation_on_the_handler() -> None:
    def untyped(params, *, context):  # type: ignore[no-untyped-def]
        return ToolResult.ok(None)

    built = Tool(
        name="untyped",
        description="only the params type is given",
        handler=untyped,  # pyright: ignore[reportUnknownArgumentType]
        params_type=AttrsParams,
    )
    assert built.params_type is AttrsParams
    assert built.result_type is None


def test_explicit_params_type_still_reads_the_result_annotation() -> None:
    def half(params, *, context) -> ToolResult[LookupResult]:  # type: ignore[no-untyped-def]
        return ToolResult.ok(LookupResult("u"))

    built = Tool(name="half", description="d", handler=half, params_type=AttrsParams)  # pyright: ignore[reportUnknownArgumentType]
    assert (built.params_type, built.result_type) == (AttrsParams, LookupResult)


def test_explicit_result_type_needs_no_return_annotation_and_ignores_a_broken_one() -> None:
    def handler(params: LookupParams, *, context: ToolContext) -> Missing:  # type: ignore[name-defined]  # noqa: F821
        return ToolResult.ok(LookupResult("u"))

    built = Tool(name="t", description="d", handler=handler, result_type=LookupResult)  # pyright: ignore[reportUnknownArgumentType]
    assert (built.params_type, built.result_type) == (LookupParams, LookupResult)


def test_explicit_none_result_type_is_kept_even_when_annotated() -> None:
    assert make(result_type=None).result_type is None


def test_toolresult_none_never_and_bare_annotations_mean_no_result_type() -> None:
    def returns_none(params: LookupParams, *, context: ToolContext) -> ToolResult[None]:
        return ToolResult.error("x")

    def returns_never(params: LookupParams, *, context: ToolContext) -> ToolResult[Never]:
        return ToolResult.error("x")

    def returns_bare(params: LookupParams, *, context: ToolContext) -> ToolResult:  # type: ignore[type-arg]
        return ToolResult.error("x")

    def unannotated_return(params: LookupParams, *, context: ToolContext):  # type: ignore[no-untyped-def]
        return ToolResult.error("x")

    for handler in (returns_none, returns_never, returns_bare, unannotated_return):
        built = Tool(name="t", description="d", handler=handler)  # pyright: ignore[reportUnknownArgumentType]
        assert built.params_type is LookupParams
        assert built.result_type is None


def test_generic_result_types_are_kept_as_written() -> None:
    def many(params: LookupParams, *, context: ToolContext) -> ToolResult[list[LookupResult]]:
        return ToolResult.ok([])

    built = Tool(
        name="many",
        description="d",
        handler=many,
        examples=(ToolExample("two results", LookupParams("a"), [LookupResult("u")]),),
    )
    assert built.result_type == list[LookupResult]


def test_inference_works_for_methods_partials_and_callable_objects() -> None:
    class Service:
        def handle(self, params: AttrsParams, *, context: ToolContext) -> ToolResult[LookupResult]:
            return ToolResult.ok(LookupResult(params.query))

        def __call__(self, params: LookupParams, *, context: ToolContext) -> ToolResult[str]:
            return ToolResult.ok(params.entity_id)

    def with_prefix(prefix: str, params: AttrsParams, *, context: ToolContext) -> ToolResult[LookupResult]:
        return ToolResult.ok(LookupResult(prefix + params.query))

    method_tool = Tool(name="m", description="d", handler=Service().handle)
    assert (method_tool.params_type, method_tool.result_type) == (AttrsParams, LookupResult)
    object_tool = Tool(name="o", description="d", handler=Service())
    assert (object_tool.params_type, object_tool.result_type) == (LookupParams, str)
    partial_tool = Tool(name="p", description="d", handler=functools.partial(with_prefix, "x"))
    assert (partial_tool.params_type, partial_tool.result_type) == (AttrsParams, LookupResult)


def test_only_the_needed_annotations_are_resolved() -> None:
    # ``context`` names a type that does not exist at runtime (as with an import
    # under TYPE_CHECKING); the params and return annotations still resolve.
    def handler(params: LookupParams, *, context: NotImportedAnywhere) -> ToolResult[LookupResult]:  # type: ignore[name-defined]  # noqa: F821
        return ToolResult.ok(LookupResult("u"))

    built = Tool(name="t", description="d", handler=handler)  # pyright: ignore[reportUnknownArgumentType]
    assert built.params_type is LookupParams


def test_missing_params_annotation_is_a_clear_error() -> None:
    def handler(params, *, context: ToolContext) -> ToolResult[None]:  # type: ignore[no-untyped-def]
        return ToolResult.error("x")

    with pytest.raises(PromptValidationError, match=r"'params' has no annotation.*params_type="):
        Tool(name="t", description="d", handler=handler)  # pyright: ignore[reportUnknownArgumentType]


def test_handler_without_positional_parameter_is_rejected() -> None:
    def handler(*, context: ToolContext) -> ToolResult[None]:
        return ToolResult.error("x")

    with pytest.raises(PromptValidationError, match="first positional parameter"):
        Tool(name="t", description="d", handler=handler)  # type: ignore[arg-type]


def swapped_annotated(context: ToolContext, params: LookupParams) -> ToolResult[None]:
    return ToolResult.error("x")


def swapped_untyped(context, params):  # type: ignore[no-untyped-def]
    return ToolResult.error("x")


def swapped_named(context: LookupParams, *, ctx: ToolContext) -> ToolResult[None]:
    return ToolResult.error("x")


@pytest.mark.parametrize("handler", [swapped_annotated, swapped_untyped, swapped_named])
def test_swapped_parameters_are_named_as_such(handler: object) -> None:
    expected = r"tool 't': the handler's first parameter 'context' is the context.*look swapped"
    with pytest.raises(PromptValidationError, match=expected):
        Tool(name="t", description="d", handler=handler)  # type: ignore[arg-type]
    # explicit types do not hide it: the call would still go wrong
    with pytest.raises(PromptValidationError, match=expected):
        Tool(name="t", description="d", handler=handler, params_type=LookupParams, result_type=None)  # type: ignore[arg-type]
    with pytest.raises(PromptValidationError, match=r"tool 'swapped_\w+'.*look swapped"):
        tool(handler)  # type: ignore[call-overload]


def test_a_context_annotation_under_any_name_counts_as_swapped() -> None:
    def handler(ctx: ToolContext, params: LookupParams) -> ToolResult[None]:
        return ToolResult.error("x")

    with pytest.raises(PromptValidationError, match=r"first parameter 'ctx' is the context"):
        Tool(name="t", description="d", handler=handler)  # type: ignore[arg-type]


def test_a_positional_only_params_parameter_may_be_called_context() -> None:
    def handler(context: LookupParams, /, **extra: object) -> ToolResult[None]:
        return ToolResult.error("x")

    assert Tool(name="t", description="d", handler=handler).params_type is LookupParams


def test_unresolvable_params_annotation_names_the_tool() -> None:
    def handler(params: Missing, *, context: ToolContext) -> ToolResult[None]:  # type: ignore[name-defined]  # noqa: F821
        return ToolResult.error("x")

    with pytest.raises(PromptValidationError, match=r"tool .t.: cannot resolve.*NameError.*params_type="):
        Tool(name="t", description="d", handler=handler)  # pyright: ignore[reportUnknownArgumentType]


def test_unresolvable_return_annotation_points_at_result_type() -> None:
    def handler(params: LookupParams, *, context: ToolContext) -> Missing:  # type: ignore[name-defined]  # noqa: F821
        return ToolResult.error("x")

    with pytest.raises(PromptValidationError, match=r"cannot resolve.*pass result_type= explicitly"):
        Tool(name="t", description="d", handler=handler)  # pyright: ignore[reportUnknownArgumentType]


def test_a_plain_return_annotation_is_the_result_type() -> None:
    def handler(params: LookupParams, *, context: ToolContext) -> str:
        return "x"

    assert Tool(name="t", description="d", handler=handler).result_type is str


def test_unreadable_signature_is_reported() -> None:
    with pytest.raises(PromptValidationError, match="cannot read the handler's signature"):
        Tool(name="t", description="d", handler=max)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [int, dict, "LookupParams", LookupParams(entity_id="x")])
def test_params_type_must_be_a_dataclass_or_attrs_class(bad: object) -> None:
    with pytest.raises(
        PromptValidationError, match="params_type must be a dataclass, an attrs class or a pydantic model"
    ):
        make(params_type=bad)


def test_attrs_and_no_params_are_valid_params_types() -> None:
    assert make(params_type=AttrsParams).params_type is AttrsParams
    assert make(params_type=NoParams).params_type is NoParams
    assert dataclasses.fields(NoParams) == ()


def test_handler_must_be_callable() -> None:
    with pytest.raises(PromptValidationError, match="is not callable"):
        make(handler="lookup", params_type=LookupParams, result_type=None)


# -- name and description --------------------------------------------------------------


@given(st.from_regex(r"[a-z0-9_-]{1,64}", fullmatch=True))
def test_every_name_matching_the_pattern_is_accepted(name: str) -> None:
    assert make(name=name).name == name


@given(
    st.one_of(
        st.just(""),
        st.text(alphabet=string.ascii_lowercase, min_size=65, max_size=80),
        st.text(min_size=1, max_size=20).filter(
            lambda s: any(c not in string.ascii_lowercase + string.digits + "_-" for c in s)
        ),
    )
)
def test_names_outside_the_pattern_are_rejected_with_the_rule(name: str) -> None:
    with pytest.raises(PromptValidationError, match=r"tool name .* is invalid: use 1-64 characters"):
        make(name=name)


def test_description_limits() -> None:
    assert len(make(description="x" * 200).description) == 200
    with pytest.raises(PromptValidationError, match="201 characters; the limit is 200"):
        make(description="x" * 201)
    for empty in ("", "   \n"):
        with pytest.raises(PromptValidationError, match="description must be non-empty"):
            make(description=empty)


# -- examples -----------------------------------------------------------------------


def test_examples_are_checked_against_params_and_result_types() -> None:
    good = ToolExample("by id", LookupParams("a"), LookupResult("u"))
    assert make(examples=(good,)).examples == (good,)
    with pytest.raises(
        PromptValidationError, match=r"example 0: input is AttrsParams, expected LookupParams"
    ):
        make(examples=(ToolExample("bad", AttrsParams("q"), LookupResult("u")),))
    with pytest.raises(PromptValidationError, match=r"example 1: output is str"):
        make(examples=(good, ToolExample("bad", LookupParams("a"), "not a result")))
    with pytest.raises(PromptValidationError, match="example 0 is str, expected ToolExample"):
        make(examples=("not an example",))
    with pytest.raises(PromptValidationError, match="examples must be a tuple"):
        make(examples=[good])


def test_example_output_must_be_none_without_result_type() -> None:
    assert make(result_type=None, examples=(ToolExample("d", LookupParams("a"), None),)).examples
    with pytest.raises(PromptValidationError, match="output is LookupResult"):
        make(result_type=None, examples=(ToolExample("d", LookupParams("a"), LookupResult("u")),))


def test_example_description_is_limited_to_200_characters() -> None:
    assert ToolExample("x" * 200, 1, 2).description == "x" * 200
    with pytest.raises(ValueError, match="201 characters; the limit is 200"):
        ToolExample("x" * 201, 1, 2)


def test_tools_hash_even_when_examples_hold_unhashable_values() -> None:
    built = make(examples=(ToolExample("by id", LookupParams("a"), LookupResult("u")),))
    assert hash(built) == hash(make(examples=()))
    assert built != make(examples=())


# -- decorator -----------------------------------------------------------------------


def test_decorator_defaults_name_and_first_docstring_line() -> None:
    built = tool(lookup)
    assert built.name == "lookup"
    assert built.description == "Fetch one entity by id."
    assert built.handler is lookup
    assert built.params_type is LookupParams


def test_decorator_with_arguments() -> None:
    example = ToolExample("by id", LookupParams("a"), LookupResult("u"))

    @tool(name="find-entity", description="Find it.", examples=(example,), accepts_overrides=False)
    def find(params: LookupParams, *, context: ToolContext) -> ToolResult[LookupResult]:
        return ToolResult.ok(LookupResult("u"))

    assert isinstance(find, Tool)
    assert (find.name, find.description, find.examples, find.accepts_overrides) == (
        "find-entity",
        "Find it.",
        (example,),
        False,
    )


def test_decorator_requires_a_description_source() -> None:
    with pytest.raises(PromptValidationError, match="give description= or a docstring"):

        @tool
        def undocumented(params: LookupParams, *, context: ToolContext) -> ToolResult[None]:
            return ToolResult.error("x")


def test_decorator_validates_the_function_name() -> None:
    with pytest.raises(PromptValidationError, match="'Upper' is invalid"):

        @tool
        def Upper(params: LookupParams, *, context: ToolContext) -> ToolResult[None]:
            """Has a docstring."""
            return ToolResult.error("x")


# -- schema and spec -------------------------------------------------------------------


def test_spec_holds_name_description_and_the_params_schema() -> None:
    built = make()
    spec = built.spec()
    assert spec["name"] == "lookup"
    assert spec["description"] == "Fetch an entity."
    parameters = spec["parameters"]
    assert isinstance(parameters, dict)
    assert parameters == built.parameters_schema()
    assert parameters["type"] == "object"
    properties = parameters["properties"]
    assert isinstance(properties, dict)
    assert set(properties) == {"entity_id", "limit"}
    assert parameters.get("required") == ["entity_id"]


def test_spec_is_built_once_and_evolve_rebuilds_it() -> None:
    built = make()
    assert built.spec() is built.spec()
    renamed = attrs.evolve(built, name="lookup2")
    assert renamed.spec()["name"] == "lookup2"
    assert built.spec()["name"] == "lookup"


def test_no_params_schema_is_an_empty_object() -> None:
    built = make(params_type=NoParams, result_type=None)
    schema = built.parameters_schema()
    assert schema["type"] == "object"
    assert not schema.get("properties")
    assert not schema.get("required")


def test_swap_is_found_with_evaluated_annotations_too() -> None:
    from weakprompt.tools import ToolContext as RuntimeContext

    def handler(ctx, params):  # type: ignore[no-untyped-def]
        return ToolResult.error("x")

    handler.__annotations__ = {"ctx": RuntimeContext, "params": LookupParams}
    with pytest.raises(PromptValidationError, match=r"first parameter 'ctx' is the context"):
        Tool(name="t", description="d", handler=handler)  # pyright: ignore[reportUnknownArgumentType]
    handler.__annotations__ = {"ctx": LookupParams}
    assert Tool(name="t", description="d", handler=handler).params_type is LookupParams  # pyright: ignore[reportUnknownArgumentType]


def test_handlers_without_a_readable_signature_are_fine_when_typed_explicitly() -> None:
    built = Tool(name="t", description="d", handler=max, params_type=NoParams, result_type=None)  # type: ignore[arg-type]
    assert built.params_type is NoParams


def _handler_made(first: str, wraps: object = None) -> object:
    """The same ``def`` each time (a closure, as a tool factory makes), with the annotations given."""

    def handler(params: object, *, context: object) -> ToolResult[None]:  # annotations replaced below
        return ToolResult.error("x")

    handler.__annotations__ = {"params": first, "context": "ToolContext"}
    if wraps is not None:
        handler.__wrapped__ = wraps  # pyright: ignore[reportFunctionMemberAccess]
    return handler


def _build(handler: object) -> AnyTool:
    return Tool(name="t", description="d", handler=handler, params_type=LookupParams, result_type=None)  # type: ignore[arg-type]


def test_a_handler_made_again_by_the_same_def_is_judged_each_time_by_its_own_signature() -> None:
    # Checked once per code and annotations: a second closure of a def already accepted is not
    # looked at again, but one with other annotations, or one wrapping another function, is.
    for _ in range(2):
        _build(_handler_made("LookupParams"))
        with pytest.raises(PromptValidationError, match="look swapped"):
            _build(_handler_made("ToolContext"))
        with pytest.raises(PromptValidationError, match="look swapped"):
            _build(_handler_made("LookupParams", wraps=swapped_annotated))
    unhashable = _handler_made("LookupParams")
    unhashable.__annotations__["params"] = ["not", "hashable"]  # type: ignore[attr-defined]
    _build(unhashable)
