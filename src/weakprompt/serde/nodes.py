"""The type model: a small tree every supported annotation is normalised into.

Schema generation, parsing and the tests all read this one tree, so the JSON
Schema a model is shown and the validator that judges its answer cannot drift
apart. Nested classes are referenced by ``ClassRef`` (resolved through
``TypeModel.classes``) so recursive types stay finite.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from typing import TypeAlias

import attrs

__all__ = [
    "AnyNode",
    "ClassNode",
    "ClassRef",
    "DictNode",
    "PydanticNode",
    "EnumNode",
    "FieldSpec",
    "FormatNode",
    "ListNode",
    "LiteralNode",
    "Node",
    "NoneNode",
    "NumberNode",
    "BoolNode",
    "StrNode",
    "TupleNode",
    "TypeModel",
    "UnionNode",
    "LiteralValue",
    "kinds_of",
    "OBJECT",
    "ARRAY",
    "STRING",
    "NUMBER",
    "BOOLEAN",
    "NULL",
]

LiteralValue: TypeAlias = str | int | float | bool | None

# JSON kinds a node can accept, used to route union branches. Integers and
# other numbers share one kind: JSON itself does not tell them apart.
OBJECT = "object"
ARRAY = "array"
STRING = "string"
NUMBER = "number"
BOOLEAN = "boolean"
NULL = "null"


@attrs.frozen
class AnyNode:
    """Any JSON value (``typing.Any`` / ``object``)."""

    description: str | None = None


@attrs.frozen
class NoneNode:
    description: str | None = None


@attrs.frozen
class BoolNode:
    description: str | None = None


@attrs.frozen
class NumberNode:
    """``int`` (``integer=True``) or ``float``, with optional bounds."""

    integer: bool
    ge: int | float | None = None
    gt: int | float | None = None
    le: int | float | None = None
    lt: int | float | None = None
    description: str | None = None


@attrs.frozen
class StrNode:
    min_length: int | None = None
    max_length: int | None = None
    pattern: str | None = None
    description: str | None = None


@attrs.frozen
class FormatNode:
    """A Python value carried as a JSON string (datetime, UUID, Decimal, Path...)."""

    py_type: type
    format: str | None
    pattern: str | None
    parse: Callable[[str], object]
    description: str | None = None


@attrs.frozen
class LiteralNode:
    values: tuple[LiteralValue, ...]
    description: str | None = None


@attrs.frozen
class EnumNode:
    enum_type: type[enum.Enum]
    description: str | None = None

    @property
    def values(self) -> tuple[LiteralValue, ...]:
        return tuple(member.value for member in self.enum_type)


@attrs.frozen
class ListNode:
    """A homogeneous array; ``container`` is what parsing builds (list or tuple)."""

    item: Node
    container: type[list[object]] | type[tuple[object, ...]]
    min_length: int | None = None
    max_length: int | None = None
    description: str | None = None


@attrs.frozen
class TupleNode:
    """A fixed-length array with one type per position."""

    items: tuple[Node, ...]
    description: str | None = None


@attrs.frozen
class DictNode:
    """An object with arbitrary string keys and one value type."""

    value: Node
    min_length: int | None = None
    max_length: int | None = None
    description: str | None = None


@attrs.frozen
class UnionNode:
    options: tuple[Node, ...]
    description: str | None = None


@attrs.frozen
class ClassRef:
    """A dataclass or attrs class; its fields live in ``TypeModel.classes``."""

    cls: type
    description: str | None = None


@attrs.frozen
class PydanticNode:
    """A pydantic ``BaseModel`` subclass: pydantic owns its schema, validation and dump."""

    cls: type
    description: str | None = None


@attrs.frozen
class FieldSpec:
    """One constructor argument of a class, seen as one JSON property."""

    key: str
    node: Node
    required: bool
    # The default as a Python value when it is known without side effects.
    default: object
    has_known_default: bool
    description: str | None
    # The attribute the constructor argument sets (``_secret`` for the key ``secret``).
    attribute: str


@attrs.frozen
class ClassNode:
    cls: type
    fields: tuple[FieldSpec, ...]
    description: str | None


Node: TypeAlias = (
    AnyNode
    | NoneNode
    | BoolNode
    | NumberNode
    | StrNode
    | FormatNode
    | LiteralNode
    | EnumNode
    | ListNode
    | TupleNode
    | DictNode
    | UnionNode
    | ClassRef
    | PydanticNode
)


@attrs.frozen
class TypeModel:
    """A normalised annotation plus every class reachable from it."""

    root: Node
    classes: Mapping[type, ClassNode]


def kinds_of(node: Node) -> frozenset[str]:
    """The JSON kinds ``node`` could accept (``number`` includes integers)."""
    match node:
        case AnyNode():
            return frozenset({OBJECT, ARRAY, STRING, NUMBER, BOOLEAN, NULL})
        case NoneNode():
            return frozenset({NULL})
        case BoolNode():
            return frozenset({BOOLEAN})
        case NumberNode():
            return frozenset({NUMBER})
        case StrNode() | FormatNode():
            return frozenset({STRING})
        case LiteralNode() | EnumNode():
            return frozenset(_literal_kind(value) for value in node.values)
        case ListNode() | TupleNode():
            return frozenset({ARRAY})
        case DictNode() | ClassRef() | PydanticNode():
            return frozenset({OBJECT})
        case UnionNode():
            out: frozenset[str] = frozenset()
            for option in node.options:
                out |= kinds_of(option)
            return out


def _literal_kind(value: LiteralValue) -> str:
    if value is None:
        return NULL
    if isinstance(value, bool):
        return BOOLEAN
    if isinstance(value, (int, float)):
        return NUMBER
    return STRING
