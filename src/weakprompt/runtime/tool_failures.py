"""A tool handler that raises is a bug in the tool: it is reported where the developer looks.

The package's loggers hang under ``weakprompt``, which carries a
``NullHandler`` so that library chatter stays quiet. That would also hide a
broken tool: the model gets a failure text and works around it, and nobody
learns the tool is broken. So each raising handler is logged once, at
WARNING, on the logger ``weakprompt.tools.broken``, with the tool's name, the
exception and a short traceback (its last frames, inside the tool). When the
application has configured logging, the record goes to its handlers like any
other (and its levels decide). When it has not, a fallback handler writes it
to standard error through :data:`logging.lastResort`, as Python does for an
unconfigured program.
"""

from __future__ import annotations

import functools
import logging
import os
import traceback
from types import TracebackType

from ..safetext import describe_exception
from .redaction import Redactor, clip, redacted

__all__ = ["BROKEN_TOOL_LOGGER", "TRACEBACK_FRAMES", "report_broken_tool", "short_traceback"]

BROKEN_TOOL_LOGGER = "weakprompt.tools.broken"
"""The logger every raising tool handler is reported on."""

TRACEBACK_FRAMES = 3
"""How many of the innermost frames the report shows."""

_MAX_REPORT = 2000


class _WhenUnconfigured(logging.Handler):
    """Hands a record to ``logging.lastResort`` when no real handler would see it."""

    def emit(self, record: logging.LogRecord) -> None:
        fallback = logging.lastResort
        if fallback is None or _configured(logging.getLogger(record.name), self):
            return
        if record.levelno >= fallback.level:
            fallback.handle(record)


def _configured(logger: logging.Logger, fallback: logging.Handler) -> bool:
    """Whether a handler other than a ``NullHandler`` (or ``fallback``) is on ``logger``'s path."""
    current: logging.Logger | None = logger
    while current is not None:
        if any(h is not fallback and not isinstance(h, logging.NullHandler) for h in current.handlers):
            return True
        if not current.propagate:
            return False
        current = current.parent
    return False


_logger = logging.getLogger(BROKEN_TOOL_LOGGER)
_logger.addHandler(_WhenUnconfigured())


@functools.cache
def _machinery() -> tuple[str, ...]:
    """Where the machinery that ran a handler lives: this package, the event loop, the worker threads."""
    import asyncio  # loaded by then: a handler only raises inside a run
    import concurrent.futures

    return tuple(
        os.path.dirname(path) + os.sep for path in (__file__, asyncio.__file__, concurrent.futures.__file__)
    )


def short_traceback(exc: BaseException, frames: int = TRACEBACK_FRAMES) -> str:
    """The innermost ``frames`` frames of ``exc``'s traceback that are not the dispatcher's machinery."""
    tb: TracebackType | None = exc.__traceback__
    summary = [f for f in traceback.extract_tb(tb) if not f.filename.startswith(_machinery())]
    return "".join(traceback.format_list(summary[-frames:])).rstrip("\n")


def report_broken_tool(tool_name: str, exc: BaseException, *, redact: Redactor) -> None:
    """Log that ``tool_name``'s handler raised ``exc`` (one WARNING record, text scrubbed by ``redact``)."""
    where = short_traceback(exc)
    text = clip(redacted(describe_exception(exc), redact), _MAX_REPORT)
    _logger.warning(
        "weakprompt: tool %r raised %s; the model was told it failed, its state changes were undone%s",
        tool_name,
        text,
        f"\n{redacted(where, redact)}" if where else "",
    )
