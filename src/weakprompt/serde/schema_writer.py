"""The JSON Schema (draft 2020-12) of a type model, as :func:`~weakprompt.serde.schema` returns it.

Nested classes go to ``$defs`` and are referenced with ``$ref``; the root class
is written inline and refers to itself as ``"#"``. With ``strict=True`` the
output is shaped for OpenAI structured outputs (see ``strict.py``).
"""

from __future__ import annotations

import json

from weakprompt.jsontypes import JSONObject, JSONValue
from weakprompt.serde.dumping import dump
from weakprompt.serde.errors import SerdeTypeError, StrictSchemaError
from weakprompt.serde.introspect import type_model
from weakprompt.serde.nodes import (
    NULL,
    AnyNode,
    BoolNode,
    ClassNode,
    ClassRef,
    DictNode,
    EnumNode,
    FieldSpec,
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
from weakprompt.serde.pydantic_models import embed_schema, model_schema, strict_model_schema
from weakprompt.serde.strict import finish_strict
from weakprompt.serde.unions import merge_union, nullable

__all__ = ["build_schema"]


def build_schema(tp: object, strict: bool) -> JSONObject:
    model = type_model(tp)
    if strict and not isinstance(model.root, (ClassRef, PydanticNode)):
        raise StrictSchemaError(
            f"strict structured outputs need an object at the root; {tp!r} is not a dataclass, "
            "an attrs class or a pydantic model"
        )
    out = _Writer(model, strict).root()
    return finish_strict(out) if strict else out


class _Writer:
    def __init__(self, model: TypeModel, strict: bool) -> None:
        self.model = model
        self.strict = strict
        self.root_cls = model.root.cls if isinstance(model.root, ClassRef) else None
        self.def_names: dict[type, str] = {}
        self.defs: dict[str, JSONValue] = {}
        self.pydantic_bodies: dict[type, JSONObject] = {}

    def root(self) -> JSONObject:
        node = self.model.root
        if isinstance(node, ClassRef):
            out = self.object_schema(self.model.classes[node.cls])
            if node.description is not None:
                out["description"] = node.description
        else:
            out = self.node(node)
        if self.defs:
            out["$defs"] = dict(sorted(self.defs.items()))
        return out

    def node(self, node: Node) -> JSONObject:
        out = self.bare(node)
        if node.description is not None:
            out["description"] = node.description
        return out

    def bare(self, node: Node) -> JSONObject:
        match node:
            case AnyNode():
                if self.strict:
                    raise StrictSchemaError("an arbitrary JSON value (Any) has no strict-mode schema")
                return {}
            case NoneNode():
                return {"type": "null"}
            case BoolNode():
                return {"type": "boolean"}
            case NumberNode():
                return self.number(node)
            case StrNode():
                return self.string(node)
            case FormatNode():
                out: JSONObject = {"type": "string"}
                if node.format is not None:
                    out["format"] = node.format
                if node.pattern is not None:
                    out["pattern"] = node.pattern
                return out
            case LiteralNode() | EnumNode():
                return literal_schema(node.values)
            case ListNode():
                out = {"type": "array", "items": self.node(node.item)}
                _put(out, "minItems", node.min_length)
                _put(out, "maxItems", node.max_length)
                return out
            case TupleNode():
                return self.fixed_tuple(node)
            case DictNode():
                if self.strict:
                    raise StrictSchemaError(
                        "dict[str, X] has no strict-mode schema (strict objects must list every "
                        "property); use a list of key/value dataclasses instead"
                    )
                out = {"type": "object", "additionalProperties": self.node(node.value)}
                _put(out, "minProperties", node.min_length)
                _put(out, "maxProperties", node.max_length)
                return out
            case UnionNode():
                return merge_union([self.node(option) for option in node.options])
            case ClassRef():
                return self.ref(node.cls)
            case PydanticNode():
                return self.pydantic(node.cls)

    def number(self, node: NumberNode) -> JSONObject:
        out: JSONObject = {"type": "integer" if node.integer else "number"}
        _put(out, "minimum", node.ge)
        _put(out, "exclusiveMinimum", node.gt)
        _put(out, "maximum", node.le)
        _put(out, "exclusiveMaximum", node.lt)
        return out

    def string(self, node: StrNode) -> JSONObject:
        out: JSONObject = {"type": "string"}
        if not self.strict:  # strict mode rejects minLength/maxLength
            _put(out, "minLength", node.min_length)
            _put(out, "maxLength", node.max_length)
        _put(out, "pattern", node.pattern)
        return out

    def fixed_tuple(self, node: TupleNode) -> JSONObject:
        count = len(node.items)
        items = [self.node(item) for item in node.items]
        out: JSONObject = {"type": "array"}
        if self.strict:
            # No prefixItems in strict mode: admit any listed item type at any
            # position and let parse check the positions.
            out["items"] = merge_union(items) if items else {"type": "null"}
        else:
            out["prefixItems"] = list[JSONValue](items)
            out["items"] = False
        out["minItems"] = count
        out["maxItems"] = count
        return out

    def ref(self, cls: type) -> JSONObject:
        if cls is self.root_cls:
            return {"$ref": "#"}
        name = self.def_names.get(cls)
        if name is None:
            name = self._unique_name(cls)
            self.def_names[cls] = name
            self.defs[name] = {}  # placeholder so recursion finds the name
            self.defs[name] = self.object_schema(self.model.classes[cls])
        return {"$ref": f"#/$defs/{name}"}

    def pydantic(self, cls: type) -> JSONObject:
        """pydantic's schema of ``cls``, its ``$defs`` joined to this schema's.

        Each model is embedded once per schema, so a model used twice adds
        its definitions once; a clashing definition name gets a suffix.
        """
        embedded = self.pydantic_bodies.get(cls)
        if embedded is None:
            found = strict_model_schema(cls) if self.strict else model_schema(cls)
            embedded = self.pydantic_bodies[cls] = embed_schema(found, self._add_pydantic_def)
        return dict(embedded)

    def _add_pydantic_def(self, name: str, body: JSONObject) -> str:
        """Reserve a free name (empty ``body``) or fill a reserved one."""
        if body:
            self.defs[name] = body
            return name
        name = self._free_name(name)
        self.defs[name] = {}
        return name

    def _unique_name(self, cls: type) -> str:
        return self._free_name(cls.__name__)

    def _free_name(self, base: str) -> str:
        name, counter = base, 1
        taken = set(self.def_names.values()) | set(self.defs)
        while name in taken:
            counter += 1
            name = f"{base}_{counter}"
        return name

    def object_schema(self, node: ClassNode) -> JSONObject:
        properties: JSONObject = {}
        required: list[JSONValue] = []
        for spec in node.fields:
            properties[spec.key] = self.field(spec)
            if spec.required or self.strict:
                required.append(spec.key)
        out: JSONObject = {"type": "object"}
        if node.description is not None:
            out["description"] = node.description
        out["properties"] = properties
        if required or self.strict:
            out["required"] = required
        out["additionalProperties"] = False
        return out

    def field(self, spec: FieldSpec) -> JSONObject:
        out = self.bare(spec.node)
        if not spec.required and NULL not in kinds_of(spec.node):
            # parse reads an explicit null for a field with a default as "use the
            # default" (strict-mode clients must send every key), so say so.
            out = nullable(out)
        description = spec.description
        default = _json_default(spec)
        if self.strict:
            if default is not _NO_DEFAULT and default is not None:
                # strict mode has no "default" keyword; tell the model in words.
                note = f"Default: {_short_json(default)}."
                description = _sentence(description) + " " + note if description else note
        elif default is not _NO_DEFAULT:
            out["default"] = default
        if description is not None:
            out["description"] = description
        return out


_NO_DEFAULT: JSONValue = {"__serde_no_default__": True}


def _json_default(spec: FieldSpec) -> JSONValue:
    if not spec.has_known_default:
        return _NO_DEFAULT
    try:
        return dump(spec.default)
    except SerdeTypeError:
        return _NO_DEFAULT


def _short_json(value: JSONValue) -> str:
    text = json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
    return text if len(text) <= 80 else text[:77] + "..."


def _sentence(text: str) -> str:
    text = text.rstrip()
    return text if text.endswith((".", "!", "?", ":")) else text + "."


def _put(out: JSONObject, key: str, value: int | float | str | None) -> None:
    if value is not None:
        out[key] = value


def literal_schema(values: tuple[LiteralValue, ...]) -> JSONObject:
    if not values:
        return {"enum": []}
    types: list[JSONValue] = []
    for value in values:
        name = _json_type_name(value)
        if name not in types:
            types.append(name)
    return {"type": types[0] if len(types) == 1 else types, "enum": list[JSONValue](values)}


def _json_type_name(value: LiteralValue) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    return "string"
