"""Request checks and schema helpers shared by every adapter."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adapters_support import TOOLS, USER, get_weather, make_request
from weakprompt.adapters._support import (
    check_tool_choice,
    is_strict_schema,
    json_answer_instruction,
    output_schema_name,
    parameters_schema,
    reject_ignored_settings,
)
from weakprompt.errors import ConfigurationError
from weakprompt.model import ForceTool
from weakprompt.tools import ToolContext, ToolResult, tool


def test_forcing_a_tool_that_was_not_sent_names_it_and_the_sent_ones() -> None:
    request = make_request([USER], tools=TOOLS, tool_choice=ForceTool("delete_all"))

    with pytest.raises(ConfigurationError, match=r"'delete_all'.*get_weather, search_notes"):
        check_tool_choice(request, "openai")


def test_forcing_with_no_tools_says_none_were_sent() -> None:
    with pytest.raises(ConfigurationError, match=r"tools sent: none"):
        check_tool_choice(make_request([USER], tool_choice=ForceTool("x")), "local")


def test_required_needs_a_tool() -> None:
    with pytest.raises(ConfigurationError, match="required"):
        check_tool_choice(make_request([USER], tool_choice="required"), "anthropic")


@pytest.mark.parametrize("choice", ["auto", "none", "required", ForceTool("get_weather")])
def test_valid_choices_pass(choice: Any) -> None:
    check_tool_choice(make_request([USER], tools=[get_weather], tool_choice=choice), "p")


@given(st.one_of(st.none(), st.text(max_size=100)))
def test_output_schema_name_is_always_acceptable(name: str | None) -> None:
    assert re.fullmatch(r"[A-Za-z0-9_-]{1,64}", output_schema_name(name))


def test_output_schema_name_keeps_safe_names() -> None:
    assert output_schema_name("Weather_Report-2") == "Weather_Report-2"
    assert output_schema_name("weather report!") == "weather_report"
    assert output_schema_name("!!!") == "output"


CLOSED = {
    "type": "object",
    "properties": {
        "a": {"type": "string"},
        "b": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"x": {"type": "integer"}},
                "required": ["x"],
                "additionalProperties": False,
            },
        },
        "c": {"anyOf": [{"$ref": "#/$defs/D"}, {"type": "null"}]},
    },
    "required": ["a", "b", "c"],
    "additionalProperties": False,
    "$defs": {"D": {"type": "object", "properties": {}, "required": [], "additionalProperties": False}},
}


def _with(path: list[str | int], key: str, value: Any) -> dict[str, Any]:
    import copy

    schema = copy.deepcopy(CLOSED)
    node: Any = schema
    for step in path:
        node = node[step]
    if value is _DELETE:
        del node[key]
    else:
        node[key] = value
    return schema


_DELETE = object()


def test_closed_schema_is_strict() -> None:
    assert is_strict_schema(CLOSED)
    assert is_strict_schema({"type": "string"})


@pytest.mark.parametrize(
    ("path", "key", "value"),
    [
        ([], "additionalProperties", _DELETE),
        ([], "required", ["a", "b"]),
        ([], "required", "a"),
        (["properties", "b", "items"], "additionalProperties", True),
        (["properties", "b", "items"], "required", []),
        (["$defs", "D"], "properties", {"y": {"type": "string"}}),
    ],
)
def test_any_open_object_makes_the_schema_non_strict(path: list[str | int], key: str, value: Any) -> None:
    assert not is_strict_schema(_with(path, key, value))


def test_open_object_inside_anyof_is_found() -> None:
    schema = {"anyOf": [{"type": "object", "properties": {"q": {"type": "string"}}}, {"type": "null"}]}
    assert not is_strict_schema(schema)


def test_json_answer_instruction_carries_the_schema() -> None:
    text = json_answer_instruction({"type": "object", "properties": {"n": {"type": "integer"}}})
    assert '{"properties":{"n":{"type":"integer"}},"type":"object"}' in text


@dataclass(frozen=True)
class Loose:
    payload: Any


@tool
def loose_tool(params: Loose, *, context: ToolContext) -> ToolResult[str]:
    """Takes anything."""
    return ToolResult.ok("ok")


def test_parameters_schema_is_strict_when_possible() -> None:
    schema, strict = parameters_schema(get_weather, strict=True)
    assert strict
    assert schema == get_weather.parameters_schema(strict=True)
    assert parameters_schema(get_weather, strict=False) == (get_weather.parameters_schema(), False)


def test_parameters_schema_falls_back_for_types_without_a_strict_form() -> None:
    schema, strict = parameters_schema(loose_tool, strict=True)
    assert not strict
    assert schema == loose_tool.parameters_schema()


def test_reject_ignored_settings_lists_what_would_be_dropped() -> None:
    reject_ignored_settings("X", a=None, b=None)
    with pytest.raises(ConfigurationError, match=r"X: base_url, timeout would be ignored"):
        reject_ignored_settings("X", base_url="http://h", api_key=None, timeout=3.0)


def test_object_without_properties_needs_an_empty_required_list() -> None:
    assert is_strict_schema({"type": "object", "additionalProperties": False, "required": []})
    assert is_strict_schema({"type": "object", "additionalProperties": False})
    assert not is_strict_schema({"type": "object", "additionalProperties": False, "required": ["ghost"]})


def test_tuple_items_and_boolean_subschemas_are_walked() -> None:
    closed_item = {"type": "object", "properties": {}, "required": [], "additionalProperties": False}
    open_item = {"type": "object", "properties": {"x": {"type": "string"}}}
    assert is_strict_schema({"type": "array", "items": [closed_item], "anyOf": [True]})
    assert not is_strict_schema({"type": "array", "items": [closed_item, open_item]})
