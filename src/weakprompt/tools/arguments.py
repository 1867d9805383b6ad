"""Tools whose handler takes ordinary typed parameters instead of one params object.

``def city_cost(city: str, nights: int = 1, *, context: ToolContext)`` is turned
into the usual shape by ``@tool``: its parameters become the fields of a
generated frozen dataclass (a :class:`ToolArguments` subclass), so the schema,
the validation and the dispatcher are exactly those of any other tool, and a
small callable unpacks that object into the function's keyword arguments.
Descriptions come from the docstring (Google, NumPy or reST style), read with
``docstring-parser``, which is imported only when such a tool is built.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import inspect
import typing
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Annotated, Any, Generic, TypeVar

import attrs

from ..errors import PromptValidationError
from ..serde import Meta, SerdeError, parse
from ..serde.expressible import unexpressible
from .context import ToolContext
from .example import ToolExample
from .handler import ToolReturn, handler_signature, resolve_hints, result_type_of

if TYPE_CHECKING:
    from docstring_parser import Docstring

__all__ = ["ArgumentsHandler", "PlainParts", "ToolArguments", "plain_parts"]

R = TypeVar("R")

_CONTEXT = "context"
_REFUSED_KINDS = {
    inspect.Parameter.VAR_POSITIONAL: "*args",
    inspect.Parameter.VAR_KEYWORD: "**kwargs",
}


@dataclasses.dataclass(frozen=True, kw_only=True)
class ToolArguments:
    """Base of the params classes ``@tool`` generates from a handler's own parameters.

    A tool built that way is a ``Tool[ToolArguments, R]`` for the type checker;
    at runtime its ``params_type`` is the generated subclass, with one field per
    parameter (``context`` excluded).
    """


@attrs.frozen
class ArgumentsHandler(Generic[R]):
    """Calls ``function`` with the fields of a generated params object as its arguments."""

    function: Callable[..., ToolReturn[R]]
    positional: tuple[str, ...]
    """Positional-only parameters, passed in order."""
    keywords: tuple[str, ...]
    takes_context: bool

    def __call__(self, params: ToolArguments, /, *, context: ToolContext) -> ToolReturn[R]:
        args = [getattr(params, name) for name in self.positional]
        kwargs: dict[str, object] = {name: getattr(params, name) for name in self.keywords}
        if self.takes_context:
            kwargs[_CONTEXT] = context
        return self.function(*args, **kwargs)


@attrs.frozen
class PlainParts(Generic[R]):
    """What ``@tool`` needs to build a :class:`Tool` from a plain-parameter function."""

    params_type: type[ToolArguments]
    result_type: type[R] | None
    handler: ArgumentsHandler[R]
    summary: str | None
    """The docstring's first line: the tool description unless one is given."""


def plain_parts(function: Callable[..., ToolReturn[R]], what: str) -> PlainParts[R]:
    """Read ``function``'s signature and docstring into a generated params class and a handler."""
    signature = handler_signature(function, what)
    parameters = [p for p in signature.parameters.values() if p.name != _CONTEXT]
    context = signature.parameters.get(_CONTEXT)
    if context is not None and context.kind is not inspect.Parameter.KEYWORD_ONLY:
        raise PromptValidationError(
            f"{what}: make 'context' keyword-only (put it after '*'): the model's arguments "
            "are passed by name and the context is not one of them"
        )
    for parameter in parameters:
        refused = _REFUSED_KINDS.get(parameter.kind)
        if refused is not None:
            raise PromptValidationError(
                f"{what}: the handler takes {refused} ({parameter.name!r}); a tool's parameters "
                "need a schema, so list each one with its type"
            )
    hints = _hints(function, tuple(p.name for p in parameters), what)
    docs = _docstring(function)
    descriptions = _descriptions(docs, {p.name for p in parameters}, what)
    fields = [_field(p, hints, descriptions.get(p.name), what) for p in parameters]
    params_type = _make_class(function, fields, what)
    handler = ArgumentsHandler(
        function=function,
        positional=tuple(p.name for p in parameters if p.kind is inspect.Parameter.POSITIONAL_ONLY),
        keywords=tuple(p.name for p in parameters if p.kind is not inspect.Parameter.POSITIONAL_ONLY),
        takes_context=context is not None,
    )
    result_type: type[R] | None = result_type_of(hints.get("return"))
    summary = docs.short_description if docs is not None else None
    return PlainParts(params_type=params_type, result_type=result_type, handler=handler, summary=summary)


def plain_examples(
    examples: tuple[ToolExample[Any, Any], ...], params_type: type[ToolArguments], what: str
) -> tuple[ToolExample[Any, Any], ...]:
    """Examples whose ``input`` is a mapping get it parsed into the generated params class.

    The class does not exist before the decorator runs, so a mapping of the
    arguments is the way to write an example for such a tool.
    """
    converted: list[ToolExample[Any, Any]] = []
    for index, example in enumerate(examples):
        raw: object = example.input
        if not isinstance(raw, Mapping):
            converted.append(example)
            continue
        try:
            value = parse(params_type, typing.cast(Mapping[str, object], raw))
        except SerdeError as exc:
            raise PromptValidationError(
                f"{what}: example {index}: input does not match the handler's parameters: {exc}"
            ) from exc
        converted.append(attrs.evolve(example, input=value))
    return tuple(converted)


def _hints(function: Callable[..., object], names: tuple[str, ...], what: str) -> dict[str, Any]:
    try:
        hints = resolve_hints(function, (*names, "return"), include_extras=True)
    except Exception as exc:  # unresolvable forward references and the like
        raise PromptValidationError(
            f"{what}: cannot resolve the handler's annotations ({type(exc).__name__}: {exc})"
        ) from exc
    for name in names:
        if name not in hints:
            raise PromptValidationError(
                f"{what}: the handler's parameter {name!r} has no annotation; annotate it with its "
                "type (or with a params dataclass, as the only parameter before the context)"
            )
        if _is_context_type(hints[name]):
            raise PromptValidationError(
                f"{what}: the parameter {name!r} is a ToolContext; the context must be the "
                "keyword-only parameter named 'context'"
            )
    return hints


def _is_context_type(annotation: object) -> bool:
    if typing.get_origin(annotation) is Annotated:
        annotation = typing.get_args(annotation)[0]
    return annotation is ToolContext


def _docstring(function: Callable[..., object]) -> Docstring | None:
    text = inspect.getdoc(function)
    if not text:
        return None
    import docstring_parser  # only plain-parameter tools pay for it

    return docstring_parser.parse(text)


def _descriptions(docs: Docstring | None, names: set[str], what: str) -> dict[str, str]:
    if docs is None:
        return {}
    found: dict[str, str] = {}
    for param in docs.params:
        if param.arg_name == _CONTEXT:
            continue
        if param.arg_name not in names:
            raise PromptValidationError(
                f"{what}: the docstring describes a parameter {param.arg_name!r} the handler does not "
                f"take (parameters: {', '.join(sorted(names)) or 'none'})"
            )
        if param.description:
            found[param.arg_name] = " ".join(param.description.split())
    return found


def _field(
    parameter: inspect.Parameter, hints: Mapping[str, Any], description: str | None, what: str
) -> tuple[str, Any, dataclasses.Field[Any]]:
    annotation = hints[parameter.name]
    metadata: dict[str, object] = {}
    if description is not None and not _has_own_description(annotation):
        metadata["description"] = description
    default: object = parameter.default
    spec: Any
    if default is inspect.Parameter.empty:
        spec = dataclasses.field(metadata=metadata)
    elif type(default).__hash__ is None:  # mutable: each call gets its own copy
        spec = dataclasses.field(default_factory=functools.partial(copy.deepcopy, default), metadata=metadata)
    else:
        spec = dataclasses.field(default=default, metadata=metadata)
    return parameter.name, annotation, spec


def _has_own_description(annotation: object) -> bool:
    """An ``Annotated[..., Meta(description=...)]`` says it itself; the docstring does not override it."""
    if typing.get_origin(annotation) is not Annotated:
        return False
    return any(isinstance(extra, Meta) and extra.description for extra in typing.get_args(annotation)[1:])


def _make_class(
    function: Callable[..., object], fields: list[tuple[str, Any, dataclasses.Field[Any]]], what: str
) -> type[ToolArguments]:
    base_name = getattr(function, "__name__", "tool")
    name = "".join(part.capitalize() for part in base_name.split("_")) + "Arguments"
    cls = dataclasses.make_dataclass(name, fields, bases=(ToolArguments,), frozen=True, kw_only=True)
    cls.__module__ = getattr(function, "__module__", cls.__module__)
    cls.__qualname__ = f"{getattr(function, '__qualname__', base_name)}.<arguments>"
    problem = unexpressible(cls)
    if problem is not None:  # its fields are the handler's parameters
        raise PromptValidationError(problem.describe(what, "params"))
    return typing.cast(type[ToolArguments], cls)
