"""The handler calling convention, and reading a handler's annotations.

A handler is ``handler(params, *, context) -> ToolResult[R]``, or ``-> R`` for a
plain value the dispatcher wraps as ``ToolResult.ok(value)``. Its params and
result types are read from its annotations so a tool is declared once, as a
plain typed function, without subscripting ``Tool[P, R]`` at runtime. Each
type is read only when it was not given explicitly, so an explicit
``params_type=`` or ``result_type=`` never trips over a missing annotation.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import types
import typing
from collections.abc import Awaitable, Callable
from typing import Any, Generic, Protocol, TypeAlias, TypeVar, Union

import attrs

from ..errors import PromptValidationError
from ..serde.pydantic_models import is_pydantic_model
from .context import ToolContext
from .result import ToolResult

__all__ = [
    "ContextFreeHandler",
    "NoParams",
    "ToolHandler",
    "ToolReturn",
    "check_parameter_order",
    "handler_signature",
    "is_async_handler",
    "infer_params_type",
    "infer_result_type",
    "is_params_class",
    "resolve_hints",
    "result_type_of",
]

P_contra = TypeVar("P_contra", contravariant=True)
R_co = TypeVar("R_co", covariant=True)
P = TypeVar("P")
R = TypeVar("R")

_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


ToolReturn: TypeAlias = Union[ToolResult[R], R, Awaitable[ToolResult[R] | R]]  # noqa: UP007 - a generic alias
"""What a handler returns: a ``ToolResult[R]`` or a plain ``R`` (a success), or an awaitable of either.

For a handler returning ``ToolResult[W]`` the type checker solves ``R`` as
``W``, not as the whole result (``tests/typing/`` pins this).
"""


class ToolHandler(Protocol[P_contra, R_co]):
    """``def handler(params: P, *, context: ToolContext) -> ToolResult[R] | R``, or an ``async def`` one."""

    def __call__(
        self, params: P_contra, /, *, context: ToolContext
    ) -> ToolResult[R_co] | R_co | Awaitable[ToolResult[R_co] | R_co]: ...


@dataclasses.dataclass(frozen=True, slots=True)
class NoParams:
    """Params of a tool that takes no arguments: the model sends ``{}``."""


def is_params_class(tp: object) -> bool:
    """Params must be a dataclass, an attrs class or a pydantic model so they have a schema."""
    if not isinstance(tp, type):
        return False
    cls: type[object] = tp
    return dataclasses.is_dataclass(cls) or attrs.has(cls) or is_pydantic_model(cls)


def _annotated_function(handler: Callable[..., object]) -> Callable[..., object]:
    """The plain function whose annotations describe ``handler``'s parameters."""
    while isinstance(handler, functools.partial):
        handler = handler.func  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    if inspect.ismethod(handler):
        return handler.__func__
    if inspect.isfunction(handler):
        return handler
    return type(handler).__call__  # a callable object


def resolve_hints(
    handler: Callable[..., object], names: tuple[str, ...], *, include_extras: bool = False
) -> dict[str, Any]:
    """Resolve only the annotations we need.

    Resolving one name at a time means a handler whose *other* annotations
    refer to names imported under ``TYPE_CHECKING`` still works.
    """
    function = _annotated_function(handler)
    raw: dict[str, object] = getattr(function, "__annotations__", {})
    wanted = {name: raw[name] for name in names if name in raw}
    globalns: dict[str, Any] = getattr(function, "__globals__", {})
    holder = types.SimpleNamespace(__annotations__=wanted)
    return typing.get_type_hints(holder, globalns=globalns, include_extras=include_extras)


def handler_signature(handler: Callable[..., object], what: str) -> inspect.Signature:
    """``inspect.signature(handler)``, or a :class:`PromptValidationError` naming the tool."""
    try:
        return inspect.signature(handler)
    except (TypeError, ValueError) as exc:
        raise PromptValidationError(f"{what}: cannot read the handler's signature ({exc})") from exc


def _is_the_context(parameter: inspect.Parameter) -> bool:
    """True for a first parameter that is (or would collide with) the context.

    Annotated ``ToolContext`` it is the context; named ``context`` it would also
    receive the ``context=`` keyword, unless it is positional-only and typed.
    """
    annotation: object = parameter.annotation
    if isinstance(annotation, str):  # postponed annotations: the name is all there is
        if annotation.rpartition(".")[2] == "ToolContext":
            return True
    elif annotation is ToolContext:
        return True
    if parameter.name != "context":
        return False
    return parameter.kind is not inspect.Parameter.POSITIONAL_ONLY or annotation is inspect.Parameter.empty


def check_parameter_order(signature: inspect.Signature, what: str) -> None:
    """Refuse ``handler(context, params)``: the params come first and the context is keyword-only."""
    positional = [p for p in signature.parameters.values() if p.kind in _POSITIONAL]
    if positional and _is_the_context(positional[0]):
        raise PromptValidationError(
            f"{what}: the handler's first parameter {positional[0].name!r} is the context, so its "
            "parameters look swapped; write handler(params, *, context) with the params first and "
            "the context keyword-only"
        )


def infer_params_type(handler: Callable[..., object], what: str) -> type[Any]:
    """The params type read from the annotation of ``handler``'s first positional parameter.

    ``what`` names the tool in error messages.
    """
    signature = handler_signature(handler, what)
    check_parameter_order(signature, what)
    positional = [p for p in signature.parameters.values() if p.kind in _POSITIONAL]
    if not positional:
        raise PromptValidationError(
            f"{what}: the handler must take the params as its first positional parameter: "
            "handler(params, *, context)"
        )
    first = positional[0].name
    hints = _resolved(handler, (first,), what, instead="params_type=")
    if first not in hints:
        raise PromptValidationError(
            f"{what}: the handler's parameter {first!r} has no annotation; "
            "annotate it with the params dataclass or pass params_type="
        )
    params_type: type[Any] = hints[first]
    return params_type


def infer_result_type(handler: Callable[..., object], what: str) -> type[Any] | None:
    """The ``R`` of the handler's ``-> ToolResult[R]``; ``None`` for no value (or no annotation)."""
    hints = _resolved(handler, ("return",), what, instead="result_type=")
    return result_type_of(hints.get("return"))


def _resolved(
    handler: Callable[..., object], names: tuple[str, ...], what: str, *, instead: str
) -> dict[str, Any]:
    try:
        return resolve_hints(handler, names)
    except Exception as exc:  # unresolvable forward references and the like
        raise PromptValidationError(
            f"{what}: cannot resolve the handler's annotations ({type(exc).__name__}: {exc}); "
            f"pass {instead} explicitly"
        ) from exc


def result_type_of(annotation: object) -> type[Any] | None:
    """``R`` of a ``-> ToolResult[R]`` or a plain ``-> R`` annotation (``None`` when it carries no value).

    Whether JSON can express ``R`` is checked where the ``Tool`` is built.
    """
    if annotation is None or annotation is ToolResult:
        return None
    inner = _without_tool_result(annotation)
    if typing.get_origin(inner) in (Union, types.UnionType):  # ``-> ToolResult[W] | W``: W
        members: list[object] = list(dict.fromkeys(_without_tool_result(m) for m in typing.get_args(inner)))
        inner = members[0] if len(members) == 1 else Union[tuple(members)]  # noqa: UP007 - built at runtime
    if inner is type(None) or inner is typing.Never or inner is typing.NoReturn:
        return None
    return typing.cast("type[Any]", inner)  # an annotation, not always a class


def _without_tool_result(annotation: object) -> object:
    """``W`` for ``ToolResult[W]``, ``None`` for a bare ``ToolResult``, anything else as it is."""
    if annotation is ToolResult:
        return type(None)
    if typing.get_origin(annotation) is ToolResult:
        (inner,) = typing.get_args(annotation)
        return inner
    return annotation


@attrs.frozen
class ContextFreeHandler(Generic[P, R]):
    """Lets ``@tool`` take ``handler(params)`` with no context: the context is simply not passed."""

    function: Callable[[P], ToolReturn[R]]

    def __call__(self, params: P, /, *, context: ToolContext) -> ToolReturn[R]:
        return self.function(params)


def is_async_handler(handler: object) -> bool:
    """Whether calling ``handler`` gives a coroutine: an ``async def``, also behind ``@tool``'s wrappers.

    A sync-looking callable that still returns an awaitable is handled by
    the dispatcher too; this only saves it a trip through a worker thread.
    """
    while True:
        if isinstance(handler, functools.partial):
            handler = handler.func  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
            continue
        inner = getattr(handler, "function", None) if attrs.has(type(handler)) else None
        if inner is not None:
            handler = inner
            continue
        break
    if inspect.iscoroutinefunction(handler):
        return True
    if inspect.isfunction(handler) or inspect.ismethod(handler):
        return False
    return inspect.iscoroutinefunction(type(handler).__call__)  # a callable object
