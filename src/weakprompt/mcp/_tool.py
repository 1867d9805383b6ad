"""An MCP server's tool as a weakprompt tool: the server's schema, checked with ``jsonschema``.

The dispatcher treats a mounted tool like any other: it decodes the
arguments once, asks the tool to parse them (here: validate against the
server's JSON Schema, compiled once per tool), snapshots, runs the async
handler (the call to the server), and publishes one ``ToolInvoked``.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterator
from typing import TYPE_CHECKING, Any, Protocol, cast

import attrs

from ..errors import ConfigurationError
from ..jsonpath import join_path, render_key
from ..jsontypes import JSONObject
from ..safetext import clip, type_name
from ..serde import SerdeError, SerdeIssue, StrictSchemaError
from ..tools import Tool, ToolContext, ToolResult
from ._info import McpToolInfo

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

__all__ = ["McpArguments", "McpLimits", "McpTool", "SchemaProblem", "check_catalogue_entry", "compile_schema"]

_MAX_DESCRIPTION = 200
_MAX_ISSUES = 20


@attrs.frozen
class McpArguments:
    """The arguments of one call to an MCP tool, already checked against the server's schema."""

    values: JSONObject


class SchemaProblem(ValueError):
    """A server's tool schema that is not a usable JSON Schema for an arguments object."""


@attrs.frozen
class McpLimits:
    """How much of a server's catalogue and replies a toolset accepts (a hostile server is bounded).

    ``max_tools``: tools offered from one server (after the filter); the rest
    are left out and named in ``problems``. ``max_schema_bytes``: the UTF-8
    JSON size of one tool's input (or output) schema. ``max_description_bytes``:
    one tool's description. A tool over a limit is not offered.
    ``max_reply_bytes``: one message read from a stdio server, or one reply
    (one SSE event) from an HTTP server; a larger reply fails its call and
    the connection goes on.
    """

    max_tools: int = 256
    max_schema_bytes: int = 64 * 1024
    max_description_bytes: int = 8 * 1024
    max_reply_bytes: int = 32 * 1024 * 1024

    def __attrs_post_init__(self) -> None:
        for field in attrs.fields(McpLimits):
            if getattr(self, field.name) < 1:
                raise ConfigurationError(f"McpLimits.{field.name} must be at least 1")


_TOP_KEYS = frozenset(
    {"type", "properties", "required", "title", "description", "additionalProperties", "$schema"}
)
_PROPERTY_KEYS = frozenset({"type", "title", "description", "default", "examples", "format"})
_PRIMITIVES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
}

QuickCheck = Callable[[JSONObject], bool]


def quick_check(schema: JSONObject) -> QuickCheck | None:
    """A shortcut for the common flat schema (primitive-typed properties, ``required``), or ``None``.

    It answers ``True`` only when the arguments are certainly valid (exact
    JSON types, every required key, no key an ``additionalProperties: false``
    refuses); anything else goes to the full validator, which decides and
    words the errors. Most tools' schemas are of this shape, and checking them
    this way costs a few microseconds instead of tens.
    """
    if not _TOP_KEYS.issuperset(schema) or schema.get("type", "object") != "object":
        return None
    properties = schema.get("properties", {})
    required = schema.get("required", [])
    extra = schema.get("additionalProperties", True)
    if not isinstance(properties, dict) or not isinstance(required, list) or not isinstance(extra, bool):
        return None
    kinds: dict[str, tuple[type, ...] | None] = {}
    for key, spec in properties.items():
        if not isinstance(spec, dict) or not _PROPERTY_KEYS.issuperset(spec):
            return None
        kind = spec.get("type")
        if kind is None:
            kinds[key] = None
        elif isinstance(kind, str) and kind in _PRIMITIVES:
            kinds[key] = _PRIMITIVES[kind]
        else:
            return None
    needed = tuple(str(key) for key in required)

    def check(arguments: JSONObject) -> bool:
        for key in needed:
            if key not in arguments:
                return False
        for key, value in arguments.items():
            if key not in kinds:
                if not extra:
                    return False
                continue
            expected = kinds[key]
            if expected is not None and type(value) not in expected:  # exact: a bool is no integer
                return False
        return True

    return check


def _step(step: object) -> str:
    """One path step as ``weakprompt.jsonpath`` writes it: ``[1]`` for an array index, a key otherwise."""
    if isinstance(step, int) and not isinstance(step, bool):
        return f"[{step}]"
    return render_key(step)


def _size(value: object) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())


_REF_KEYS = ("$ref", "$dynamicRef", "$recursiveRef")


def _walk(schema: object) -> Iterator[tuple[str, object]]:
    """Every (JSON pointer, value) inside ``schema``, without recursion (a deep schema cannot overflow)."""
    stack: list[tuple[str, object]] = [("#", schema)]
    while stack:
        pointer, value = stack.pop()
        yield pointer, value
        if isinstance(value, dict):
            for key, item in cast("dict[str, object]", value).items():
                escaped = str(key).replace("~", "~0").replace("/", "~1")
                stack.append((f"{pointer}/{escaped}", item))
        elif isinstance(value, list):
            for index, item in enumerate(cast("list[object]", value)):
                stack.append((f"{pointer}/{index}", item))


def check_refs(schema: JSONObject) -> None:
    """Refuse a ``$ref`` that points outside the schema, points nowhere, or takes part in a cycle.

    A remote reference would make validation fetch from the network; a
    cycle (a schema that refers back to itself, directly or through others)
    makes validation and the providers' schema handling loop. Both are
    refused when the tool is listed rather than failing every call later.
    """
    anchors: dict[str, str] = {}
    refs: list[tuple[str, str]] = []  # (where the $ref is, its target)
    for pointer, value in _walk(schema):
        if not isinstance(value, dict):
            continue
        node = cast("dict[str, object]", value)
        anchor = node.get("$anchor")
        if isinstance(anchor, str):
            anchors[anchor] = pointer
        for key in _REF_KEYS:
            target = node.get(key)
            if target is None:
                continue
            if not isinstance(target, str) or not target.startswith("#"):
                raise SchemaProblem(f"it has a remote {key} {clip(str(target), 100)!r} at {pointer}")
            refs.append((pointer, target))
    if not refs:
        return
    resolved: list[tuple[str, str]] = []
    for pointer, target in refs:
        if target == "#" or target.startswith("#/"):
            where = "#" + target[1:].rstrip("/") if target != "#" else "#"
        elif target[1:] in anchors:
            where = anchors[target[1:]]
        else:
            raise SchemaProblem(f"its $ref {clip(target, 100)!r} at {pointer} names no place in the schema")
        if not _resolves(schema, where):
            raise SchemaProblem(f"its $ref {clip(target, 100)!r} at {pointer} names no place in the schema")
        resolved.append((pointer, where))
    # A reference graph: the subschema at a $ref's target reaches every $ref found inside it.
    targets = {where for _, where in resolved}
    edges: dict[str, set[str]] = {where: set() for where in targets}
    for source in targets:
        prefix = source + "/"
        for pointer, where in resolved:
            if pointer == source or pointer.startswith(prefix) or source == "#":
                edges[source].add(where)
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for start in sorted(targets):
        if start in state:
            continue
        path: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(edges[start])))]
        state[start] = 1
        while path:
            node, children = path[-1]
            child = next(children, None)
            if child is None:
                state[node] = 2
                path.pop()
            elif state.get(child) == 1:
                raise SchemaProblem(f"it has a $ref cycle through {child}")
            elif child not in state:
                state[child] = 1
                path.append((child, iter(sorted(edges[child]))))


def _resolves(schema: JSONObject, pointer: str) -> bool:
    value: object = schema
    for raw in pointer.split("/")[1:]:
        key = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(value, dict) and key in value:
            value = cast("dict[str, object]", value)[key]
        elif isinstance(value, list) and key.isdigit() and int(key) < len(cast("list[object]", value)):
            value = cast("list[object]", value)[int(key)]
        else:
            return False
    return True


def check_catalogue_entry(info: McpToolInfo, limits: McpLimits) -> None:
    """Raise :class:`SchemaProblem` when ``info`` is over a limit or its schema's references are unsafe."""
    described = len(info.description.encode()) + len((info.title or "").encode())
    if described > limits.max_description_bytes:
        raise SchemaProblem(
            f"its description is {described} bytes, over the limit of {limits.max_description_bytes}"
        )
    for kind, schema in (("input", info.input_schema), ("output", info.output_schema)):
        if schema is None:
            continue
        size = _size(schema)
        if size > limits.max_schema_bytes:
            raise SchemaProblem(
                f"its {kind} schema is {size} bytes, over the limit of {limits.max_schema_bytes}"
            )
        check_refs(schema)


def compile_schema(schema: JSONObject) -> Validator:
    """A validator for ``schema`` in the draft it declares (2020-12 when it declares none).

    Raises :class:`SchemaProblem` naming what is wrong when the schema is not
    valid JSON Schema or does not describe an object.
    """
    from jsonschema import validators
    from jsonschema.exceptions import SchemaError

    if schema.get("type", "object") != "object":
        raise SchemaProblem(f"the input schema must describe an object, it has type {schema.get('type')!r}")
    cls = validators.validator_for(schema, default=validators.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except SchemaError as exc:
        where = join_path([_step(step) for step in exc.absolute_path])
        raise SchemaProblem(f"not valid JSON Schema at {where}: {clip(exc.message, 200)}") from None
    except RecursionError:
        raise SchemaProblem("nested too deeply to check") from None
    return cls(schema)


class CallServer(Protocol):
    """How a mounted tool reaches its server (the toolset, which owns the connection)."""

    def call(
        self, name: str, info: McpToolInfo, arguments: JSONObject, context: ToolContext
    ) -> Awaitable[ToolResult[Any]]: ...


@attrs.frozen
class McpCall:
    """The handler of a mounted tool: hands the call to the toolset that owns the connection."""

    server: CallServer = attrs.field(eq=False)
    info: McpToolInfo
    name: str

    async def __call__(self, params: McpArguments, *, context: ToolContext) -> ToolResult[Any]:
        return await self.server.call(self.name, self.info, params.values, context)


def _schema_for_model(schema: JSONObject) -> JSONObject:
    """The server's schema as offered to the model: the ``$schema`` marker dropped, an object type set."""
    offered: JSONObject = {key: value for key, value in schema.items() if key != "$schema"}
    offered.setdefault("type", "object")
    if "properties" not in offered:
        offered["properties"] = {}
    return offered


def _description(info: McpToolInfo) -> str:
    text = " ".join((info.description or info.title or "").split())
    if not text:
        text = f"MCP tool {info.name}"
    return clip(text, _MAX_DESCRIPTION) if len(text) > _MAX_DESCRIPTION else text


@attrs.frozen
class McpTool(Tool[McpArguments, Any]):
    """A tool a mounted MCP server offers (see ``specs/MCP.md``).

    ``parameters_schema()`` is the server's own schema; there is no strict
    variant, so adapters asked for strict tools send it unflagged.
    """

    info: McpToolInfo = attrs.field(kw_only=True, eq=False)
    validator: Validator = attrs.field(kw_only=True, eq=False, repr=False)
    quick: QuickCheck | None = attrs.field(kw_only=True, eq=False, repr=False, default=None)
    offered_schema: JSONObject = attrs.field(kw_only=True, eq=False, repr=False)

    @classmethod
    def build(
        cls, name: str, info: McpToolInfo, server: CallServer, *, requires_approval: bool = False
    ) -> McpTool:
        """The tool for ``info`` under ``name``; raises :class:`SchemaProblem` for an unusable schema.

        ``requires_approval`` pauses a run on each call until a person decides (specs/APPROVAL.md).
        """
        validator = compile_schema(info.input_schema)
        return cls(
            name=name,
            description=_description(info),
            handler=McpCall(server, info, name),
            params_type=McpArguments,
            result_type=None,
            accepts_overrides=False,
            requires_approval=requires_approval,
            info=info,
            validator=validator,
            quick=quick_check(info.input_schema),
            offered_schema=_schema_for_model(info.input_schema),
        )

    def parameters_schema(self, *, strict: bool = False) -> JSONObject:
        if strict:
            raise StrictSchemaError(f"MCP tool {self.name!r} has its server's schema, with no strict variant")
        return self.offered_schema

    def parse_arguments(self, arguments: JSONObject) -> McpArguments:
        if self.quick is not None and self.quick(arguments):
            return McpArguments(arguments)
        issues = list(_issues(self.validator, arguments))
        if issues:
            raise SerdeError(issues, target=f"arguments for MCP tool {self.info.name!r}")
        return McpArguments(arguments)


def _issues(validator: Validator, arguments: JSONObject) -> Iterator[SerdeIssue]:
    errors = sorted(validator.iter_errors(arguments), key=lambda e: [str(step) for step in e.absolute_path])
    for error in errors[:_MAX_ISSUES]:
        where = join_path([_step(step) for step in error.absolute_path])
        received: object = error.instance
        yield SerdeIssue(
            path=where,
            expected=clip(f"({error.validator}) {error.message}", 160),
            received=type_name(received),
        )
