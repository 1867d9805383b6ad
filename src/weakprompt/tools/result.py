"""What a tool hands back: a message for the model plus an optional typed value.

The message and the value are separate because the orchestrator (reducers,
events, stores) wants the typed value while the model only ever sees text.
"""

from __future__ import annotations

import json
from typing import Generic, Never, Protocol, TypeVar, runtime_checkable

import attrs

from ..serde import dump

__all__ = ["RenderableResult", "ToolResult"]

R_co = TypeVar("R_co", covariant=True)
T = TypeVar("T")


@runtime_checkable
class RenderableResult(Protocol):
    """A result value that knows how it should look to the model."""

    def render(self) -> str: ...


@attrs.frozen
class ToolResult(Generic[R_co]):
    """Outcome of one tool call.

    ``success=False`` marks a failure the model should read about and react
    to; it never aborts the evaluation. ``exclude_value_from_context`` keeps
    the value for the orchestrator while the model sees only ``message``.
    """

    message: str
    value: R_co | None = None
    success: bool = True
    exclude_value_from_context: bool = False

    @classmethod
    def ok(cls, value: T, *, message: str = "") -> ToolResult[T]:
        """A successful result carrying ``value``."""
        return ToolResult(message=message, value=value)

    @classmethod
    def error(cls, message: str) -> ToolResult[Never]:
        """A failed result: ``message`` tells the model what went wrong."""
        return ToolResult(message=message, value=None, success=False)

    def render(self) -> str:
        """The text the model sees for this result.

        A value that defines ``render()`` speaks for itself; any other value
        becomes compact JSON. The message is used when there is no value to
        show (none given, or excluded from the context).
        """
        value = self.value
        if value is None or self.exclude_value_from_context:
            return self.message
        if isinstance(value, RenderableResult):
            return value.render()
        # NaN and the infinities are not JSON: refused rather than written as bare tokens
        return json.dumps(dump(value), ensure_ascii=False, separators=(",", ":"), allow_nan=False)
