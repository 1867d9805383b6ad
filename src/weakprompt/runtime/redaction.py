"""How a handler's exception is turned into text the model may read.

The model needs to know *what* went wrong to correct itself, but must never
see a traceback (file paths, source lines, secrets in locals). The hook is
replaceable so deployments can scrub further (e.g. remove tokens or paths).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeAlias

__all__ = ["MAX_ERROR_TEXT", "Redactor", "default_redact"]

Redactor: TypeAlias = Callable[[BaseException], str]
"""Maps an exception raised by a handler to the text shown to the model."""

MAX_ERROR_TEXT = 2000
"""Longer error texts are cut: a huge message would only waste context."""


def default_redact(exc: BaseException) -> str:
    """``"<ExceptionType>: <message>"``, cut to :data:`MAX_ERROR_TEXT` characters."""
    detail = str(exc)
    text = f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__
    if len(text) > MAX_ERROR_TEXT:
        text = text[: MAX_ERROR_TEXT - 15] + "... (truncated)"
    return text
