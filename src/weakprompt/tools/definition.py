"""The tool definition: a name, a description, a typed handler and its schema."""

from __future__ import annotations

import inspect
import re
import types
import typing
import weakref
from typing import TYPE_CHECKING, Any, Generic, TypeAlias, TypeVar

import attrs

from ..errors import PromptValidationError
from ..jsontypes import JSONObject
from ..parts import BinaryPart
from ..serde import parse, schema
from ..serde.expressible import unexpressible
from .approval import ApprovalPolicy, needs_approval
from .context import ToolContext
from .example import ToolExample
from .handler import (
    ToolHandler,
    check_parameter_order,
    infer_params_type,
    infer_result_type,
    is_params_class,
)
from .result import RenderableResult

__all__ = ["AnyTool", "Tool"]

P = TypeVar("P")
R = TypeVar("R")

NAME_PATTERN = re.compile(r"[a-z0-9_-]{1,64}")
MAX_DESCRIPTION = 200


def _check_name(_tool: object, _attribute: object, name: str) -> None:
    if not isinstance(name, str) or NAME_PATTERN.fullmatch(name) is None:  # pyright: ignore[reportUnnecessaryIsInstance]
        raise PromptValidationError(
            f"tool name {name!r} is invalid: use 1-64 characters from a-z, 0-9, '_' and '-'"
        )


def _check_description(tool: Tool[Any, Any], _attribute: object, description: str) -> None:
    if not isinstance(description, str) or not description.strip():  # pyright: ignore[reportUnnecessaryIsInstance]
        raise PromptValidationError(f"tool {tool.name!r}: the description must be non-empty text")
    if len(description) > MAX_DESCRIPTION:
        raise PromptValidationError(
            f"tool {tool.name!r}: the description is {len(description)} characters; "
            f"the limit is {MAX_DESCRIPTION}"
        )


# A plain function's parameters come from its code and its annotations. A handler made by the same
# ``def`` again with the same annotations (a closure built for each evaluation) is checked once.
_ORDER_CHECKED: weakref.WeakKeyDictionary[types.CodeType, set[object]] = weakref.WeakKeyDictionary()


def _order_key(handler: object) -> tuple[types.CodeType, object] | None:
    """What decides ``handler``'s parameter order, when that is all that does (None: ask inspect)."""
    if type(handler) is not types.FunctionType:
        return None
    if "__wrapped__" in handler.__dict__ or "__signature__" in handler.__dict__:
        return None  # inspect.signature follows these instead
    annotations = tuple(handler.__annotations__.items())
    try:
        hash(annotations)
    except TypeError:
        return None
    return handler.__code__, annotations


def _check_handler(tool: Tool[Any, Any], _attribute: object, handler: object) -> None:
    if not callable(handler):
        raise PromptValidationError(f"tool {tool.name!r}: the handler {handler!r} is not callable")
    key = _order_key(handler)
    if key is not None and key[1] in _ORDER_CHECKED.get(key[0], ()):
        return
    try:
        signature = inspect.signature(handler)
    except (TypeError, ValueError):  # nothing to check; the types were given explicitly
        return
    check_parameter_order(signature, f"tool {tool.name!r}")
    if key is not None:
        _ORDER_CHECKED.setdefault(key[0], set()).add(key[1])


def _check_params_type(tool: Tool[Any, Any], _attribute: object, params_type: object) -> None:
    if not is_params_class(params_type):
        raise PromptValidationError(
            f"tool {tool.name!r}: params_type must be a dataclass, an attrs class or a pydantic model "
            "(use NoParams for a tool without arguments, or @tool for a handler with plain "
            f"parameters), got {params_type!r}"
        )
    if _serde_reads_arguments(type(tool)):
        _check_expressible(params_type, f"tool {tool.name!r}", "params")


def _serde_reads_arguments(cls: type[Tool[Any, Any]]) -> bool:
    """Whether serde parses the arguments (a mounted MCP tool checks them against its server's schema)."""
    own: object = cls.parse_arguments
    default: object = Tool[Any, Any].parse_arguments
    return own is default


def _check_result_type(tool: Tool[Any, Any], _attribute: object, result_type: object) -> None:
    """The value is shown to the model as JSON, so JSON must express it, unless it renders itself."""
    if result_type is None or _renders_itself(result_type):
        return
    _check_expressible(result_type, f"tool {tool.name!r}", "result")


def _renders_itself(tp: object) -> bool:
    """A value that renders its own text, or an image or document (shown to the model as a part)."""
    union = typing.get_origin(tp) in (typing.Union, types.UnionType)
    members = typing.get_args(tp) if union else (tp,)
    return all(
        isinstance(member, type) and issubclass(member, (RenderableResult, BinaryPart)) for member in members
    )


def _check_expressible(tp: object, what: str, role: str) -> None:
    """Refuse a type JSON cannot express where the tool is defined, naming the field path."""
    problem = unexpressible(tp)
    if problem is not None:
        raise PromptValidationError(problem.describe(what, role))


# Each type is inferred only when it was not given, so an explicit one never needs an annotation.
def _inferred_params(tool: Tool[Any, Any]) -> type[Any]:
    return infer_params_type(tool.handler, f"tool {tool.name!r}")


def _inferred_result(tool: Tool[Any, Any]) -> type[Any] | None:
    return infer_result_type(tool.handler, f"tool {tool.name!r}")


def _matches(value: object, expected: object) -> bool:
    """Best-effort runtime check of an example value against a declared type."""
    if expected is None:
        return value is None
    if isinstance(expected, type):
        return isinstance(value, expected)
    origin = typing.get_origin(expected)
    return not isinstance(origin, type) or isinstance(value, origin)


def _check_examples(tool: Tool[Any, Any], _attribute: object, examples: object) -> None:
    if not isinstance(examples, tuple):
        raise PromptValidationError(f"tool {tool.name!r}: examples must be a tuple of ToolExample")
    for index, example in enumerate(typing.cast(tuple[object, ...], examples)):
        where = f"tool {tool.name!r}: example {index}"
        if not isinstance(example, ToolExample):
            raise PromptValidationError(f"{where} is {type(example).__name__}, expected ToolExample")
        typed = typing.cast(ToolExample[object, object], example)
        if not isinstance(typed.input, tool.params_type):
            raise PromptValidationError(
                f"{where}: input is {type(typed.input).__name__}, expected {tool.params_type.__name__}"
            )
        if not _matches(typed.output, tool.result_type):
            raise PromptValidationError(
                f"{where}: output is {type(typed.output).__name__}, expected {tool.result_type!r}"
            )


def _check_policy(tool: Tool[Any, Any], _attribute: object, policy: object) -> None:
    if not isinstance(policy, bool) and not callable(policy):
        raise PromptValidationError(
            f"tool {tool.name!r}: requires_approval must be a bool or a predicate (params, context) -> bool"
        )


@attrs.frozen
class Tool(Generic[P, R]):
    """A capability offered to the model.

    ``params_type`` and ``result_type`` default to what the handler's
    annotations say (``handler(params: P, *, context) -> ToolResult[R]``, or
    ``-> R`` for a handler returning a plain value); pass them explicitly only
    for handlers without usable annotations. Both must be types JSON can
    express (a result class with its own ``render()`` is exempt); a field that
    is not is refused here, by its path.
    ``requires_approval`` pauses the run on a call until someone decides
    it; ``idempotent`` lets a call interrupted by a crash run again on
    resume (``specs/APPROVAL.md``); ``required`` says the run depends on
    the tool (its verdict, ``specs/GUARDRAILS.md``).
    Everything is validated here, so a bad tool fails where it is defined.
    """

    name: str = attrs.field(validator=_check_name)
    description: str = attrs.field(validator=_check_description)
    handler: ToolHandler[P, R] = attrs.field(validator=_check_handler)
    params_type: type[P] = attrs.field(
        default=attrs.Factory(_inferred_params, takes_self=True), validator=_check_params_type
    )
    result_type: type[R] | None = attrs.field(
        default=attrs.Factory(_inferred_result, takes_self=True), validator=_check_result_type
    )
    examples: tuple[ToolExample[P, R], ...] = attrs.field(default=(), validator=_check_examples, hash=False)
    accepts_overrides: bool = True
    sequential: bool = False
    requires_approval: ApprovalPolicy = attrs.field(default=False, kw_only=True, validator=_check_policy)
    idempotent: bool = attrs.field(default=False, kw_only=True)
    required: bool = attrs.field(default=False, kw_only=True)
    """The run depends on this tool: a run whose last call of it failed has a failed verdict."""
    ends_run: bool = attrs.field(default=False, kw_only=True)
    """A successful call ends the run once its turn is stored (a handoff's transfer tool)."""
    _spec: JSONObject | None = attrs.field(init=False, default=None, eq=False, hash=False, repr=False)

    if TYPE_CHECKING:
        # Spelled out for the type checker only (attrs writes the real one): the synthesized
        # signature would let the inferred defaults turn ``P`` into ``Any``; here ``P`` and
        # ``R`` come from the handler, or from explicit ``params_type`` / ``result_type``.
        def __init__(  # noqa: PLR0917 - attrs' __init__ takes them positionally too
            self,
            name: str,
            description: str,
            handler: ToolHandler[P, R],
            params_type: type[P] = ...,
            result_type: type[R] | None = ...,
            examples: tuple[ToolExample[P, R], ...] = (),
            accepts_overrides: bool = True,
            sequential: bool = False,
            *,
            requires_approval: ApprovalPolicy = False,
            idempotent: bool = False,
            required: bool = False,
            ends_run: bool = False,
        ) -> None: ...

    def needs_approval(self, params: P, context: ToolContext) -> bool:
        """Whether this call must wait for a decision (``specs/APPROVAL.md``); a raising predicate: yes."""
        return needs_approval(self.requires_approval, params, context)

    def parameters_schema(self, *, strict: bool = False) -> JSONObject:
        """JSON Schema of the arguments object the model must send."""
        return schema(self.params_type, strict=strict)

    def parse_arguments(self, arguments: JSONObject) -> P:
        """The params object for one call's decoded arguments; raises ``SerdeError`` naming each problem.

        The dispatcher calls this once per call. A tool whose arguments are
        described by a schema it did not generate (a mounted MCP tool)
        overrides it to validate against that schema instead.
        """
        return parse(self.params_type, arguments, extra="forbid")

    def spec(self) -> JSONObject:
        """Provider-neutral definition ``{"name", "description", "parameters"}``.

        Built once per tool and shared: treat the returned dict as read-only.
        """
        cached = self._spec
        if cached is not None:
            return cached
        spec: JSONObject = {
            "name": self.name,
            "description": self.description,
            "parameters": self.parameters_schema(),
        }
        object.__setattr__(self, "_spec", spec)
        return spec


AnyTool: TypeAlias = Tool[Any, Any]
"""A tool of unknown params/result types, for heterogeneous collections."""
