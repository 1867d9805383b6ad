"""One-line summaries of stored tool outputs, registrable per tool.

A summary is what a slim reference says about an old result ("read_file:
342 lines, 15420 bytes"), so it must be deterministic: the same output of
the same call always gives the same text. Each tool may register its own
function; every other tool gets :func:`default_summary`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

import attrs

from ...errors import ConfigurationError
from .preview import safe_text

__all__ = [
    "DEFAULT_SUMMARIES",
    "SUMMARY_MAX_CHARS",
    "SummaryFunction",
    "SummaryInput",
    "SummaryRegistry",
    "default_summary",
    "register_summary",
]

logger = logging.getLogger(__name__)

SUMMARY_MAX_CHARS = 200


@attrs.frozen(kw_only=True)
class SummaryInput:
    """Everything a summary function may look at: one tool call and its raw output."""

    tool_name: str
    arguments: str
    data: bytes = attrs.field(repr=lambda data: f"<{len(data)} bytes>")
    size_bytes: int
    lines: int
    tokens: int
    is_error: bool

    @property
    def text(self) -> str:
        """The output as printable text (invalid UTF-8 replaced)."""
        return safe_text(self.data)


SummaryFunction = Callable[[SummaryInput], str]
"""Must be deterministic and fast: it runs for every stored result of its tool."""


def default_summary(item: SummaryInput) -> str:
    """``<tool>: <N> lines, <B> bytes`` (``failed`` is added for an error result)."""
    state = " failed" if item.is_error else ""
    return f"{item.tool_name}{state}: {item.lines} lines, {item.size_bytes} bytes"


def _one_line(text: str) -> str:
    flat = " ".join(text.replace("\x00", " ").split())  # no NUL: PostgreSQL text cannot hold it
    return flat if len(flat) <= SUMMARY_MAX_CHARS else flat[: SUMMARY_MAX_CHARS - 3] + "..."


class SummaryRegistry:
    """Summary functions by tool name; thread-safe.

    A registered function that raises, or returns something other than
    non-empty text, never loses the result: the default summary is used
    and the problem is logged. Summaries are flattened to one line of at
    most :data:`SUMMARY_MAX_CHARS` characters.
    """

    def __init__(self) -> None:
        self._functions: dict[str, SummaryFunction] = {}
        self._lock = threading.Lock()

    def register(self, tool_name: str, function: SummaryFunction) -> None:
        """Use ``function`` for ``tool_name`` from now on (replacing any earlier one)."""
        if not isinstance(tool_name, str) or not tool_name:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigurationError(
                f"register_summary: tool_name must be a non-empty string, got {tool_name!r}"
            )
        if not callable(function):
            raise ConfigurationError(f"register_summary: the summary for {tool_name!r} is not callable")
        with self._lock:
            self._functions[tool_name] = function

    def unregister(self, tool_name: str) -> None:
        """Go back to the default summary for ``tool_name`` (no error if none was registered)."""
        with self._lock:
            self._functions.pop(tool_name, None)

    def function_for(self, tool_name: str) -> SummaryFunction | None:
        with self._lock:
            return self._functions.get(tool_name)

    def summarize(self, item: SummaryInput) -> str:
        """The summary of ``item``: its tool's function, else the default."""
        function = self.function_for(item.tool_name)
        if function is not None:
            try:
                text = function(item)
            except Exception as exc:
                logger.warning(
                    "summary function for %s raised; using the default", item.tool_name, exc_info=exc
                )
            else:
                if isinstance(text, str) and text.strip():  # pyright: ignore[reportUnnecessaryIsInstance]
                    return _one_line(text)
                logger.warning(
                    "summary function for %s returned %r, not text; using the default", item.tool_name, text
                )
        return _one_line(default_summary(item))


DEFAULT_SUMMARIES = SummaryRegistry()
"""The registry every output store uses unless given its own."""


def register_summary(tool_name: str, function: SummaryFunction) -> None:
    """Register ``function`` as the summary of ``tool_name`` in :data:`DEFAULT_SUMMARIES`."""
    DEFAULT_SUMMARIES.register(tool_name, function)
