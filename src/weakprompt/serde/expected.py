"""Words for what a node accepts, used in error messages (``expected ...``)."""

from __future__ import annotations

import json

from weakprompt.serde.formats import format_name
from weakprompt.serde.nodes import (
    AnyNode,
    BoolNode,
    ClassRef,
    DictNode,
    EnumNode,
    FormatNode,
    ListNode,
    LiteralNode,
    LiteralValue,
    Node,
    NoneNode,
    NumberNode,
    PydanticNode,
    StrNode,
    TupleNode,
    UnionNode,
)

__all__ = ["expected_text"]

_MAX_CHOICES = 12


def expected_text(node: Node) -> str:
    match node:
        case AnyNode():
            return "any JSON value"
        case NoneNode():
            return "null"
        case BoolNode():
            return "boolean"
        case NumberNode():
            return _number(node)
        case StrNode():
            return _string(node)
        case FormatNode():
            return format_name(node.py_type)
        case LiteralNode() | EnumNode():
            return _choices(node.values)
        case ListNode():
            length = _length(node.min_length, node.max_length, "items")
            return f"array{length} of {expected_text(node.item)}"
        case TupleNode():
            parts = ", ".join(expected_text(item) for item in node.items)
            return f"array of exactly {len(node.items)} items [{parts}]"
        case DictNode():
            return (
                "object"
                + _length(node.min_length, node.max_length, "keys")
                + (" with values of " + expected_text(node.value))
            )
        case UnionNode():
            return " or ".join(expected_text(option) for option in node.options)
        case ClassRef() | PydanticNode():
            return f"object {node.cls.__name__}"


def _number(node: NumberNode) -> str:
    text = "integer" if node.integer else "number"
    bounds: list[str] = []
    for symbol, limit in ((">=", node.ge), (">", node.gt), ("<=", node.le), ("<", node.lt)):
        if limit is not None:
            bounds.append(f"{symbol} {limit}")
    return text + (" " + " and ".join(bounds) if bounds else "")


def _string(node: StrNode) -> str:
    text = "string" + _length(node.min_length, node.max_length, "characters")
    if node.pattern is not None:
        text += f" matching /{node.pattern}/"
    return text


def _length(low: int | None, high: int | None, unit: str) -> str:
    if low is None and high is None:
        return ""
    if low is not None and high is not None:
        return f" with {low} to {high} {unit}" if low != high else f" with exactly {low} {unit}"
    if low is not None:
        return f" with at least {low} {unit}"
    return f" with at most {high} {unit}"


def _choices(values: tuple[LiteralValue, ...]) -> str:
    shown = ", ".join(json.dumps(value, ensure_ascii=False) for value in values[:_MAX_CHOICES])
    if len(values) > _MAX_CHOICES:
        shown += ", ..."
    return f"one of {shown}" if len(values) != 1 else f"exactly {shown}"
