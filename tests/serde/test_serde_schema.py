"""schema: the type mapping table, defaults, descriptions, references, caching."""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import uuid
from collections.abc import Mapping, Sequence
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any, Literal

import attrs
import pytest
from jsonschema import Draft202012Validator

from weakprompt.jsontypes import JSONObject, JSONValue
from weakprompt.serde import Meta, SerdeTypeError, StrictSchemaError, schema


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Size(enum.IntEnum):
    S = 1
    L = 3


@pytest.mark.parametrize(
    ("tp", "expected"),
    [
        (str, {"type": "string"}),
        (int, {"type": "integer"}),
        (float, {"type": "number"}),
        (bool, {"type": "boolean"}),
        (None, {"type": "null"}),
        (type(None), {"type": "null"}),
        (Any, {}),
        (Literal["a", "b"], {"type": "string", "enum": ["a", "b"]}),
        (
            Literal["a", 1, True, None],
            {"type": ["string", "integer", "boolean", "null"], "enum": ["a", 1, True, None]},
        ),
        (Literal["a", "b"] | None, {"type": ["string", "null"], "enum": ["a", "b", None]}),
        (Color, {"type": "string", "enum": ["red", "green"]}),
        (Size, {"type": "integer", "enum": [1, 3]}),
        (Color | None, {"type": ["string", "null"], "enum": ["red", "green", None]}),
        (str | None, {"type": ["string", "null"]}),
        (int | str, {"type": ["integer", "string"]}),
        (int | float, {"type": ["integer", "number"]}),
        (Annotated[int, Meta(ge=0)] | None, {"type": ["integer", "null"], "minimum": 0}),
        (list[int], {"type": "array", "items": {"type": "integer"}}),
        (Sequence[str], {"type": "array", "items": {"type": "string"}}),
        (tuple[int, ...], {"type": "array", "items": {"type": "integer"}}),
        (
            tuple[int, str],
            {
                "type": "array",
                "prefixItems": [{"type": "integer"}, {"type": "string"}],
                "items": False,
                "minItems": 2,
                "maxItems": 2,
            },
        ),
        (dict[str, int], {"type": "object", "additionalProperties": {"type": "integer"}}),
        (Mapping[str, bool], {"type": "object", "additionalProperties": {"type": "boolean"}}),
        (dt.datetime, {"type": "string", "format": "date-time"}),
        (dt.date, {"type": "string", "format": "date"}),
        (dt.time, {"type": "string", "format": "time"}),
        (uuid.UUID, {"type": "string", "format": "uuid"}),
        (Path, {"type": "string"}),
        (list[int] | None, {"anyOf": [{"type": "array", "items": {"type": "integer"}}, {"type": "null"}]}),
        (
            list[int] | dict[str, int] | None,
            {
                "anyOf": [
                    {"type": "array", "items": {"type": "integer"}},
                    {"type": "object", "additionalProperties": {"type": "integer"}},
                    {"type": "null"},
                ]
            },
        ),
        (
            Annotated[str, Meta(description="d", min_length=1)],
            {"type": "string", "minLength": 1, "description": "d"},
        ),
    ],
)
def test_type_mapping(tp: object, expected: JSONObject) -> None:
    assert schema(tp) == expected
    Draft202012Validator.check_schema(schema(tp))


def test_decimal_is_a_pattern_checked_string() -> None:
    out = schema(Decimal)
    assert out["type"] == "string"
    validator = Draft202012Validator(out)
    assert validator.is_valid("-1.25") and validator.is_valid("3E+2")
    assert not validator.is_valid("NaN") and not validator.is_valid(1.5)


@dataclasses.dataclass
class Empty:
    pass


def test_class_without_fields_is_a_closed_empty_object() -> None:
    assert schema(Empty) == {"type": "object", "properties": {}, "additionalProperties": False}
    assert schema(Empty, strict=True) == {
        "type": "object",
        "properties": {},
        "required": [],
        "additionalProperties": False,
    }


@dataclasses.dataclass
class Address:
    """Where to deliver.

    Multi-line docstrings are folded into one line.
    """

    street: str
    city: str = "Paris"


@attrs.frozen
class Customer:
    name: str
    home: Annotated[Address, Meta(description="Home address.")]
    work: Address | None = None
    previous: list[Address] = attrs.Factory(list)


def test_nested_classes_go_to_defs_and_descriptions_sit_next_to_refs() -> None:
    out = schema(Customer)
    defs = out["$defs"]
    assert isinstance(defs, dict)
    assert list(defs) == ["Address"]
    address = defs["Address"]
    assert isinstance(address, dict)
    assert address["description"] == "Where to deliver. Multi-line docstrings are folded into one line."
    assert address["required"] == ["street"]
    props = out["properties"]
    assert isinstance(props, dict)
    assert props["home"] == {"$ref": "#/$defs/Address", "description": "Home address."}
    assert props["work"] == {"anyOf": [{"$ref": "#/$defs/Address"}, {"type": "null"}], "default": None}
    previous = props["previous"]
    assert isinstance(previous, dict)
    assert previous["default"] == []
    assert out["required"] == ["name", "home"]


def test_description_of_root_from_annotated() -> None:
    out = schema(Annotated[Address, Meta(description="Override.")])
    assert out["description"] == "Override."


def test_dataclass_generated_docstring_is_not_a_description() -> None:
    assert "description" not in schema(Empty)


@dataclasses.dataclass
class Node:
    label: str
    children: list[Node] = dataclasses.field(default_factory=list)
    parent: Annotated[Node | None, Meta(description="Up.")] = None


def test_recursive_class_refers_to_the_root() -> None:
    out = schema(Node)
    props = out["properties"]
    assert isinstance(props, dict)
    assert props["children"] == {
        "anyOf": [{"type": "array", "items": {"$ref": "#"}}, {"type": "null"}],
        "default": [],
    }
    assert props["parent"] == {
        "anyOf": [{"$ref": "#"}, {"type": "null"}],
        "default": None,
        "description": "Up.",
    }
    validator = Draft202012Validator(out)
    assert validator.is_valid({"label": "a", "children": [{"label": "b", "children": []}]})
    assert not validator.is_valid({"label": "a", "children": [{"label": 3}]})


@dataclasses.dataclass
class Wrapper:
    node: Node
    nodes: list[Annotated[Node, Meta(description="A child.")]]


def test_recursive_nested_class_in_strict_mode_keeps_refs_valid() -> None:
    strict = schema(Wrapper, strict=True)
    Draft202012Validator.check_schema(strict)
    validator = Draft202012Validator(strict)
    leaf: JSONValue = {"label": "x", "children": [], "parent": None}
    assert validator.is_valid({"node": leaf, "nodes": [leaf]})
    assert not validator.is_valid({"node": leaf, "nodes": [{"label": "x"}]})


def test_same_class_name_in_two_places_gets_distinct_defs() -> None:
    def make() -> type:
        @dataclasses.dataclass
        class Item:
            value: int

        return Item

    first, second = make(), make()
    both = dataclasses.make_dataclass("Both", [("a", first), ("b", second)])
    defs = schema(both)["$defs"]
    assert isinstance(defs, dict)
    assert sorted(defs) == ["Item", "Item_2"]


def test_defaults_that_are_not_json_are_left_out() -> None:
    @dataclasses.dataclass
    class Odd:
        when: object = dataclasses.field(default_factory=object)
        thing: Any = frozenset()

    props = schema(Odd)["properties"]
    assert isinstance(props, dict)
    assert props["when"] == {}
    assert props["thing"] == {}


def test_defaults_of_rich_types_are_dumped() -> None:
    @dataclasses.dataclass
    class Rich:
        color: Color = Color.GREEN
        when: dt.date = dt.date(2024, 1, 2)
        pair: tuple[int, int] = (1, 2)

    props = schema(Rich)["properties"]
    assert isinstance(props, dict)
    assert props["color"] == {"type": ["string", "null"], "enum": ["red", "green", None], "default": "green"}
    when = props["when"]
    assert isinstance(when, dict)
    assert when["default"] == "2024-01-02"
    pair = props["pair"]
    assert isinstance(pair, dict)
    assert pair["default"] == [1, 2]


def test_strict_default_is_described_in_words() -> None:
    @dataclasses.dataclass
    class Opts:
        depth: int = dataclasses.field(default=2, metadata={"description": "How deep"})
        mode: str = "x"
        note: str | None = None

    props = schema(Opts, strict=True)["properties"]
    assert isinstance(props, dict)
    depth = props["depth"]
    assert isinstance(depth, dict)
    assert depth["description"] == "How deep. Default: 2."
    mode = props["mode"]
    assert isinstance(mode, dict)
    assert mode["description"] == 'Default: "x".'
    assert props["note"] == {"type": ["string", "null"]}


def test_strict_mode_refuses_any() -> None:
    @dataclasses.dataclass
    class Loose:
        value: Any

    with pytest.raises(StrictSchemaError):
        schema(Loose, strict=True)


def test_schema_cache_survives_mutation_and_handles_unhashable_annotations() -> None:
    first = schema(Customer)
    props = first["properties"]
    assert isinstance(props, dict)
    props.clear()
    assert schema(Customer)["properties"]
    unhashable = Annotated[int, {"not": "hashable"}]
    assert schema(unhashable) == {"type": "integer"}


@pytest.mark.parametrize(
    "bad",
    [
        Annotated[str, Meta(ge=1)],
        Annotated[int, Meta(pattern="x")],
        Annotated[Color, Meta(min_length=1)],
    ],
)
def test_constraints_that_cannot_apply_are_refused(bad: object) -> None:
    with pytest.raises(SerdeTypeError, match="do not apply"):
        schema(bad)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"ge": "1"},
        {"ge": True},
        {"min_length": -1},
        {"max_length": 1.5},
        {"pattern": "("},
        {"pattern": 3},
        {"description": 3},
    ],
)
def test_meta_validates_its_arguments(kwargs: dict[str, object]) -> None:
    with pytest.raises(SerdeTypeError):
        Meta(**kwargs)  # type: ignore[arg-type]


def test_meta_from_field_metadata_merges_with_annotated() -> None:
    @dataclasses.dataclass
    class Both:
        value: Annotated[int, Meta(ge=0, description="inner")] = dataclasses.field(
            default=1, metadata={"description": "outer", "le": 5, "meta": Meta(gt=-1), "other": 1}
        )

    props = schema(Both)["properties"]
    assert isinstance(props, dict)
    value = props["value"]
    assert isinstance(value, dict)
    assert value["description"] == "outer"
    assert value["minimum"] == 0 and value["maximum"] == 5 and value["exclusiveMinimum"] == -1


def test_unresolvable_annotations_are_reported() -> None:
    @dataclasses.dataclass
    class Broken:
        value: NotDefinedAnywhere  # type: ignore[name-defined]  # noqa: F821

    with pytest.raises(SerdeTypeError, match="cannot resolve"):
        schema(Broken)


def test_enum_with_non_json_values_is_refused() -> None:
    class Weird(enum.Enum):
        A = (1, 2)

    with pytest.raises(SerdeTypeError, match="non-JSON"):
        schema(Weird)
    with pytest.raises(SerdeTypeError):
        schema(Literal[b"x"])


def test_bare_containers_need_item_types() -> None:
    for bare in (list, dict, tuple, Sequence, Mapping):
        with pytest.raises(SerdeTypeError, match="item type"):
            schema(bare)


def test_empty_tuple_and_empty_enum() -> None:
    class Nothing(enum.Enum):
        pass

    assert schema(tuple[()]) == {
        "type": "array",
        "prefixItems": [],
        "items": False,
        "minItems": 0,
        "maxItems": 0,
    }
    assert schema(Nothing) == {"enum": []}


def test_init_false_fields_are_not_properties() -> None:
    @dataclasses.dataclass
    class Computed:
        a: int
        b: int = dataclasses.field(init=False, default=0)

    @attrs.define
    class ComputedAttrs:
        a: int
        b: int = attrs.field(init=False, default=0)

    for cls in (Computed, ComputedAttrs):
        props = schema(cls)["properties"]
        assert isinstance(props, dict)
        assert list(props) == ["a"]


def test_equal_literals_written_in_another_order_keep_their_own_enum_order() -> None:
    """``Literal["b", "a"] == Literal["a", "b"]``: a cache keyed by the type alone mixed them up."""
    from typing import Literal

    from weakprompt.serde import parse

    assert schema(Literal["b", "a"])["enum"] == ["b", "a"]
    assert schema(Literal["a", "b"])["enum"] == ["a", "b"]
    assert schema(list[Literal["y", "x"]])["items"] == {"type": "string", "enum": ["y", "x"]}
    assert schema(list[Literal["x", "y"]])["items"] == {"type": "string", "enum": ["x", "y"]}
    assert parse(Literal["a", "b"], "b") == "b"
