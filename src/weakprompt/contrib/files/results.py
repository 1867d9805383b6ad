"""What the file tools return: typed values that render as the text the model reads."""

from __future__ import annotations

import attrs

__all__ = ["FileEdited", "FileListing", "FileMatches", "FileWindow", "FileWritten", "GrepHit", "GrepMatches"]


def _shown(path: str) -> str:
    return path or "."


@attrs.frozen
class FileListing:
    """The entries directly inside one directory; directory names end with ``/``."""

    path: str
    entries: tuple[str, ...]

    def render(self) -> str:
        if not self.entries:
            return f"{_shown(self.path)} is empty."
        noun = "entry" if len(self.entries) == 1 else "entries"
        return f"{len(self.entries)} {noun} in {_shown(self.path)}:\n" + "\n".join(self.entries)


@attrs.frozen
class FileWindow:
    """Lines ``offset`` .. ``offset + len(lines) - 1`` (1-based) of a file of ``total_lines`` lines.

    ``lines`` are the file's lines without their ``\\n``, so the windows of a
    file, joined with ``\\n``, give back its text.
    """

    path: str
    offset: int
    lines: tuple[str, ...]
    total_lines: int

    @property
    def end_line(self) -> int:
        """Number of the last line shown (``offset - 1`` when none is)."""
        return self.offset + len(self.lines) - 1

    @property
    def remaining(self) -> int:
        """How many lines of the file come after this window."""
        return self.total_lines - self.end_line

    def render(self) -> str:
        if self.total_lines == 0:
            return f"{self.path} is empty (0 lines)."
        head = f"{self.path}: lines {self.offset}-{self.end_line} of {self.total_lines}"
        width = len(str(self.end_line))
        body = "\n".join(
            f"{number:>{width}}\t{line.removesuffix(chr(13))}"
            for number, line in enumerate(self.lines, start=self.offset)
        )
        tail = (
            f"\n({self.remaining} more line{'' if self.remaining == 1 else 's'}: "
            f"read_file with offset={self.end_line + 1} to continue)"
            if self.remaining
            else ""
        )
        return f"{head}\n{body}{tail}"


@attrs.frozen
class FileMatches:
    """The files whose paths match a glob, sorted; ``complete`` is false when the walk was cut short."""

    pattern: str
    paths: tuple[str, ...]
    complete: bool = True

    def render(self) -> str:
        note = "" if self.complete else "\n(the search stopped early: too many files; narrow the path)"
        if not self.paths:
            return f"No file matches {self.pattern!r}.{note}"
        noun = "file matches" if len(self.paths) == 1 else "files match"
        return f"{len(self.paths)} {noun} {self.pattern!r}:\n" + "\n".join(self.paths) + note


@attrs.frozen
class GrepHit:
    """One matching line: its file, 1-based number and text (long lines shortened)."""

    path: str
    line: int
    text: str


@attrs.frozen
class GrepMatches:
    """The first matching lines of a search, how many lines matched in all, and what was not searched.

    ``skipped`` names files that could not be searched (not UTF-8 text, not
    readable); ``complete`` is false when the search stopped before the end
    of the files (too many files or bytes).
    """

    pattern: str
    hits: tuple[GrepHit, ...]
    total: int
    files_searched: int
    skipped: tuple[str, ...] = ()
    complete: bool = True

    def render(self) -> str:
        where = f"in {self.files_searched} file{'' if self.files_searched == 1 else 's'}"
        if not self.hits:
            lines = [f"No line matches {self.pattern!r} {where}."]
        else:
            lines = [f"{self.total} matching line{'' if self.total == 1 else 's'} {where}:"]
            lines.extend(f"{hit.path}:{hit.line}: {hit.text.removesuffix(chr(13))}" for hit in self.hits)
            if self.total > len(self.hits):
                lines.append(
                    f"({self.total - len(self.hits)} more not shown: narrow the pattern or the path)"
                )
        if self.skipped:
            lines.append(f"(not searched, not UTF-8 text or not readable: {', '.join(self.skipped)})")
        if not self.complete:
            lines.append("(the search stopped early: too many files or bytes; narrow the path or the glob)")
        return "\n".join(lines)


@attrs.frozen
class FileWritten:
    """A file written whole: its path, size in UTF-8 bytes, and whether it is new."""

    path: str
    size_bytes: int
    created: bool

    def render(self) -> str:
        verb = "Created" if self.created else "Replaced the content of"
        return f"{verb} {self.path} ({self.size_bytes} bytes)."


@attrs.frozen
class FileEdited:
    """An exact-text edit: the file and how many occurrences were replaced."""

    path: str
    replacements: int

    def render(self) -> str:
        noun = "occurrence" if self.replacements == 1 else "occurrences"
        return f"Edited {self.path}: replaced {self.replacements} {noun}."
