"""pydantic v2 models as params, result and output types (front door, item 2).

pydantic owns a model's schema, validation and dump; serde fits them into its
own schema (``$defs`` merged, strict rules) and its error report (each error
a ``SerdeIssue`` at its JSON path).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import json
import subprocess
import sys
import uuid
from typing import Annotated, Any, Literal

import jsonschema
import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import AnyUrl, BaseModel, ConfigDict, Field, ValidationError, create_model

from stream_support import StreamServer, openai_stream_chunks, sse_data
from test_serde_strict_rules import strict_violations
from weakprompt.adapters._support import parameters_schema
from weakprompt.adapters.openai import OpenAIAdapter
from weakprompt.adapters.testing import FunctionAdapter
from weakprompt.messages import AssistantTurn, ToolCall, Usage
from weakprompt.prompt import MarkdownSection, Prompt, PromptTemplate
from weakprompt.prompt.template import check_placeholders, field_names
from weakprompt.runtime import ModelRequest, ToolDispatcher
from weakprompt.runtime.loop import evaluate
from weakprompt.serde import Meta, SerdeError, SerdeTypeError, StrictSchemaError, dump, parse, schema
from weakprompt.serde.introspect import type_model
from weakprompt.session import Session
from weakprompt.testing._generate import json_for_model
from weakprompt.tools import Tool, ToolContext, ToolResult, tool


class Line(BaseModel):
    """One order line."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=20, description="what is ordered")
    qty: int = Field(ge=1, le=99)


class Order(BaseModel):
    model_config = ConfigDict(extra="forbid")

    lines: list[Line] = Field(min_length=1)
    note: str | None


class Relaxed(BaseModel):
    """Extras are ignored and a field has a default, as pydantic does by default."""

    size: int = 3


class Tree(BaseModel):
    value: int
    children: list[Tree] = []


@dataclasses.dataclass(frozen=True)
class Shipment:
    order: Order
    first: Line
    priority: Annotated[Line | None, Meta(description="rush line")] = None


# -- schema ---------------------------------------------------------------------------


def test_the_schema_of_a_root_model_is_pydantics_own() -> None:
    assert schema(Order) == Order.model_json_schema(mode="validation")
    assert schema(Relaxed) == Relaxed.model_json_schema()
    assert schema(Order) is not schema(Order)  # a fresh copy each call, as for every type


def test_a_recursive_root_model_is_written_as_the_object_with_its_defs() -> None:
    out = schema(Tree)
    assert out["type"] == "object" and "$ref" not in out
    assert out["properties"]["children"]["items"] == {"$ref": "#/$defs/Tree"}  # type: ignore[index,call-overload]
    assert out["$defs"]["Tree"] == Tree.model_json_schema()["$defs"]["Tree"]  # type: ignore[index,call-overload]


def test_a_model_inside_a_dataclass_joins_the_defs_once() -> None:
    out = schema(Shipment)
    properties: Any = out["properties"]
    assert properties["first"] == Line.model_json_schema()
    assert properties["order"]["properties"]["lines"]["items"] == {"$ref": "#/$defs/Line"}
    assert list(out["$defs"]) == ["Line"]  # type: ignore[arg-type]
    assert properties["priority"]["description"] == "rush line"
    jsonschema.Draft202012Validator.check_schema(out)


# A dataclass named Line, as another module could define, next to a model that defines Line.
DataLine = dataclasses.make_dataclass("Line", [("code", str)])


@dataclasses.dataclass
class Holder:
    order: Order
    other: DataLine  # type: ignore[valid-type]


def test_a_clashing_definition_name_gets_a_suffix() -> None:
    out = schema(Holder)
    assert set(out["$defs"]) == {"Line", "Line_2"}  # type: ignore[arg-type]
    validator = jsonschema.Draft202012Validator(out)
    good = {"order": {"lines": [{"name": "a", "qty": 1}], "note": None}, "other": {"code": "x"}}
    assert validator.is_valid(good)
    assert not validator.is_valid({**good, "other": {"name": "a", "qty": 1}})
    assert not validator.is_valid({**good, "order": {"lines": [{"code": "x"}], "note": None}})
    assert parse(Holder, good).other.code == "x"  # type: ignore[attr-defined]


def test_a_forbidding_model_has_a_strict_schema_that_keeps_the_strict_rules() -> None:
    out = schema(Shipment, strict=True)
    assert strict_violations(out) == []
    line: Any = out["properties"]["first"]  # type: ignore[index,call-overload]
    assert "title" not in line and "minLength" not in line["properties"]["name"]
    assert line["properties"]["qty"] == {"type": "integer", "minimum": 1, "maximum": 99}
    assert strict_violations(schema(Order, strict=True)) == []


@pytest.mark.parametrize(
    ("model", "fragment"),
    [
        (Relaxed, "every field required"),
        (create_model("Open", x=(int, ...)), 'extra="forbid"'),
        (create_model("Url", __config__=ConfigDict(extra="forbid"), u=(AnyUrl, ...)), "format 'uri'"),
        (create_model("Const", __config__=ConfigDict(extra="forbid"), k=(Literal["a"], ...)), "'const'"),
    ],
    ids=["defaults", "extras", "format", "const"],
)
def test_a_model_strict_mode_cannot_say_is_refused_so_callers_fall_back(
    model: type[BaseModel], fragment: str
) -> None:
    with pytest.raises(StrictSchemaError, match=fragment):
        schema(model, strict=True)

    def handler(params: Any, *, context: ToolContext) -> ToolResult[None]:
        return ToolResult(message="ok")

    sent, strict = parameters_schema(
        Tool(name="t", description="d", handler=handler, params_type=model), strict=True
    )
    assert strict is False and sent == model.model_json_schema()


def test_pydantic_base_model_itself_is_not_a_type_serde_maps() -> None:
    with pytest.raises(SerdeTypeError, match="BaseModel"):
        schema(BaseModel)


# -- parse and dump -------------------------------------------------------------------


def test_parse_builds_the_model_and_dump_is_pydantics_json_dump() -> None:
    order = parse(Order, {"lines": [{"name": "tea", "qty": 2}], "note": None})
    assert order == Order(lines=[Line(name="tea", qty=2)], note=None)
    assert dump(order) == order.model_dump(mode="json")
    shipment = Shipment(order=order, first=Line(name="cup", qty=1))
    assert parse(Shipment, dump(shipment)) == shipment


def test_each_pydantic_error_is_an_issue_at_its_json_path() -> None:
    data = {"lines": [{"name": "tea", "qty": 2}, {"name": "", "qty": 100, "colour": "red"}], "extra": 1}
    with pytest.raises(SerdeError) as caught:
        parse(Order, data)
    issues = {issue.path: issue for issue in caught.value.issues}
    assert set(issues) == {"$.lines[1].name", "$.lines[1].qty", "$.lines[1].colour", "$.note", "$.extra"}
    assert issues["$.lines[1].qty"].expected == "less than or equal to 99"
    assert issues["$.lines[1].qty"].received == "integer 100"
    assert issues["$.lines[1].name"].expected == "string should have at least 1 character"
    assert issues["$.note"].received == "nothing (missing)"
    assert issues["$.extra"].received == 'unknown field "extra"'
    assert str(caught.value).startswith("invalid Order (5 problems):")


def test_a_union_branch_tag_is_not_taken_for_a_key_of_the_input() -> None:
    model = create_model("Tagged", x=(int | list[int], ...), rows=(list[int], ...))
    with pytest.raises(SerdeError) as caught:
        parse(model, {"x": "many", "rows": [1, "b"]})
    assert [issue.path for issue in caught.value.issues] == ["$.x", "$.x", "$.rows[1]"]


def test_a_model_nested_in_a_dataclass_reports_paths_from_the_outer_root() -> None:
    with pytest.raises(SerdeError) as caught:
        parse(Shipment, {"order": {"lines": [], "note": "n"}, "first": "tea"})
    paths = [issue.path for issue in caught.value.issues]
    assert paths == ["$.order.lines", "$.first"]
    assert "object Line" not in caught.value.issues[1].expected  # pydantic's words, not serde's


def test_the_models_own_config_decides_extras_and_lax_reading() -> None:
    assert parse(Relaxed, {"size": "4", "other": 1}) == Relaxed(size=4)
    assert parse(Relaxed, {"size": "4"}, extra="forbid", coerce=False) == Relaxed(size=4)


# -- the property: serde says what pydantic says ----------------------------------------

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-8, 12) | st.floats(-8, 12) | st.text("aZ09 ", max_size=7),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(["v", "f0"]), inner, max_size=2)
    ),
    max_leaves=6,
)
_PATTERNS = ("^[a-z]+$", "^[A-Z][a-z]*$", "[0-9]")


@st.composite
def constrained_models(draw: st.DrawFn) -> tuple[type[BaseModel], dict[str, st.SearchStrategy[Any]]]:
    """A random constrained model, and per field a strategy of values near its limits (either side)."""
    fields: dict[str, Any] = {}
    values: dict[str, st.SearchStrategy[Any]] = {}
    config = ConfigDict(extra="forbid") if draw(st.booleans()) else None
    for index in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["int", "float", "str", "list", "optional", "nested"]))
        low = draw(st.integers(-5, 5))
        high = low + draw(st.integers(0, 10))
        if kind == "int":
            annotation: Any = Annotated[int, Field(ge=low, le=high)]
            near: st.SearchStrategy[Any] = st.integers(low - 2, high + 2) | st.just(str(low))
        elif kind == "float":
            annotation = Annotated[float, Field(gt=low, lt=low + 5)]
            near = st.floats(low - 1, low + 6) | st.sampled_from([low, low + 5])
        elif kind == "str":
            pattern = draw(st.none() | st.sampled_from(_PATTERNS))
            longest = draw(st.integers(1, 6))
            annotation = Annotated[str, Field(min_length=1, max_length=longest, pattern=pattern)]
            near = st.text("abZ09", max_size=8)
        elif kind == "list":
            annotation = Annotated[list[Annotated[int, Field(ge=0)]], Field(max_length=3)]
            near = st.lists(st.integers(-1, 5), max_size=5)
        elif kind == "optional":
            annotation = Annotated[str | None, Field(max_length=3)]
            near = st.none() | st.text("ab", max_size=5)
        else:
            inner = (Annotated[int, Field(ge=low)], ...)
            annotation = create_model(f"Inner{index}", __config__=config, v=inner)
            near = st.fixed_dictionaries({"v": st.integers(low - 2, low + 5)}, optional={"x": st.just(1)})
        default = draw(st.sampled_from([..., None])) if kind == "optional" else ...
        fields[f"f{index}"] = (annotation, default)
        values[f"f{index}"] = near | near | _JSON  # mostly near the limits, sometimes anything
    return create_model("Drawn", __config__=config, **fields), values


@st.composite
def instances(draw: st.DrawFn, values: dict[str, st.SearchStrategy[Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, strategy in values.items():
        if draw(st.integers(0, 9)) == 0:
            continue  # missing
        out[name] = draw(strategy)
    if draw(st.integers(0, 5)) == 0:
        out["unknown"] = 1
    return out


def _pydantic_accepts(model: type[BaseModel], data: object) -> bool:
    try:
        model.model_validate(data)
    except ValidationError:
        return False
    return True


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_parse_and_schema_agree_with_pydantic_on_constrained_models(data: st.DataObject) -> None:
    model, values = data.draw(constrained_models())
    sent = schema(model)
    assert sent == model.model_json_schema(mode="validation")
    validator = jsonschema.Draft202012Validator(sent)
    for _ in range(4):
        instance = data.draw(instances(values))
        accepted = _pydantic_accepts(model, instance)
        try:
            parsed = parse(model, instance)
        except SerdeError as exc:
            assert not accepted
            assert exc.issues and all(issue.path.startswith("$") for issue in exc.issues)
        else:
            assert accepted and parsed == model.model_validate(instance)
        if validator.is_valid(instance):  # what the schema admits, pydantic accepts
            assert accepted
    if (
        all(field.is_required() for field in model.model_fields.values())
        and sent.get("additionalProperties") is False
    ):
        assert strict_violations(schema(model, strict=True)) == []
    else:
        with pytest.raises(StrictSchemaError):
            schema(model, strict=True)


# -- tools, results and output types --------------------------------------------------


class Booked(BaseModel):
    order_id: str
    total_qty: int


@tool(name="book", description="Book an order.")
def book(params: Order, *, context: ToolContext) -> ToolResult[Booked]:
    return ToolResult.ok(
        Booked(order_id="o-1", total_qty=sum(line.qty for line in params.lines)), message="booked"
    )


def _dispatch(arguments: str) -> Any:
    session = Session(session_id="s-pyd")
    dispatcher = ToolDispatcher([book], session=session, prompt_name="demo")
    return dispatcher.execute(ToolCall(id="call-1", name="book", arguments=arguments))


def test_a_tool_with_model_params_and_result_runs_through_the_dispatcher() -> None:
    assert book.params_type is Order
    assert book.parameters_schema() == Order.model_json_schema()
    execution = _dispatch('{"lines": [{"name": "tea", "qty": 2}, {"name": "cup", "qty": 3}], "note": null}')
    assert execution.result.success
    assert execution.result.value == Booked(order_id="o-1", total_qty=5)


def test_a_tool_call_failing_model_validation_is_a_failed_result_naming_the_path() -> None:
    execution = _dispatch('{"lines": [{"name": "tea", "qty": 2}, {"name": "cup", "qty": 0}], "note": null}')
    assert not execution.result.success
    assert "$.lines[1].qty" in execution.message and "greater than or equal to 1" in execution.message


def test_a_tool_given_a_model_params_type_explicitly_is_accepted() -> None:
    def handler(params: Line, *, context: ToolContext) -> ToolResult[None]:
        return ToolResult(message=params.name)

    made = Tool(name="line", description="d", handler=handler, params_type=Line)
    assert made.parameters_schema(strict=True)["required"] == ["name", "qty"]


class Verdict(BaseModel):
    label: Literal["spam", "ham"]
    score: float = Field(ge=0, le=1)


def _verdict_prompt() -> Prompt[Verdict]:
    template: PromptTemplate[Verdict] = PromptTemplate(
        ns="tests/pydantic",
        key="verdict",
        output_type=Verdict,
        sections=[MarkdownSection(title="Task", key="task", template="Classify the message.")],
    )
    return Prompt(template)


def test_a_model_output_type_is_parsed_by_evaluate() -> None:
    replies = iter(['{"label": "spam", "score": 1.5}', '{"label": "ham", "score": 0.25}'])

    def model(request: ModelRequest) -> str:
        assert request.output_schema == Verdict.model_json_schema()
        return next(replies)

    adapter = FunctionAdapter(model)
    response = evaluate(_verdict_prompt(), adapter=adapter, session=Session())
    assert response.output == Verdict(label="ham", score=0.25)
    assert response.output_retries_used == 1
    correction = adapter.requests[1].context.messages[-1]
    assert "$.score" in correction.content


def test_a_model_is_a_params_type_for_section_placeholders() -> None:
    assert field_names(Line) == ("name", "qty")
    check_placeholders("Order $name x$qty", Line, where="test")


def test_the_testing_kit_says_it_cannot_generate_values_for_a_model() -> None:
    with pytest.raises(SerdeTypeError, match="pydantic model Line"):
        json_for_model(type_model(Line))


def test_import_weakprompt_and_a_dataclass_tool_do_not_import_pydantic() -> None:
    script = (
        "import sys, dataclasses, json\n"
        "import weakprompt\n"
        "from weakprompt.tools import tool, ToolContext, ToolResult\n"
        "from weakprompt.serde import parse, schema, dump\n"
        "from weakprompt.prompt.output import validate_output_type\n"
        "@dataclasses.dataclass\n"
        "class P:\n"
        "    x: int\n"
        "@tool\n"
        "def t(params: P, *, context: ToolContext) -> ToolResult[P]:\n"
        '    """Echo."""\n'
        "    return ToolResult.ok(params, message='ok')\n"
        "assert t.parameters_schema(strict=True)['required'] == ['x']\n"
        "assert dump(parse(P, {'x': 1})) == {'x': 1}\n"
        "validate_output_type(P, where='prompt t/k')\n"
        "assert 'pydantic' not in sys.modules, 'pydantic was imported'\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True)


def test_a_described_model_inside_strict_schema_keeps_its_description() -> None:
    out = json.loads(json.dumps(schema(Shipment, strict=True)))
    assert out["properties"]["priority"]["description"] == "rush line"


def test_a_model_class_is_only_recognised_while_pydantic_is_loaded(monkeypatch: pytest.MonkeyPatch) -> None:
    from weakprompt.serde.pydantic_models import is_pydantic_model

    assert is_pydantic_model(Line)
    monkeypatch.delitem(sys.modules, "pydantic")
    assert not is_pydantic_model(Line)  # looked up in sys.modules, never imported


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


class StrictEvent(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")

    at: dt.datetime
    id: uuid.UUID
    colour: Colour


def test_a_strict_model_reads_dates_uuids_and_enums_from_their_json_form() -> None:
    data = {"at": "2026-11-27T01:50:00Z", "id": "12345678-1234-5678-1234-567812345678", "colour": "red"}
    event = parse(StrictEvent, data)
    assert event.colour is Colour.RED and event.at.year == 2026
    with pytest.raises(SerdeError) as caught:
        parse(StrictEvent, {**data, "colour": "green"})
    assert [issue.path for issue in caught.value.issues] == ["$.colour"]


def test_a_value_json_cannot_carry_goes_to_model_validate() -> None:
    line = Line(name="tea", qty=1)
    assert parse(Line, line) == line  # an instance is not JSON; pydantic takes it as it is
    with pytest.raises(SerdeError, match=r"\$: expected a valid dictionary"):
        parse(Line, {1, 2})


class Aliased(BaseModel):
    full_name: str = Field(alias="fullName")


def test_an_aliased_model_dumps_by_alias_so_dump_and_parse_are_inverse() -> None:
    value = parse(Aliased, {"fullName": "Ada"})
    assert value.full_name == "Ada"
    assert dump(value) == {"fullName": "Ada"}
    assert parse(Aliased, dump(value)) == value
    assert list(schema(Aliased)["properties"]) == ["fullName"]  # type: ignore[arg-type]


def test_the_openai_sdk_gets_a_models_strict_schema_and_the_failed_call_names_the_path() -> None:
    bad = '{"lines": [{"name": "tea", "qty": 0}], "note": null}'
    call = AssistantTurn(
        tool_calls=(ToolCall(id="call_1", name="book", arguments=bad),),
        usage=Usage(input_tokens=10, output_tokens=5, model_calls=1),
        finish_reason="tool_calls",
    )
    answer = AssistantTurn(text="Sorry.", usage=Usage(input_tokens=20, output_tokens=3, model_calls=1))
    server = (
        StreamServer()
        .stream(sse_data(*openai_stream_chunks(call), "[DONE]"))
        .stream(sse_data(*openai_stream_chunks(answer), "[DONE]"))
    )
    client = openai.AsyncOpenAI(
        api_key="sk-test", base_url="http://fake.test/v1", http_client=server.async_client()
    )
    template: PromptTemplate[None] = PromptTemplate(
        ns="tests/pydantic",
        key="book",
        sections=[MarkdownSection(title="Task", key="task", template="Book the order.", tools=[book])],
    )
    response = evaluate(
        Prompt(template), adapter=OpenAIAdapter("gpt-test", async_client=client), session=Session()
    )
    assert [execution.success for execution in response.tool_executions] == [False]
    first = json.loads(server.requests[0].content)["tools"][0]["function"]
    assert first["strict"] is True and first["parameters"] == schema(Order, strict=True)
    sent_back = json.loads(server.requests[1].content)["messages"][-1]
    assert sent_back["role"] == "tool" and "$.lines[0].qty" in sent_back["content"]
