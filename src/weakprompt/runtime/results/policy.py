"""When a tool result is too large to put in the model's context.

A result is *oversized* when it is larger than ``max_bytes`` or when its
tokens exceed what is left of the evaluation's token budget. The model then
sees the handle message instead (see :func:`handle_text`) and can ask for
what it needs with ``tool_output``. Nothing is cut blindly.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, TypeAlias

import attrs

from ...errors import ConfigurationError
from .extraction import DocumentStats, handle_message

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_PART_BYTES",
    "MIN_MAX_BYTES",
    "OversizeReason",
    "SizePolicy",
    "handle_text",
]

DEFAULT_MAX_BYTES = 12288
MIN_MAX_BYTES = 1024
"""Smallest cap allowed: the handle message itself (about 300 bytes) must always fit under it."""

DEFAULT_MAX_PART_BYTES = 5 * 1024 * 1024
"""Images and documents of one result shown to the model: 5 MiB, Anthropic's limit for one image."""

OversizeReason: TypeAlias = Literal["max_bytes", "token_budget"]


def _check_max_bytes(_: object, attribute: attrs.Attribute[int], value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < MIN_MAX_BYTES:  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ConfigurationError(
            f"SizePolicy.{attribute.name} must be an int >= {MIN_MAX_BYTES}, got {value!r}"
        )


@attrs.frozen(kw_only=True)
class SizePolicy:
    """The size limits for tool results put in context.

    ``max_bytes`` caps one result's text (UTF-8 bytes); with ``use_token_budget``
    a result whose tokens exceed the budget tracker's remaining tokens is
    oversized too, however few bytes it has. ``max_part_bytes`` caps the
    bytes of one result's images and documents, counted in order: a part
    past it is left out of the context and named in a placeholder.
    """

    max_bytes: int = attrs.field(default=DEFAULT_MAX_BYTES, validator=_check_max_bytes)
    use_token_budget: bool = True
    max_part_bytes: int = attrs.field(default=DEFAULT_MAX_PART_BYTES, validator=_check_max_bytes)

    def fitting_parts(self, sizes: Sequence[int]) -> int:
        """How many of a result's parts (of these byte sizes, in order) fit under ``max_part_bytes``."""
        total = 0
        for count, size in enumerate(sizes):
            total += size
            if total > self.max_part_bytes:
                return count
        return len(sizes)

    def oversize_reason(self, stats: DocumentStats, remaining_tokens: int | None) -> OversizeReason | None:
        """Why a result with ``stats`` may not go in context, or ``None`` when it may."""
        if stats.size_bytes > self.max_bytes:
            return "max_bytes"
        if self.use_token_budget and remaining_tokens is not None and stats.tokens > remaining_tokens:
            return "token_budget"
        return None

    def is_oversized(self, stats: DocumentStats, remaining_tokens: int | None) -> bool:
        return self.oversize_reason(stats, remaining_tokens) is not None


def handle_text(handle: str, stats: DocumentStats) -> str:
    """The exact message shown in place of an oversized result."""
    return handle_message(handle, stats.size_bytes, stats.lines, stats.tokens)
