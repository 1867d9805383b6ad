"""The read-grep sub-agent's only tools: ``read`` and ``grep`` over one stored output.

They see the output's lines and nothing else: no filesystem, no other
handle, no store. Every mistake the sub-model can make (another handle, an
offset past the end, a bad pattern, a pattern that runs too long) comes back
as a failed tool result it can read and correct.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ....tools import AnyTool, Tool, ToolContext, ToolResult
from .config import ExtractionConfig
from .regex_guard import LineHit, PatternError, SearchFailed, SearchTimeout, search_lines
from .source import ExtractionSource, split_lines

__all__ = ["GrepParams", "ReadParams", "StoredOutputView", "read_grep_tools"]

_DEFAULT_READ_LIMIT = 100


@dataclass(frozen=True)
class ReadParams:
    """Which lines of the stored output to show."""

    handle: str = field(metadata={"description": "handle of the stored output, exactly as given"})
    offset: int = field(default=1, metadata={"description": "number of the first line to show (from 1)"})
    limit: int = field(default=_DEFAULT_READ_LIMIT, metadata={"description": "how many lines to show"})


@dataclass(frozen=True)
class GrepParams:
    """What to search the stored output for."""

    handle: str = field(metadata={"description": "handle of the stored output, exactly as given"})
    pattern: str = field(metadata={"description": "Python regular expression searched in each line"})
    context: int = field(default=0, metadata={"description": "lines to show before and after each match"})


def _clip(text: str, start: int, width: int) -> str:
    """``width`` characters of ``text`` from ``start``, saying what was left out on each side."""
    if len(text) <= width:
        return text
    start = max(0, min(start, len(text) - width))
    end = start + width
    before = f"[... {start} characters] " if start else ""
    after = f" [... {len(text) - end} more characters]" if end < len(text) else ""
    return f"{before}{text[start:end]}{after}"


class _Reply:
    """Lines of a tool reply, kept under a byte cap."""

    def __init__(self, header: str, max_bytes: int) -> None:
        self.lines = [header]
        self.room = max_bytes - len(header.encode("utf-8")) - 200  # space kept for a footer
        self.full = False

    def add(self, line: str) -> bool:
        size = len(line.encode("utf-8")) + 1
        if size > self.room and len(self.lines) > 1:
            self.full = True
            return False
        if size > self.room:  # a first line that alone is too large: show its start
            encoded = line.encode("utf-8")[: max(0, self.room - 1)]
            line = encoded.decode("utf-8", errors="ignore")
            size = len(line.encode("utf-8")) + 1
        self.lines.append(line)
        self.room -= size
        return True

    def text(self, footer: str = "") -> str:
        return "\n".join([*self.lines, footer] if footer else self.lines)


class StoredOutputView:
    """One stored output split into lines, with the ``read`` and ``grep`` handlers."""

    def __init__(self, source: ExtractionSource, text: str, config: ExtractionConfig) -> None:
        self.source = source
        self.lines = split_lines(text)
        self.config = config

    def _wrong_handle(self, handle: str) -> ToolResult[None] | None:
        if handle == self.source.handle:
            return None
        return ToolResult.error(
            f"No stored output has the handle {handle!r} here. "
            f"The only handle you can use is {self.source.handle!r}."
        )

    def read(self, params: ReadParams, *, context: ToolContext) -> ToolResult[None]:
        """Show numbered lines ``offset`` .. ``offset + limit - 1``."""
        refused = self._wrong_handle(params.handle)
        if refused is not None:
            return refused
        count = len(self.lines)
        if count == 0:
            return ToolResult(message="The stored output is empty: it has no lines to read.")
        if params.offset < 1:
            return ToolResult.error(
                f"offset {params.offset} is not a line number: lines are numbered from 1 to {count}."
            )
        if params.offset > count:
            return ToolResult.error(
                f"offset {params.offset} is past the end: the output has {count} lines, "
                f"so use an offset from 1 to {count}."
            )
        if params.limit < 1:
            return ToolResult.error(f"limit {params.limit} shows nothing: ask for at least 1 line.")
        limit = min(params.limit, self.config.read_max_lines)
        last = min(count, params.offset + limit - 1)
        reply = _Reply(f"Lines {params.offset}-{last} of {count}:", self.config.tool_reply_max_bytes)
        shown_until = params.offset - 1
        for number in range(params.offset, last + 1):
            line = _clip(self.lines[number - 1], 0, self.config.line_max_chars)
            if not reply.add(f"{number}: {line}"):
                break
            shown_until = number
        notes: list[str] = []
        if reply.full:
            notes.append(
                f"Stopped after line {shown_until} to keep this reply short; "
                f"continue with offset={shown_until + 1}."
            )
        elif params.limit > limit:
            notes.append(f"One read shows at most {limit} lines; continue with offset={last + 1}.")
        elif last == count:
            notes.append("This is the end of the output.")
        return ToolResult(message=reply.text(" ".join(notes)))

    def grep(self, params: GrepParams, *, context: ToolContext) -> ToolResult[None]:
        """List the lines matching ``pattern`` with ``context`` lines around each."""
        refused = self._wrong_handle(params.handle)
        if refused is not None:
            return refused
        config = self.config
        if params.context < 0:
            return ToolResult.error(f"context {params.context} is negative: give 0 or more lines.")
        around = min(params.context, config.grep_max_context)
        timeout = config.grep_timeout_seconds
        if context.deadline is not None:
            timeout = max(0.001, min(timeout, context.deadline.remaining().total_seconds()))
        try:
            found = search_lines(
                params.pattern,
                self.lines,
                max_hits=config.grep_max_matches,
                timeout=timeout,
                isolate=config.grep_isolate,
                clock=context.session.clock,
            )
        except PatternError as exc:
            return ToolResult.error(f"grep: {exc}. Fix the pattern and search again.")
        except SearchTimeout as exc:
            return ToolResult.error(
                f"grep: {exc}. Use a simpler pattern: nested repeats such as (a+)+ or (.*)* "
                "can take a very long time."
            )
        except SearchFailed as exc:
            return ToolResult.error(f"grep: {exc}.")
        if found.total == 0:
            return ToolResult(
                message=f"No line matches {params.pattern!r} ({len(self.lines)} lines searched). "
                "Try other words, a looser pattern, or (?i) to ignore case."
            )
        return ToolResult(message=self._matches_text(params.pattern, found.hits, found.total, around))

    def _matches_text(self, pattern: str, hits: tuple[LineHit, ...], total: int, around: int) -> str:
        shown = f", showing the first {len(hits)}" if total > len(hits) else ""
        header = f"{total} of {len(self.lines)} lines match {pattern!r}{shown} (match lines N:, context N-):"
        reply = _Reply(header, self.config.tool_reply_max_bytes)
        by_line = {hit.line: hit for hit in hits}
        width = self.config.line_max_chars
        previous = -1
        for hit in hits:
            first = max(0, hit.line - around, previous + 1)
            last = min(len(self.lines) - 1, hit.line + around)
            separate = previous >= 0 and first > previous + 1
            for index in range(first, last + 1):
                match = by_line.get(index)
                text = self.lines[index]
                if match is not None:
                    line = f"{index + 1}: {_clip(text, match.start - width // 4, width)}"
                else:
                    line = f"{index + 1}- {_clip(text, 0, width)}"
                if separate:  # a gap since the last group shown
                    line, separate = f"--\n{line}", False
                if not reply.add(line):
                    break
                previous = index
            if reply.full:
                break
        footer = ""
        if reply.full:
            footer = f"Stopped after line {previous + 1} to keep this reply short; grep a narrower pattern."
        elif total > len(hits):
            footer = "Narrow the pattern to see the remaining matches."
        return reply.text(footer)


def read_grep_tools(view: StoredOutputView) -> tuple[AnyTool, AnyTool]:
    """``read`` and ``grep`` bound to one stored output."""
    read = Tool(
        name="read",
        description="Show numbered lines of the stored output, starting at line `offset` (from 1).",
        handler=view.read,
        params_type=ReadParams,
        result_type=None,
    )
    grep = Tool(
        name="grep",
        description="List the numbered lines of the stored output that match a regular expression.",
        handler=view.grep,
        params_type=GrepParams,
        result_type=None,
    )
    return read, grep
