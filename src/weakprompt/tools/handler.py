"""The handler calling convention, and reading a handler's annotations.

A handler is ``handler(params, *, context) -> ToolResult[R]``. Its params and
result types are read from its annotations so a tool is declared once, as a
plain typed function, without subscripting ``Tool[P, R]`` at runtime.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import types
import typing
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import attrs

from ..errors import PromptValidationError
from .result import ToolResult

if TYPE_CHECKING:
    from .context import ToolContext

__all__ = ["NoParams", "ToolHandler", "infer_types", "is_params_class"]

P_contra = TypeVar("P_contra", contravariant=True)
R_co = TypeVar("R_co", covariant=True)


class ToolHandler(Protocol[P_contra, R_co]):
    """``def handler(params: P, *, context: ToolContext) -> ToolResult[R]``."""

    def __call__(self, params: P_contra, /, *, context: ToolContext) -> ToolResult[R_co]: ...


@dataclasses.dataclass(frozen=True, slots=True)
class NoParams:
    """Params of a tool that takes no arguments: the model sends ``{}``."""


def is_params_class(tp: object) -> bool:
    """Params must be a dataclass or attrs class so they have a schema."""
    if not isinstance(tp, type):
        return False
    cls: type[object] = tp
    return dataclasses.is_dataclass(cls) or attrs.has(cls)


def _annotated_function(handler: Callable[..., object]) -> Callable[..., object]:
    """The plain function whose annotations describe ``handler``'s parameters."""
    while isinstance(handler, functools.partial):
        handler = handler.func  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    if inspect.ismethod(handler):
        return handler.__func__
    if inspect.isfunction(handler):
        return handler
    return type(handler).__call__  # a callable object


def _resolve_hints(function: Callable[..., object], names: tuple[str, ...]) -> dict[str, Any]:
    """Resolve only the annotations we need.

    Resolving one name at a time means a handler whose *other* annotations
    refer to names imported under ``TYPE_CHECKING`` still works.
    """
    raw: dict[str, object] = getattr(function, "__annotations__", {})
    wanted = {name: raw[name] for name in names if name in raw}
    globalns: dict[str, Any] = getattr(function, "__globals__", {})
    holder = types.SimpleNamespace(__annotations__=wanted)
    return typing.get_type_hints(holder, globalns=globalns)


def infer_types(handler: Callable[..., object], what: str) -> tuple[type[Any], type[Any] | None]:
    """Return ``(params_type, result_type)`` read from ``handler``'s annotations.

    ``what`` names the tool in error messages. ``result_type`` is ``None``
    when the handler returns ``ToolResult[None]`` or a bare ``ToolResult``.
    """
    try:
        signature = inspect.signature(handler)
    except (TypeError, ValueError) as exc:
        raise PromptValidationError(f"{what}: cannot read the handler's signature ({exc})") from exc
    positional = [
        p
        for p in signature.parameters.values()
        if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    ]
    if not positional:
        raise PromptValidationError(
            f"{what}: the handler must take the params as its first positional parameter: "
            "handler(params, *, context)"
        )
    first = positional[0].name
    try:
        hints = _resolve_hints(_annotated_function(handler), (first, "return"))
    except Exception as exc:  # unresolvable forward references and the like
        raise PromptValidationError(
            f"{what}: cannot resolve the handler's annotations ({type(exc).__name__}: {exc}); "
            "pass params_type= and result_type= explicitly"
        ) from exc
    if first not in hints:
        raise PromptValidationError(
            f"{what}: the handler's parameter {first!r} has no annotation; "
            "annotate it with the params dataclass or pass params_type="
        )
    params_type: type[Any] = hints[first]
    return params_type, _result_type(hints.get("return"), what)


def _result_type(annotation: object, what: str) -> type[Any] | None:
    if annotation is None or annotation is ToolResult:
        return None
    if typing.get_origin(annotation) is not ToolResult:
        raise PromptValidationError(
            f"{what}: the handler must be annotated to return ToolResult[...], got {annotation!r}"
        )
    (inner,) = typing.get_args(annotation)
    if inner is type(None) or inner is typing.Never or inner is typing.NoReturn:
        return None
    result_type: type[Any] = inner
    return result_type
