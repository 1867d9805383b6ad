"""An MCP server's tool as a weakprompt tool: the server's schema, checked with ``jsonschema``.

The dispatcher treats a mounted tool like any other: it decodes the
arguments once, asks the tool to parse them (here: validate against the
server's JSON Schema, compiled once per tool), snapshots, runs the async
handler (the call to the server), and publishes one ``ToolInvoked``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from typing import TYPE_CHECKING, Any, Protocol

import attrs

from ..jsonpath import join_path, render_key
from ..jsontypes import JSONObject
from ..safetext import clip, type_name
from ..serde import SerdeError, SerdeIssue, StrictSchemaError
from ..tools import Tool, ToolContext, ToolResult
from ._info import McpToolInfo

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

__all__ = ["McpArguments", "McpTool", "SchemaProblem", "compile_schema"]

_MAX_DESCRIPTION = 200
_MAX_ISSUES = 20


@attrs.frozen
class McpArguments:
    """The arguments of one call to an MCP tool, already checked against the server's schema."""

    values: JSONObject


class SchemaProblem(ValueError):
    """A server's tool schema that is not a usable JSON Schema for an arguments object."""


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
        where = join_path([render_key(step) for step in exc.absolute_path])
        raise SchemaProblem(f"not valid JSON Schema at {where}: {clip(exc.message, 200)}") from None
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
        where = join_path([render_key(step) for step in error.absolute_path])
        received: object = error.instance
        yield SerdeIssue(
            path=where,
            expected=clip(f"({error.validator}) {error.message}", 160),
            received=type_name(received),
        )
