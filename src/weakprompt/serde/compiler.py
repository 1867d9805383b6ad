"""Compile a type model into one validating constructor per (type, extra, coerce).

Each compiled parser is a closure ``parser(data, issues) -> value | BAD``: it
checks and builds in one pass, never raises for bad input, and appends every
problem it finds to ``issues`` with a path relative to itself. Parents prepend
their own step only when a child failed, so the happy path does no path work.
A dataclass or attrs class is read by cattrs' generated function for it, with
these parsers as its field hooks (see ``Compiler._class``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import cast

from cattrs.errors import ClassValidationError, ForbiddenExtraKeysError

from weakprompt.serde.converter import FieldHook, class_structurer
from weakprompt.serde.errors import describe_value, quote, render_key
from weakprompt.serde.expected import expected_text
from weakprompt.serde.formats import format_name
from weakprompt.serde.nodes import (
    ARRAY,
    BOOLEAN,
    NULL,
    NUMBER,
    OBJECT,
    STRING,
    AnyNode,
    BoolNode,
    ClassNode,
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
    TypeModel,
    UnionNode,
    kinds_of,
)
from weakprompt.serde.parser_types import BAD, Parser, RawIssue
from weakprompt.serde.pydantic_models import model_parser

__all__ = ["BAD", "Compiler", "Parser", "RawIssue"]


_INT_TEXT = re.compile(r"[+-]?\d+")
_FLOAT_TEXT = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")
_MISSING = object()


def _fail(issues: list[RawIssue], expected: str, data: object) -> object:
    issues.append(([], expected, describe_value(data)))
    return BAD


def _prefix(issues: list[RawIssue], start: int, step: str) -> None:
    for index in range(start, len(issues)):
        issues[index][0].append(step)


def data_kind(data: object) -> str:
    if data is None:
        return NULL
    if data is True or data is False:
        return BOOLEAN
    if isinstance(data, (int, float)):
        return NUMBER
    if isinstance(data, str):
        return STRING
    if isinstance(data, (list, tuple)):
        return ARRAY
    if isinstance(data, Mapping):
        return OBJECT
    return "other"


class Compiler:
    """Builds parsers for one type model under one (extra, coerce) policy."""

    def __init__(self, model: TypeModel, *, forbid_extra: bool, coerce: bool) -> None:
        self.model = model
        self.forbid_extra = forbid_extra
        self.coerce = coerce
        self._classes: dict[type, Parser] = {}
        self._plain: Compiler | None = None

    def plain(self) -> Compiler:
        """A sibling compiler without coercion (unions try exact matches first)."""
        if not self.coerce:
            return self
        if self._plain is None:
            self._plain = Compiler(self.model, forbid_extra=self.forbid_extra, coerce=False)
        return self._plain

    def compile(self, node: Node) -> Parser:
        match node:
            case AnyNode():
                return _parse_any
            case NoneNode():
                return _parse_none
            case BoolNode():
                return self._bool()
            case NumberNode():
                return self._number(node)
            case StrNode():
                return self._string(node)
            case FormatNode():
                return self._format(node)
            case LiteralNode() | EnumNode():
                return self._literal(node)
            case ListNode():
                return self._list(node)
            case TupleNode():
                return self._tuple(node)
            case DictNode():
                return self._dict(node)
            case UnionNode():
                return self._union(node)
            case ClassRef():
                return self.class_parser(node.cls)
            case PydanticNode():
                return model_parser(node.cls)

    # -- scalars -----------------------------------------------------------

    def _bool(self) -> Parser:
        coerce = self.coerce

        def parse_bool(data: object, issues: list[RawIssue]) -> object:
            if data is True or data is False:
                return data
            if coerce:
                if isinstance(data, str) and data.lower() in ("true", "false"):
                    return data.lower() == "true"
                if type(data) is int and data in (0, 1):
                    return data == 1
            return _fail(issues, "boolean", data)

        return parse_bool

    def _number(self, node: NumberNode) -> Parser:
        expected = expected_text(node)
        checks = _bound_checks(node)
        coerce = self.coerce
        integer = node.integer

        def read(data: object) -> int | float | None:
            kind = type(data)
            if kind is int:
                return data if integer else float(data)  # type: ignore[arg-type,return-value]
            if kind is float:
                if not integer:
                    return data  # type: ignore[return-value]
                return int(data) if data.is_integer() else None  # type: ignore[union-attr]
            if isinstance(data, bool):
                return None
            if isinstance(data, (int, float)):
                return read(int(data) if isinstance(data, int) else float(data))
            if coerce and isinstance(data, str):
                text = data.strip()
                if _INT_TEXT.fullmatch(text):
                    return int(text) if integer else float(text)
                if not integer and _FLOAT_TEXT.fullmatch(text):
                    return float(text)
            return None

        def parse_number(data: object, issues: list[RawIssue]) -> object:
            try:
                value = read(data)
            except OverflowError:
                value = None
            if value is None or (type(value) is float and not math.isfinite(value)):
                return _fail(issues, expected, data)
            for check in checks:
                if not check(value):
                    return _fail(issues, expected, data)
            return value

        return parse_number

    def _string(self, node: StrNode) -> Parser:
        expected = expected_text(node)
        low, high = node.min_length, node.max_length
        pattern = re.compile(node.pattern) if node.pattern is not None else None
        coerce = self.coerce
        plain = low is None and high is None and pattern is None

        def parse_string(data: object, issues: list[RawIssue]) -> object:
            if type(data) is not str:
                if not (isinstance(data, str) or (coerce and _is_number(data))):
                    return _fail(issues, expected, data)
                data = str(data)
            if plain:
                return data
            assert isinstance(data, str)
            size = len(data)
            if (
                (low is not None and size < low)
                or (high is not None and size > high)
                or (pattern is not None and pattern.search(data) is None)
            ):
                return _fail(issues, expected, data)
            return data

        return parse_string

    def _format(self, node: FormatNode) -> Parser:
        expected = format_name(node.py_type)
        reader = node.parse
        coerce = self.coerce
        numeric = node.pattern is not None  # only Decimal has a pattern

        def parse_format(data: object, issues: list[RawIssue]) -> object:
            if coerce and numeric and _is_number(data):
                data = repr(data) if isinstance(data, float) else str(data)
            if isinstance(data, str):
                try:
                    return reader(data)
                except (ValueError, TypeError):
                    pass
            return _fail(issues, expected, data)

        return parse_format

    def _literal(self, node: LiteralNode | EnumNode) -> Parser:
        expected = expected_text(node)
        results: list[object] = list(node.enum_type) if isinstance(node, EnumNode) else list(node.values)
        by_text: dict[str, object] = {}
        by_number: dict[int | float, object] = {}
        by_bool: dict[bool, object] = {}
        null_result: object = _MISSING
        for value, result in zip(node.values, results, strict=True):
            _index_literal(value, result, by_text, by_number, by_bool)
            if value is None and null_result is _MISSING:
                null_result = result
        coerce = self.coerce

        def lookup(data: object) -> object:
            kind = type(data)
            if kind is str:
                return by_text.get(data, _MISSING)  # type: ignore[call-overload]
            if kind is int or kind is float:
                return by_number.get(data, _MISSING)  # type: ignore[call-overload]
            if kind is bool:
                return by_bool.get(data, _MISSING)  # type: ignore[call-overload]
            if data is None:
                return null_result
            if isinstance(data, str):
                return lookup(str(data))
            return _MISSING

        def parse_literal(data: object, issues: list[RawIssue]) -> object:
            found = lookup(data)
            if found is _MISSING and coerce and isinstance(data, str):
                found = _coerced_literal(data, lookup)
            if found is _MISSING:
                return _fail(issues, expected, data)
            return found

        return parse_literal

    # -- containers --------------------------------------------------------

    def _list(self, node: ListNode) -> Parser:
        item_parser = self.compile(node.item)
        container = node.container
        low, high = node.min_length, node.max_length
        expected = expected_text(node)
        exact = _exact_scalar(node.item) if not self.coerce else None

        def parse_list(data: object, issues: list[RawIssue]) -> object:
            if type(data) is not list and not isinstance(data, (list, tuple)):
                return _fail(issues, expected, data)
            items = cast("Sequence[object]", data)
            size = len(items)
            failed = False
            if (low is not None and size < low) or (high is not None and size > high):
                _fail(issues, expected, items)
                failed = True
            if exact is not None and all(type(item) is exact for item in items):
                out = list(items)
            else:
                out: list[object] = []
                append = out.append
                for index, item in enumerate(items):
                    start = len(issues)
                    value = item_parser(item, issues)
                    if value is BAD:
                        failed = True
                        _prefix(issues, start, f"[{index}]")
                    else:
                        append(value)
            if failed:
                return BAD
            return out if container is list else tuple(out)

        return parse_list

    def _tuple(self, node: TupleNode) -> Parser:
        parsers = [self.compile(item) for item in node.items]
        expected = expected_text(node)
        count = len(parsers)

        def parse_tuple(data: object, issues: list[RawIssue]) -> object:
            if not isinstance(data, (list, tuple)):
                return _fail(issues, expected, data)
            items = cast("Sequence[object]", data)
            failed = len(items) != count
            if failed:
                _fail(issues, expected, items)
            out: list[object] = []
            for index, (item, parser) in enumerate(zip(items, parsers, strict=False)):
                start = len(issues)
                value = parser(item, issues)
                if value is BAD:
                    failed = True
                    _prefix(issues, start, f"[{index}]")
                else:
                    out.append(value)
            return BAD if failed else tuple(out)

        return parse_tuple

    def _dict(self, node: DictNode) -> Parser:
        value_parser = self.compile(node.value)
        low, high = node.min_length, node.max_length
        expected = expected_text(node)

        def parse_dict(data: object, issues: list[RawIssue]) -> object:
            if not isinstance(data, Mapping):
                return _fail(issues, expected, data)
            mapping = cast("Mapping[object, object]", data)
            failed = False
            size = len(mapping)
            if (low is not None and size < low) or (high is not None and size > high):
                _fail(issues, expected, mapping)
                failed = True
            out: dict[str, object] = {}
            for key, item in mapping.items():
                start = len(issues)
                if not isinstance(key, str):
                    _fail(issues, "string key", key)
                    failed = True
                    continue
                value = value_parser(item, issues)
                if value is BAD:
                    failed = True
                    _prefix(issues, start, render_key(key))
                else:
                    out[key] = value
            return BAD if failed else out

        return parse_dict

    def _union(self, node: UnionNode) -> Parser:
        plain = self.plain()
        options = [(kinds_of(option), plain.compile(option), _number_kind(option)) for option in node.options]
        # A JSON number fits both ``int`` and ``float`` branches; keep the
        # Python type it arrived as when the union offers that type.
        float_first = sorted(options, key=lambda entry: entry[2] != "float")
        int_first = sorted(options, key=lambda entry: entry[2] != "int")
        coerced = [self.compile(option) for option in node.options] if self.coerce else []
        expected = expected_text(node)

        def parse_union(data: object, issues: list[RawIssue]) -> object:
            kind = data_kind(data)
            kind_type = type(data)
            ordered = float_first if kind_type is float else int_first if kind_type is int else options
            attempts: list[list[RawIssue]] = []
            for kinds, parser, _ in ordered:
                if kind not in kinds:
                    continue
                scratch: list[RawIssue] = []
                value = parser(data, scratch)
                if value is not BAD:
                    return value
                attempts.append(scratch)
            for parser in coerced:
                value = parser(data, [])
                if value is not BAD:
                    return value
            if len(attempts) == 1 and any(issue[0] for issue in attempts[0]):
                # One branch had the right shape and failed inside: its own
                # issues point at the real problem.
                issues.extend(attempts[0])
                return BAD
            return _fail(issues, expected, data)

        return parse_union

    # -- classes -----------------------------------------------------------

    def class_parser(self, cls: type) -> Parser:
        existing = self._classes.get(cls)
        if existing is not None:
            return existing
        holder: list[Parser] = []

        def deferred(data: object, issues: list[RawIssue]) -> object:
            return holder[0](data, issues)

        self._classes[cls] = deferred  # recursion reaches this until the real one exists
        real = self._class(self.model.classes[cls])
        holder.append(real)
        self._classes[cls] = real
        return real

    def _class(self, node: ClassNode) -> Parser:
        """cattrs generates the class's structuring function; each field's hook is its compiled parser.

        The generated function reads every field, collects each failure with an
        ``AttributeValidationNote`` naming the attribute, checks unknown keys,
        and only then calls the constructor. The notes become path steps here,
        so the issues come out in the same order and words as everywhere else.
        """
        cls = node.cls
        name = cls.__name__
        structure = class_structurer(
            cls,
            {spec.attribute: (spec.key, self._field_hook(spec.node)) for spec in node.fields},
            forbid_extra=self.forbid_extra,
        )
        key_of = {spec.attribute: spec.key for spec in node.fields}
        expected_of = {spec.key: expected_text(spec.node) for spec in node.fields}
        # Optional fields whose type has no null: an explicit null means "use the default".
        null_keys = frozenset(
            spec.key for spec in node.fields if not spec.required and NULL not in kinds_of(spec.node)
        )
        known_text = ", ".join(spec.key for spec in node.fields) or "none"
        expected = f"object {name}"

        def parse_object(data: object, issues: list[RawIssue]) -> object:
            if type(data) is not dict and not isinstance(data, Mapping):
                return _fail(issues, expected, data)
            mapping = cast("Mapping[object, object]", data)
            if (
                null_keys
                and None in mapping.values()
                and any(mapping.get(key, _MISSING) is None for key in null_keys)
            ):
                mapping = {
                    key: value for key, value in mapping.items() if value is not None or key not in null_keys
                }
            try:
                return structure(mapping, cls)
            except ClassValidationError as group:
                noted, others = group.group_exceptions()
                for exc, note in noted:
                    key = key_of[note.name]
                    if isinstance(exc, _FieldIssues):
                        start = len(issues)
                        issues.extend(exc.issues)
                        _prefix(issues, start, render_key(key))
                    elif isinstance(exc, KeyError) and key not in mapping:
                        issues.append(_missing(key, expected_of[key]))
                    else:  # not a verdict on the input (a mapping that raised, say)
                        raise exc from None
                for exc in others:
                    if isinstance(exc, ForbiddenExtraKeysError):
                        unknown = exc.extra_fields
                        issues.extend(_unknown(key, known_text) for key in mapping if key in unknown)
                    elif isinstance(exc, (TypeError, ValueError)):  # from the constructor
                        _fail_construct(issues, name, exc)
                    else:
                        raise exc from None
                return BAD

        return parse_object

    def _field_hook(self, node: Node) -> FieldHook:
        """A cattrs structure hook that runs ``node``'s parser and raises its issues.

        A plain ``str``/``int``/``float``/``bool`` value of exactly the field's
        type passes without calling the parser.
        """
        parser = self.compile(node)
        exact = None if self.coerce else _exact_scalar(node)

        def structure_field(value: object, _tp: object) -> object:
            if type(value) is exact:
                return value
            issues: list[RawIssue] = []
            parsed = parser(value, issues)
            if parsed is BAD:
                raise _FieldIssues(issues)
            return parsed

        return structure_field


class _FieldIssues(Exception):
    """A field's problems, carried out of cattrs' generated function to the class parser."""

    def __init__(self, issues: list[RawIssue]) -> None:
        super().__init__(f"{len(issues)} issue(s)")
        self.issues = issues


def _missing(key: str, expected: str) -> RawIssue:
    return ([render_key(key)], f"{expected} (required)", "nothing (missing)")


def _unknown(key: object, known_text: str) -> RawIssue:
    return ([render_key(key)], f"only known fields ({known_text})", f"unknown field {quote(str(key))}")


def _fail_construct(issues: list[RawIssue], name: str, exc: Exception) -> object:
    message = str(exc) or type(exc).__name__
    if len(message) > 200:
        message = message[:197] + "..."
    issues.append(([], f"a valid {name}", f"rejected by {name}: {message}"))
    return BAD


def _is_number(data: object) -> bool:
    return isinstance(data, (int, float)) and not isinstance(data, bool)


def _parse_any(data: object, issues: list[RawIssue]) -> object:
    return data


def _parse_none(data: object, issues: list[RawIssue]) -> object:
    if data is None:
        return None
    return _fail(issues, "null", data)


def _exact_scalar(node: Node) -> type | None:
    """The Python type whose values pass ``node`` unchanged, for a fast path."""
    if isinstance(node, StrNode) and (node.min_length, node.max_length, node.pattern) == (None, None, None):
        return str
    if isinstance(node, NumberNode) and (node.ge, node.gt, node.le, node.lt) == (None, None, None, None):
        return int if node.integer else float
    if isinstance(node, BoolNode):
        return bool
    return None


def _number_kind(node: Node) -> str:
    if isinstance(node, NumberNode):
        return "int" if node.integer else "float"
    return ""


def _bound_checks(node: NumberNode) -> list[Callable[[int | float], bool]]:
    checks: list[Callable[[int | float], bool]] = []
    if node.ge is not None:
        ge = node.ge
        checks.append(lambda value: value >= ge)
    if node.gt is not None:
        gt = node.gt
        checks.append(lambda value: value > gt)
    if node.le is not None:
        le = node.le
        checks.append(lambda value: value <= le)
    if node.lt is not None:
        lt = node.lt
        checks.append(lambda value: value < lt)
    return checks


def _index_literal(
    value: LiteralValue,
    result: object,
    by_text: dict[str, object],
    by_number: dict[int | float, object],
    by_bool: dict[bool, object],
) -> None:
    if isinstance(value, bool):
        by_bool.setdefault(value, result)
    elif isinstance(value, (int, float)):
        by_number.setdefault(value, result)
    elif isinstance(value, str):
        by_text.setdefault(value, result)


def _coerced_literal(text: str, lookup: Callable[[object], object]) -> object:
    stripped = text.strip()
    if stripped.lower() in ("true", "false"):
        return lookup(stripped.lower() == "true")
    if _INT_TEXT.fullmatch(stripped):
        return lookup(int(stripped))
    if _FLOAT_TEXT.fullmatch(stripped):
        return lookup(float(stripped))
    return _MISSING
