"""What a replay reports when a request is not the one recorded: the first difference, named."""

from __future__ import annotations

import difflib
import re
from typing import TYPE_CHECKING, Literal, TypeAlias

import attrs

from ..errors import WeakpromptError

if TYPE_CHECKING:
    from ..prompt import RenderedPrompt

__all__ = ["DivergenceKind", "ReplayDivergence", "section_at", "short_diff"]

DivergenceKind: TypeAlias = Literal["section", "message", "tool", "tools", "settings", "output", "turns"]
"""What differs: a section of the system text, another message, one tool's schema, the set of tool
names offered, a model setting, the output type (the recorded final answer was refused), or the
number of model calls."""

_DIFF_LINES = 12
_EXCERPT = 80


@attrs.frozen(kw_only=True)
class ReplayDivergence(WeakpromptError):
    """The first request of a replay that differs from the recorded one (raised, or kept in the report).

    ``turn`` counts model calls from 1 across the replayed session. Only the
    fields of the ``kind`` are set: a section's path and hash (of the section
    as the prompt declares it now), a tool's name and both schema hashes, a
    message's index and role; ``diff`` shows the difference in a few lines.
    """

    turn: int
    kind: DivergenceKind
    summary: str
    diff: str = ""
    section_path: str | None = None
    section_hash: str | None = None
    tool_name: str | None = None
    recorded_hash: str | None = None
    replayed_hash: str | None = None
    message_index: int | None = None
    role: str | None = None
    setting: str | None = None

    def __str__(self) -> str:
        return f"turn {self.turn}: {self.summary}"

    def describe(self) -> str:
        """Every set field, one per line, then the diff: the text a terminal report prints."""
        lines = [str(self)]
        for name in (
            "section_path",
            "section_hash",
            "tool_name",
            "recorded_hash",
            "replayed_hash",
            "message_index",
            "role",
            "setting",
        ):
            value = getattr(self, name)
            if value is not None:
                lines.append(f"  {name}: {value}")
        if self.diff:
            lines.extend(f"  {line}" for line in self.diff.splitlines())
        return "\n".join(lines)


def short_diff(recorded: str, replayed: str) -> str:
    """A unified diff of the two texts cut to a few lines (one-line texts: around the first difference)."""
    if "\n" not in recorded and "\n" not in replayed:
        at = _common_prefix(recorded, replayed)
        start = max(0, at - 20)
        return f"- {recorded[start : at + _EXCERPT]!r}\n+ {replayed[start : at + _EXCERPT]!r}"
    lines = list(
        difflib.unified_diff(
            recorded.splitlines(), replayed.splitlines(), "recorded", "replayed", n=1, lineterm=""
        )
    )
    if len(lines) > _DIFF_LINES:
        lines = [*lines[:_DIFF_LINES], f"... ({len(lines) - _DIFF_LINES} more diff lines)"]
    return "\n".join(lines)


def _common_prefix(a: str, b: str) -> int:
    at = 0
    for left, right in zip(a, b, strict=False):
        if left != right:
            break
        at += 1
    return at


def section_at(
    rendered: RenderedPrompt[object], recorded: str, replayed: str
) -> tuple[str, str | None] | None:
    """The section of ``rendered`` whose text holds the first character where the two system texts differ.

    The rendered text is a sequence of numbered headings (``## 1. Title``);
    the section is the last one whose heading starts at or before that
    character. Its hash is the descriptor's (of the template as declared
    now). ``None`` when the difference comes before every heading.
    """
    at = _common_prefix(recorded, replayed)
    found: tuple[str, str | None] | None = None
    position = 0
    for section in rendered.sections:
        pattern = re.compile(rf"^#+ {re.escape(section.number)}\. {re.escape(section.title)}$", re.MULTILINE)
        match = pattern.search(replayed, position)
        if match is None:
            continue
        if match.start() > at:
            break
        position = match.end()
        descriptor = rendered.descriptor.section(section.path)
        found = (section.path_text, None if descriptor is None else descriptor.content_hash)
    return found
