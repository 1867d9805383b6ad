"""Turn a Python annotation into the ``nodes`` type model.

This is the only place that looks at ``typing`` internals; everything after it
works on the normalised tree. Field descriptions and constraints are gathered
here from three sources (``Annotated[..., Meta()]``, field ``metadata`` and a
non-generated class docstring) so both the schema and the parser see them.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import types
import typing
from collections.abc import Mapping, MutableSequence, Sequence
from typing import Annotated, Any, Literal, Union, cast, get_args, get_origin

import attrs

from weakprompt.serde.errors import SerdeTypeError
from weakprompt.serde.formats import format_node_for
from weakprompt.serde.keys import cache_key
from weakprompt.serde.meta import META_KEYS, Meta
from weakprompt.serde.nodes import (
    AnyNode,
    BoolNode,
    ClassNode,
    ClassRef,
    DictNode,
    EnumNode,
    FieldSpec,
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
)
from weakprompt.serde.pydantic_models import is_pydantic_model

__all__ = ["is_model_class", "type_model"]

_SEQUENCE_ORIGINS: dict[object, type[list[object]] | type[tuple[object, ...]]] = {
    list: list,
    Sequence: tuple,
    MutableSequence: list,
}
_MAPPING_ORIGINS: tuple[object, ...] = (dict, Mapping)
_BARE_CONTAINERS: tuple[object, ...] = (list, tuple, dict, Sequence, Mapping, MutableSequence)
# attrs' stubs type Factory as a function; at runtime it is a class.
_FACTORY_TYPE = cast(type, attrs.Factory)
_DEFAULT_FACTORIES: dict[object, object] = {list: [], dict: {}, tuple: ()}


def is_model_class(tp: object) -> bool:
    """A dataclass or attrs class (the kinds of class serde maps to JSON objects)."""
    if not isinstance(tp, type):
        return False
    if attrs.has(tp):
        return True
    return dataclasses.is_dataclass(tp)


def type_model(tp: object) -> TypeModel:
    """Normalise ``tp``; raises ``SerdeTypeError`` for anything unsupported."""
    try:
        return _cached_type_model(cache_key(tp), tp)
    except TypeError as exc:
        if isinstance(exc, SerdeTypeError):
            raise
        return _build_type_model(tp)  # unhashable annotation (rare): build every time


@functools.cache
def _cached_type_model(key: object, tp: object) -> TypeModel:
    return _build_type_model(tp)


def _build_type_model(tp: object) -> TypeModel:
    builder = _Builder()
    root = builder.node(tp, None)
    return TypeModel(root=root, classes=dict(builder.classes))


class _Builder:
    def __init__(self) -> None:
        self.classes: dict[type, ClassNode] = {}
        self._in_progress: set[type] = set()

    def node(self, tp: object, meta: Meta | None) -> Node:
        origin = get_origin(tp)
        if origin is Annotated:
            inner, *extras = get_args(tp)
            found: Meta | None = None
            for extra in extras:  # later markers win over earlier ones
                if isinstance(extra, Meta):
                    found = extra if found is None else found.merged(extra)
            if found is not None:
                # A field's own metadata is more specific than its (maybe shared) type.
                meta = found if meta is None else found.merged(meta)
            return self.node(inner, meta)
        built = self._bare(tp, origin, meta)
        if meta is None:
            return built
        return _apply_meta(built, meta, tp)

    def _bare(self, tp: object, origin: object, meta: Meta | None) -> Node:
        if tp is Any or tp is object:
            return AnyNode()
        if isinstance(tp, typing.NewType):
            return self.node(tp.__supertype__, None)  # parse builds the underlying type
        if tp is None or tp is type(None):
            return NoneNode()
        if tp is bool:
            return BoolNode()
        if tp is int:
            return NumberNode(integer=True)
        if tp is float:
            return NumberNode(integer=False)
        if tp is str:
            return StrNode()
        if origin is Literal:
            return _literal(tp)
        if origin is Union or origin is types.UnionType:
            return self._union(tp)
        if origin is tuple:
            return self._tuple(tp)
        if origin in _SEQUENCE_ORIGINS:
            (item,) = get_args(tp)
            return ListNode(self.node(item, None), _SEQUENCE_ORIGINS[origin])
        if origin in _MAPPING_ORIGINS:
            return self._mapping(tp)
        if isinstance(tp, type):
            return self._class(tp)
        raise SerdeTypeError(f"serde cannot map {tp!r} to JSON")

    def _class(self, tp: type) -> Node:
        fmt = format_node_for(tp)
        if fmt is not None:
            return fmt
        if isinstance(tp, enum.EnumMeta):
            return _enum(cast("type[enum.Enum]", tp))
        if tp in _BARE_CONTAINERS:
            raise SerdeTypeError(f"give the item type of {tp.__name__} (e.g. {tp.__name__}[str])")
        if is_model_class(tp):
            self._register(tp)
            return ClassRef(tp)
        if is_pydantic_model(tp):
            return PydanticNode(tp)
        raise SerdeTypeError(
            f"serde cannot map {tp.__qualname__} to JSON; use a dataclass, an attrs class, "
            "a pydantic model, an Enum or a supported builtin type"
        )

    def _union(self, tp: object) -> Node:
        options: list[Node] = []
        for arg in get_args(tp):
            option = self.node(arg, None)
            # Flatten nested unions that Annotated members can produce.
            options.extend(option.options if isinstance(option, UnionNode) else [option])
        return UnionNode(tuple(options))

    def _tuple(self, tp: object) -> Node:
        args = get_args(tp)
        if len(args) == 2 and args[1] is Ellipsis:
            return ListNode(self.node(args[0], None), tuple)
        if args == ((),):  # tuple[()] spelled the old way
            args = ()
        return TupleNode(tuple(self.node(arg, None) for arg in args))

    def _mapping(self, tp: object) -> Node:
        args = get_args(tp)
        if len(args) != 2:
            raise SerdeTypeError(f"give the key and value types of {tp!r}")
        if args[0] is not str:
            raise SerdeTypeError(f"JSON object keys are strings; {tp!r} has key type {args[0]!r}")
        return DictNode(self.node(args[1], None))

    def _register(self, cls: type) -> None:
        if cls in self.classes or cls in self._in_progress:
            return
        self._in_progress.add(cls)
        try:
            hints = _type_hints(cls)
            specs = tuple(self._fields(cls, hints))
        finally:
            self._in_progress.discard(cls)
        self.classes[cls] = ClassNode(cls=cls, fields=specs, description=_class_doc(cls))

    def _fields(self, cls: type, hints: Mapping[str, object]) -> list[FieldSpec]:
        if attrs.has(cls):
            return [self._attrs_field(cls, field, hints) for field in attrs.fields(cls) if field.init]
        return [
            self._dataclass_field(cls, field, hints)
            for field in dataclasses.fields(cls)  # pyright: ignore[reportArgumentType]
            if field.init
        ]

    def _attrs_field(
        self, cls: type, field: attrs.Attribute[object], hints: Mapping[str, object]
    ) -> FieldSpec:
        annotation = hints.get(field.name, field.type)
        if annotation is None:
            raise SerdeTypeError(f"{cls.__qualname__}.{field.name} has no type annotation")
        meta = Meta.from_mapping(field.metadata)
        node = self.node(annotation, meta)
        default: object = field.default
        required = default is attrs.NOTHING
        known, value = False, None
        if isinstance(default, _FACTORY_TYPE):
            factory: object = getattr(default, "factory", None)
            if not getattr(default, "takes_self", False) and factory in _DEFAULT_FACTORIES:
                known, value = True, _DEFAULT_FACTORIES[factory]
        elif not required:
            known, value = True, default
        return FieldSpec(
            key=field.alias or field.name,
            node=node,
            required=required,
            default=value,
            has_known_default=known,
            description=node.description,
            attribute=field.name,
        )

    def _dataclass_field(
        self, cls: type, field: dataclasses.Field[object], hints: Mapping[str, object]
    ) -> FieldSpec:
        annotation = hints.get(field.name, field.type)
        meta = Meta.from_mapping(field.metadata)
        node = self.node(annotation, meta)
        has_default = field.default is not dataclasses.MISSING
        factory: object = field.default_factory
        has_factory = factory is not dataclasses.MISSING
        known, value = False, None
        if has_default:
            known, value = True, field.default
        elif has_factory and factory in _DEFAULT_FACTORIES:
            known, value = True, _DEFAULT_FACTORIES[factory]
        return FieldSpec(
            key=field.name,
            node=node,
            required=not (has_default or has_factory),
            default=value,
            has_known_default=known,
            description=node.description,
            attribute=field.name,
        )


def _type_hints(cls: type) -> Mapping[str, object]:
    try:
        return typing.get_type_hints(cls, include_extras=True)
    except Exception as exc:  # NameError, TypeError from unresolvable forward refs
        raise SerdeTypeError(f"cannot resolve the annotations of {cls.__qualname__}: {exc}") from exc


def _class_doc(cls: type) -> str | None:
    doc = cls.__doc__
    if not doc:
        return None
    # dataclasses invent "Name(field: type, ...)" when there is no docstring.
    if dataclasses.is_dataclass(cls) and doc.startswith(cls.__name__ + "("):
        return None
    return " ".join(doc.split())


def _literal(tp: object) -> LiteralNode:
    values: list[LiteralValue] = []
    for value in get_args(tp):
        if isinstance(value, enum.Enum):
            raise SerdeTypeError(f"use the Enum class itself instead of Literal of its members: {tp!r}")
        if value is not None and not isinstance(value, (str, int, float, bool)):
            raise SerdeTypeError(f"Literal values must be JSON scalars: {tp!r}")
        values.append(value)
    return LiteralNode(tuple(values))


def _enum(tp: type[enum.Enum]) -> EnumNode:
    for member in tp:
        value: object = member.value
        if value is not None and not isinstance(value, (str, int, float, bool)):
            raise SerdeTypeError(
                f"enum {tp.__qualname__} has a non-JSON value {value!r}; serde maps enums by value"
            )
    return EnumNode(tp)


def _apply_meta(node: Node, meta: Meta, tp: object) -> Node:
    """Attach ``meta``: the description to the outer node, constraints to every
    branch where JSON Schema would apply them (numbers, strings, arrays, objects)."""
    if meta.has_constraints:
        node, used = _constrain(node, meta)
        unused = sorted(used ^ _set_keys(meta))
        if unused:
            raise SerdeTypeError(f"constraint(s) {', '.join(unused)} do not apply to {tp!r}")
    if meta.description is not None:
        node = attrs.evolve(node, description=meta.description)
    return node


def _set_keys(meta: Meta) -> set[str]:
    return {key for key in META_KEYS[1:] if getattr(meta, key) is not None}


def _constrain(node: Node, meta: Meta) -> tuple[Node, set[str]]:
    if isinstance(node, NumberNode):
        keys = {"ge", "gt", "le", "lt"}
    elif isinstance(node, StrNode):
        keys = {"min_length", "max_length", "pattern"}
    elif isinstance(node, (ListNode, DictNode)):
        keys = {"min_length", "max_length"}
    elif isinstance(node, UnionNode):
        used: set[str] = set()
        options: list[Node] = []
        for option in node.options:
            changed, option_used = _constrain(option, meta)
            options.append(changed)
            used |= option_used
        return attrs.evolve(node, options=tuple(options)), used
    else:
        return node, set()
    changes = {key: getattr(meta, key) for key in keys if getattr(meta, key) is not None}
    return (attrs.evolve(node, **changes) if changes else node), set(changes)
