"""A tool handler that raises is a bug in the tool: it is reported where the developer looks.

The package's loggers hang under ``weakprompt``, which carries a
``NullHandler`` so that library chatter stays quiet. That would also hide a
broken tool: the model gets a failure text and works around it, and nobody
learns the tool is broken. So each raising handler is logged once, at
WARNING, on the logger ``weakprompt.tools.broken``, with the tool's name, the
exception and a short traceback (its last frames in the tool's own code: an
error raised inside ``re`` or another library points at the line that called
it). Inside :func:`once_per_defect` (``check_tool`` uses it) a defect already
reported is not reported again. When the
application has configured logging, the record goes to its handlers like any
other (and its levels decide). When it has not, a fallback handler writes it
to standard error through :data:`logging.lastResort`, as Python does for an
unconfigured program.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import logging
import os
import sysconfig
import traceback
from collections.abc import Generator

from ..safetext import describe_exception
from .redaction import Redactor, clip, redacted

__all__ = [
    "BROKEN_TOOL_LOGGER",
    "TRACEBACK_FRAMES",
    "once_per_defect",
    "report_broken_tool",
    "short_traceback",
]

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


@functools.cache
def _libraries() -> tuple[str, ...]:
    """Where Python's own modules and installed packages live: not the line a tool's author wrote."""
    paths = sysconfig.get_paths()
    found = {paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib") if key in paths}
    return tuple(os.path.join(path, "") for path in sorted(found))


def _user_frames(exc: BaseException) -> list[traceback.FrameSummary]:
    """``exc``'s frames without the dispatcher's machinery, ending at the innermost one of the tool's code.

    An error raised deep inside a library (``re``, ``json``) is reported at
    the line that called it, since that is the line the author can change.
    When every frame is library code the frames are kept as they are.
    """
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if not f.filename.startswith(_machinery())]
    end = len(frames)
    while end > 0 and frames[end - 1].filename.startswith(_libraries()):
        end -= 1
    return frames[:end] if end else frames


def short_traceback(exc: BaseException, frames: int = TRACEBACK_FRAMES) -> str:
    """The innermost ``frames`` frames of ``exc``'s traceback in the tool's code, not the machinery's."""
    return "".join(traceback.format_list(_user_frames(exc)[-frames:])).rstrip("\n")


_REPORTED: contextvars.ContextVar[set[tuple[str, ...]] | None] = contextvars.ContextVar(
    "weakprompt_reported_defects", default=None
)


@contextlib.contextmanager
def once_per_defect() -> Generator[None]:
    """Within this block, a broken tool is logged once per distinct defect rather than once per call.

    ``check_tool`` runs a handler on many generated arguments; one bug that
    fails them all is one warning. A defect is the tool, the exception type
    and the line of the tool's code it came from.
    """
    token = _REPORTED.set(set())
    try:
        yield
    finally:
        _REPORTED.reset(token)


def _first_report(tool_name: str, exc: BaseException) -> bool:
    seen = _REPORTED.get()
    if seen is None:
        return True
    frames = _user_frames(exc)
    where = (frames[-1].filename, str(frames[-1].lineno)) if frames else ("", "")
    key = (tool_name, type(exc).__module__, type(exc).__qualname__, *where)
    if key in seen:
        return False
    seen.add(key)
    return True


def report_broken_tool(tool_name: str, exc: BaseException, *, redact: Redactor) -> None:
    """Log that ``tool_name``'s handler raised ``exc`` (one WARNING record, text scrubbed by ``redact``)."""
    if not _first_report(tool_name, exc):
        return
    where = short_traceback(exc)
    text = clip(redacted(describe_exception(exc), redact), _MAX_REPORT)
    _logger.warning(
        "weakprompt: tool %r raised %s; the model was told it failed, its state changes were undone%s",
        tool_name,
        text,
        f"\n{redacted(where, redact)}" if where else "",
    )
