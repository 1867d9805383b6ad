"""Line diffs between a text and the version that replaced it (edits and summaries of tool results)."""

from __future__ import annotations

import difflib
from typing import Literal

import attrs

__all__ = ["DiffLine", "line_diff"]

DiffKind = Literal["add", "del", "ctx", "hunk", "note"]

_MAX_LINES = 2000
"""A diff longer than this is cut (a summary of a long log would otherwise list every removed line)."""


@attrs.frozen
class DiffLine:
    kind: DiffKind
    text: str


def line_diff(before: str, after: str, *, context: int = 3) -> tuple[DiffLine, ...]:
    """A unified diff of ``before`` -> ``after`` as typed lines, cut after :data:`_MAX_LINES`."""
    lines: list[DiffLine] = []
    diff = difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=context)
    for index, line in enumerate(diff):
        if index < 2:  # the ---/+++ file header says nothing here
            continue
        if len(lines) >= _MAX_LINES:
            lines.append(DiffLine("note", "… diff cut here"))
            break
        if line.startswith("@@"):
            lines.append(DiffLine("hunk", line))
        elif line.startswith("+"):
            lines.append(DiffLine("add", line[1:]))
        elif line.startswith("-"):
            lines.append(DiffLine("del", line[1:]))
        else:
            lines.append(DiffLine("ctx", line[1:]))
    if not lines:
        lines.append(DiffLine("note", "no change in the text"))
    return tuple(lines)
