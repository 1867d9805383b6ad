"""What a tool hands back: a message for the model plus an optional typed value, and any media.

The message and the value are separate because the orchestrator (reducers,
events, stores) wants the typed value while the model sees text. Images and
documents (a screenshot, a chart, a PDF) travel in ``parts``, after the text.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Generic, Never, Protocol, TypeVar, runtime_checkable

import attrs

from ..parts import DocumentPart, ImagePart
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
    ``parts``: images and documents the model is shown after the text
    (``ToolResult.ok(None, message="captured", parts=[ImagePart(...)])``);
    a handler may also return one :class:`~weakprompt.parts.ImagePart` or
    :class:`~weakprompt.parts.DocumentPart` alone.
    """

    message: str
    value: R_co | None = None
    success: bool = True
    exclude_value_from_context: bool = False
    parts: tuple[ImagePart | DocumentPart, ...] = attrs.field(default=(), converter=tuple)

    @classmethod
    def ok(
        cls, value: T, *, message: str = "", parts: Iterable[ImagePart | DocumentPart] = ()
    ) -> ToolResult[T]:
        """A successful result carrying ``value`` (and ``parts``, shown to the model after the text)."""
        return ToolResult(message=message, value=value, parts=tuple(parts))

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
