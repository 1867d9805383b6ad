"""A checker for the strict structured-outputs subset of JSON Schema, and its tests.

The rules follow OpenAI's published limits for strict mode: the root is an
object, every object lists all its properties in ``required`` and sets
``additionalProperties: false``, ``$ref`` stands alone, and only a known set
of keywords and string formats appears.
"""

from __future__ import annotations

import dataclasses
from typing import Annotated, Literal

import pytest

from weakprompt.jsontypes import JSONObject, JSONValue
from weakprompt.serde import Meta, StrictSchemaError, schema

_COMMON = {"type", "description", "enum", "const", "anyOf", "$ref", "$defs", "title"}
_BY_TYPE = {
    "object": {"properties", "required", "additionalProperties"},
    "array": {"items", "minItems", "maxItems"},
    "string": {"pattern", "format"},
    "number": {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"},
    "integer": {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"},
}
_ALLOWED = _COMMON.union(*_BY_TYPE.values())
_FORMATS = {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}


def strict_violations(root: JSONObject) -> list[str]:
    problems: list[str] = []
    if root.get("type") != "object":
        problems.append("root: type must be object")
    if "anyOf" in root:
        problems.append("root: must not be anyOf")
    defs = root.get("$defs", {})
    assert isinstance(defs, dict)

    def visit(node: JSONValue, where: str) -> None:
        if not isinstance(node, dict):
            problems.append(f"{where}: subschema must be an object, got {node!r}")
            return
        unknown = set(node) - _ALLOWED
        if unknown:
            problems.append(f"{where}: unsupported keywords {sorted(unknown)}")
        ref = node.get("$ref")
        if ref is not None:
            if len(node) != 1:
                problems.append(f"{where}: $ref with siblings {sorted(set(node) - {'$ref'})}")
            if not (ref == "#" or (isinstance(ref, str) and ref.removeprefix("#/$defs/") in defs)):
                problems.append(f"{where}: dangling $ref {ref!r}")
        kinds = node.get("type")
        kind_list = kinds if isinstance(kinds, list) else [kinds]
        if "object" in kind_list or "properties" in node:
            props = node.get("properties")
            if not isinstance(props, dict):
                problems.append(f"{where}: object without properties")
                props = {}
            if node.get("additionalProperties") is not False:
                problems.append(f"{where}: additionalProperties must be false")
            if node.get("required") != list(props):
                problems.append(f"{where}: required must list every property")
            for name, sub in props.items():
                visit(sub, f"{where}.{name}")
        if "array" in kind_list:
            if "items" not in node:
                problems.append(f"{where}: array without items")
            else:
                visit(node["items"], f"{where}[]")
        fmt = node.get("format")
        if fmt is not None and fmt not in _FORMATS:
            problems.append(f"{where}: unsupported format {fmt!r}")
        options = node.get("anyOf")
        if options is not None:
            assert isinstance(options, list)
            for index, sub in enumerate(options):
                visit(sub, f"{where}|{index}")

    body = {key: value for key, value in root.items() if key != "$defs"}
    visit(body, "$")
    for name, sub in defs.items():
        visit(sub, f"$defs.{name}")
    return problems


# -- tests of the checker itself ---------------------------------------------------


def test_checker_accepts_a_minimal_strict_schema() -> None:
    ok: JSONObject = {
        "type": "object",
        "properties": {"a": {"type": ["string", "null"]}},
        "required": ["a"],
        "additionalProperties": False,
    }
    assert strict_violations(ok) == []


@pytest.mark.parametrize(
    ("bad", "fragment"),
    [
        ({"type": "object", "properties": {}, "required": []}, "additionalProperties"),
        (
            {
                "type": "object",
                "properties": {"a": {"type": "string"}},
                "required": [],
                "additionalProperties": False,
            },
            "required",
        ),
        ({"type": "array", "items": {"type": "string"}}, "root"),
        (
            {
                "type": "object",
                "properties": {"a": {"type": "string", "default": "x"}},
                "required": ["a"],
                "additionalProperties": False,
            },
            "default",
        ),
        (
            {
                "type": "object",
                "properties": {"a": {"$ref": "#", "description": "d"}},
                "required": ["a"],
                "additionalProperties": False,
            },
            "siblings",
        ),
        (
            {
                "type": "object",
                "properties": {"a": {"type": "string", "format": "path"}},
                "required": ["a"],
                "additionalProperties": False,
            },
            "format",
        ),
    ],
)
def test_checker_rejects_each_rule_break(bad: JSONObject, fragment: str) -> None:
    assert any(fragment in problem for problem in strict_violations(bad))


# -- strict-mode behaviour ---------------------------------------------------------


@dataclasses.dataclass
class Inner:
    """An inner thing."""

    label: str


@dataclasses.dataclass
class Outer:
    inner: Annotated[Inner, Meta(description="The inner part.")]
    maybe: Inner | None = None
    count: Annotated[int, Meta(ge=0)] = 3
    name: Annotated[str, Meta(min_length=1, max_length=5)] = "x"
    mode: Literal["fast", "slow"] = "fast"
    pair: tuple[int, str] = (1, "a")


def test_strict_schema_makes_all_fields_required_and_optional_ones_nullable() -> None:
    strict = schema(Outer, strict=True)
    assert strict_violations(strict) == []
    props = strict["properties"]
    assert isinstance(props, dict)
    assert strict["required"] == list(props)
    count = props["count"]
    assert isinstance(count, dict)
    assert count["type"] == ["integer", "null"]
    assert "default" not in count
    assert count["description"] == "Default: 3."
    mode = props["mode"]
    assert isinstance(mode, dict)
    assert mode["enum"] == ["fast", "slow", None]


def test_strict_schema_inlines_a_described_reference() -> None:
    props = schema(Outer, strict=True)["properties"]
    assert isinstance(props, dict)
    inner = props["inner"]
    assert isinstance(inner, dict)
    assert "$ref" not in inner
    assert inner["description"] == "The inner part."
    assert inner["properties"] == {"label": {"type": "string"}}


def test_strict_schema_drops_string_lengths_and_prefix_items() -> None:
    props = schema(Outer, strict=True)["properties"]
    assert isinstance(props, dict)
    name = props["name"]
    assert isinstance(name, dict)
    assert "minLength" not in name and "maxLength" not in name
    pair = props["pair"]
    assert isinstance(pair, dict)
    options = pair["anyOf"]
    assert isinstance(options, list)
    array = options[0]
    assert isinstance(array, dict)
    assert "prefixItems" not in array
    assert array["minItems"] == 2 and array["maxItems"] == 2
    assert array["items"] == {"type": ["integer", "string"]}


@dataclasses.dataclass
class HasDict:
    table: dict[str, int]


def test_strict_mode_refuses_free_form_objects() -> None:
    with pytest.raises(StrictSchemaError, match="dict"):
        schema(HasDict, strict=True)
    with pytest.raises(StrictSchemaError, match="root"):
        schema(list[int], strict=True)


@dataclasses.dataclass
class Chain:
    label: str
    links: list[Annotated[Chain, Meta(description="A linked chain.")]]


def test_strict_described_self_reference_is_inlined_once_then_wrapped() -> None:
    strict = schema(Chain, strict=True)
    assert strict_violations(strict) == []
    props = strict["properties"]
    assert isinstance(props, dict)
    links = props["links"]
    assert isinstance(links, dict)
    inlined = links["items"]
    assert isinstance(inlined, dict)
    assert inlined["description"] == "A linked chain."
    inner_props = inlined["properties"]
    assert isinstance(inner_props, dict)
    inner_links = inner_props["links"]
    assert isinstance(inner_links, dict)
    assert inner_links["items"] == {"anyOf": [{"$ref": "#"}], "description": "A linked chain."}
    from jsonschema import Draft202012Validator

    validator = Draft202012Validator(strict)
    deep = {"label": "a", "links": [{"label": "b", "links": [{"label": "c", "links": []}]}]}
    assert validator.is_valid(deep)
    wrong = {"label": "a", "links": [{"label": "b", "links": [{"label": 1, "links": []}]}]}
    assert not validator.is_valid(wrong)
