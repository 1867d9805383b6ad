"""``@tool``: a :class:`Tool` from a typed function, in either handler form.

* The params form: ``def lookup(params: Lookup, *, context: ToolContext) -> ToolResult[R]``
  where ``Lookup`` is a dataclass or attrs class (``Tool[Lookup, R]``).
* The plain form: ``def city_cost(city: str, nights: int = 1, *, context: ToolContext)``
  (``Tool[ToolArguments, R]``; see :mod:`.arguments`).

The form is chosen by the first parameter: annotated with a dataclass or attrs
class, it is the params object; anything else means the parameters are the
arguments. ``context`` is optional in both: a handler that does not declare
it is called without it. The overloads below encode the same rule for the
type checker, so pyright and the runtime agree on the tool's type.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, overload

import attrs

from ..errors import PromptValidationError
from .approval import ApprovalPolicy
from .arguments import ToolArguments, plain_examples, plain_parts
from .definition import Tool
from .example import ToolExample
from .handler import (
    ContextFreeHandler,
    ToolHandler,
    ToolReturn,
    check_parameter_order,
    handler_signature,
    infer_params_type,
    infer_result_type,
    is_params_class,
    resolve_hints,
)

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

__all__ = ["ToolDecorator", "tool"]

# Pyright counts attrs classes and pydantic models (both made through a dataclass_transform) as
# dataclass instances too, so this bound is "a params class" (tests/typing/user_pydantic.py).
# The overloads overlap on purpose: the first that matches wins, as the runtime rule does.
PC = TypeVar("PC", bound="DataclassInstance")
R = TypeVar("R")

_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


@attrs.frozen
class ToolDecorator:
    """What ``tool(name=..., ...)`` returns: apply it to the handler function."""

    name: str | None = None
    description: str | None = None
    examples: tuple[ToolExample[Any, Any], ...] = ()
    accepts_overrides: bool = True
    sequential: bool = False
    requires_approval: ApprovalPolicy = False
    idempotent: bool = False
    required: bool = False

    @overload
    def __call__(self, handler: ToolHandler[PC, R], /) -> Tool[PC, R]: ...

    @overload
    def __call__(self, handler: Callable[[PC], ToolReturn[R]], /) -> Tool[PC, R]: ...  # pyright: ignore[reportOverlappingOverload]

    @overload
    def __call__(self, handler: Callable[..., ToolReturn[R]], /) -> Tool[ToolArguments, R]: ...

    def __call__(self, handler: Callable[..., ToolReturn[Any]], /) -> Tool[Any, Any]:
        tool_name = self.name if self.name is not None else getattr(handler, "__name__", "")
        what = f"tool {tool_name!r}"
        signature = handler_signature(handler, what)
        check_parameter_order(signature, what)
        if _takes_params_object(handler, signature, what):
            return self._params_form(handler, tool_name, signature, what)
        return self._plain_form(handler, tool_name, what)

    def _params_form(
        self, handler: Callable[..., ToolReturn[Any]], tool_name: str, signature: inspect.Signature, what: str
    ) -> Tool[Any, Any]:
        description = self._description(_first_doc_line(handler), tool_name)
        if _accepts_context(signature):
            return Tool(
                name=tool_name,
                description=description,
                handler=handler,
                examples=self.examples,
                accepts_overrides=self.accepts_overrides,
                sequential=self.sequential,
                requires_approval=self.requires_approval,
                idempotent=self.idempotent,
                required=self.required,
            )
        return Tool(
            name=tool_name,
            description=description,
            handler=ContextFreeHandler(handler),
            params_type=infer_params_type(handler, what),
            result_type=infer_result_type(handler, what),
            examples=self.examples,
            accepts_overrides=self.accepts_overrides,
            sequential=self.sequential,
            requires_approval=self.requires_approval,
            idempotent=self.idempotent,
            required=self.required,
        )

    def _plain_form(
        self, handler: Callable[..., ToolReturn[Any]], tool_name: str, what: str
    ) -> Tool[Any, Any]:
        parts = plain_parts(handler, what)
        return Tool(
            name=tool_name,
            description=self._description(parts.summary, tool_name),
            handler=parts.handler,
            params_type=parts.params_type,
            result_type=parts.result_type,
            examples=plain_examples(self.examples, parts.params_type, what),
            accepts_overrides=self.accepts_overrides,
            sequential=self.sequential,
            requires_approval=self.requires_approval,
            idempotent=self.idempotent,
            required=self.required,
        )

    def _description(self, from_docstring: str | None, tool_name: str) -> str:
        if self.description is not None:
            return self.description
        if from_docstring is None:
            raise PromptValidationError(
                f"tool {tool_name!r}: give description= or a docstring to describe it to the model"
            )
        return from_docstring


def _takes_params_object(handler: Callable[..., object], signature: inspect.Signature, what: str) -> bool:
    """The params form: the first parameter is annotated with a dataclass or attrs class."""
    positional = [p for p in signature.parameters.values() if p.kind in _POSITIONAL]
    if not positional:
        return False
    try:
        hint = resolve_hints(handler, (positional[0].name,)).get(positional[0].name)
    except Exception as exc:  # unresolvable forward references and the like
        raise PromptValidationError(
            f"{what}: cannot resolve the annotation of the handler's parameter {positional[0].name!r} "
            f"({type(exc).__name__}: {exc})"
        ) from exc
    return is_params_class(hint)


def _accepts_context(signature: inspect.Signature) -> bool:
    return "context" in signature.parameters or any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in signature.parameters.values()
    )


def _first_doc_line(handler: Callable[..., object]) -> str | None:
    doc = inspect.getdoc(handler)
    if not doc:
        return None
    return doc.strip().splitlines()[0].strip()


@overload
def tool(handler: ToolHandler[PC, R], /) -> Tool[PC, R]: ...


@overload
def tool(handler: Callable[[PC], ToolReturn[R]], /) -> Tool[PC, R]: ...  # pyright: ignore[reportOverlappingOverload]


@overload
def tool(handler: Callable[..., ToolReturn[R]], /) -> Tool[ToolArguments, R]: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    examples: tuple[ToolExample[Any, Any], ...] = (),
    accepts_overrides: bool = True,
    sequential: bool = False,
    requires_approval: ApprovalPolicy = False,
    idempotent: bool = False,
    required: bool = False,
) -> ToolDecorator: ...


def tool(
    handler: Callable[..., ToolReturn[Any]] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    examples: tuple[ToolExample[Any, Any], ...] = (),
    accepts_overrides: bool = True,
    sequential: bool = False,
    requires_approval: ApprovalPolicy = False,
    idempotent: bool = False,
    required: bool = False,
) -> Tool[Any, Any] | ToolDecorator:
    """Turn a typed handler function into a :class:`Tool`.

    The name defaults to the function's name and the description to the
    first line of its docstring. Usable bare (``@tool``) or with arguments.
    The handler takes either one params object (a dataclass or attrs class)
    or ordinary typed parameters; see the module docstring. An ``async def``
    handler is awaited. ``sequential=True`` keeps the tool out of concurrent
    batches (see ``specs/TOOLS.md``, "Concurrency"). ``requires_approval``
    and ``idempotent`` are described in ``specs/APPROVAL.md``; ``required``
    (the run depends on the tool) in ``specs/GUARDRAILS.md``, "A run's verdict".
    """
    decorator = ToolDecorator(
        name=name,
        description=description,
        examples=examples,
        accepts_overrides=accepts_overrides,
        sequential=sequential,
        requires_approval=requires_approval,
        idempotent=idempotent,
        required=required,
    )
    if handler is not None:
        return decorator(handler)
    return decorator
