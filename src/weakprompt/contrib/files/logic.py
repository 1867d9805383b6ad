"""The file operations behind the tools, as plain functions over a :class:`Filesystem`.

They raise on anything the model should be told about (:class:`FileToolError`
for a bad request; ``UnsafePathError`` and ``OSError`` from the filesystem);
the tool handlers turn those into failed results. Paths are checked by the
filesystem's own rules (:func:`normalize_path`), so nothing here can name a
file outside its root.
"""

from __future__ import annotations

import re
from collections import deque

import attrs

from ...canonical import find_surrogate
from ...errors import ConfigurationError, ToolValidationError
from ...resources import Filesystem, UnsafePathError, normalize_path
from ...runtime.results.extraction.regex_guard import (
    PatternError,
    SearchFailed,
    SearchTimeout,
    compile_pattern,
    search_lines,
)
from .params import EditFile, GlobFiles, GrepFiles, ReadFile, WriteFile
from .results import FileEdited, FileListing, FileMatches, FileWindow, FileWritten, GrepHit, GrepMatches

__all__ = [
    "FileLimits",
    "FileToolError",
    "edit_file",
    "glob_files",
    "glob_regex",
    "grep_files",
    "list_files",
    "read_file",
    "split_lines",
    "walk_files",
    "write_file",
]

MAX_HIT_CHARS = 300
"""A matching line longer than this is shortened in a grep result (read_file shows it whole)."""


class FileToolError(ToolValidationError):
    """A file tool was asked for something it cannot do; the message says what and why."""


def _positive(_: object, attribute: attrs.Attribute[int], value: int) -> None:
    if isinstance(value, bool) or value < 1:
        raise ConfigurationError(f"FileLimits.{attribute.name} must be a positive int, got {value!r}")


def _positive_time(_: object, attribute: attrs.Attribute[float], value: float) -> None:
    if isinstance(value, bool) or not value > 0:
        raise ConfigurationError(
            f"FileLimits.{attribute.name} must be a positive number of seconds, got {value!r}"
        )


@attrs.frozen(kw_only=True)
class FileLimits:
    """How far the tools go before they stop and say so.

    ``max_file_bytes`` is the largest file ``read_file`` or ``edit_file``
    takes (a window of a larger file is refused too: the whole file is read
    to find its lines). ``max_walk_entries`` bounds the files and directories a glob or grep
    visits, ``max_matches`` the paths or lines one result lists,
    ``max_grep_bytes`` the text one grep reads. A grep pattern runs in a
    child process killed after ``grep_timeout`` seconds (``grep_isolate``;
    see ``runtime/results/extraction/regex_guard.py``), so a catastrophic
    pattern from the model costs at most that.
    """

    max_file_bytes: int = attrs.field(default=10_000_000, validator=_positive)
    max_walk_entries: int = attrs.field(default=5000, validator=_positive)
    max_matches: int = attrs.field(default=100, validator=_positive)
    max_grep_bytes: int = attrs.field(default=8_000_000, validator=_positive)
    grep_timeout: float = attrs.field(default=5.0, validator=_positive_time)
    grep_isolate: bool = True


def split_lines(text: str) -> tuple[str, ...]:
    """The lines of ``text`` without their ``\\n``; a final newline does not start another line."""
    if not text:
        return ()
    return tuple(text.removesuffix("\n").split("\n"))


def _directory(path: str) -> str:
    return normalize_path(path, allow_root=True)


def list_files(fs: Filesystem, path: str) -> FileListing:
    """The entries directly inside directory ``path`` (``""`` is the root)."""
    key = _directory(path)
    return FileListing(path=key, entries=fs.list_dir(key))


def read_file(fs: Filesystem, params: ReadFile, limits: FileLimits | None = None) -> FileWindow:
    """The window of lines ``params`` asks for; the whole rest of the file without a limit."""
    if isinstance(params.offset, bool) or params.offset < 1:
        raise FileToolError(f"offset must be 1 or more (the first line is 1), got {params.offset}")
    if params.limit is not None and (isinstance(params.limit, bool) or params.limit < 1):
        raise FileToolError(f"limit must be 1 or more, or omitted to read to the end, got {params.limit}")
    key = normalize_path(params.path)
    lines = split_lines(_read_text(fs, key, limits or FileLimits()))
    if lines and params.offset > len(lines):
        raise FileToolError(f"offset {params.offset} is past the end of {key}, which has {len(lines)} lines")
    start = params.offset - 1 if lines else 0
    stop = len(lines) if params.limit is None else min(len(lines), start + params.limit)
    return FileWindow(path=key, offset=start + 1, lines=lines[start:stop], total_lines=len(lines))


def _read_text(fs: Filesystem, key: str, limits: FileLimits) -> str:
    data = fs.read_bytes(key)
    if len(data) > limits.max_file_bytes:
        raise FileToolError(
            f"{key} is {len(data)} bytes; the file tools read files of at most {limits.max_file_bytes} bytes "
            "(grep_files can still search it)"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FileToolError(
            f"{key} is not UTF-8 text (byte {exc.start} cannot be decoded); it may be a binary file"
        ) from None


def glob_regex(pattern: str) -> re.Pattern[str]:
    """The regex for a glob over relative paths: ``*`` and ``?`` stay in one name, ``**`` spans names.

    Any other character, ``[`` included, matches itself.
    """
    parts: list[str] = []
    segments = normalize_path(pattern).split("/")
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if segment == "**":
            parts.append(".*" if last else "(?:.*/)?")
            continue
        piece = "".join(
            "[^/]*" if char == "*" else "[^/]" if char == "?" else re.escape(char) for char in segment
        )
        parts.append(piece if last else piece + "/")
    return re.compile("".join(parts), re.DOTALL)


@attrs.frozen
class _Walk:
    files: tuple[str, ...]
    complete: bool


def walk_files(fs: Filesystem, path: str, *, max_entries: int) -> _Walk:
    """Every file under directory ``path`` (or ``path`` itself when it is a file), sorted.

    Entries that cannot be listed (a symbolic link leading out of the root,
    a loop) are left out; after ``max_entries`` entries the walk stops and
    says it is incomplete.
    """
    key = _directory(path)
    if key and fs.exists(key) and not _is_directory(fs, key):
        return _Walk(files=(key,), complete=True)
    fs.list_dir(key)  # a missing directory or a bad path is the caller's error, not an empty result
    files: list[str] = []
    pending: deque[str] = deque([key])
    seen = 0
    while pending:
        directory = pending.popleft()
        try:
            entries = fs.list_dir(directory)
        except (UnsafePathError, OSError):
            continue
        for entry in entries:
            seen += 1
            if seen > max_entries:
                return _Walk(files=tuple(sorted(files)), complete=False)
            child = f"{directory}/{entry}" if directory else entry
            if entry.endswith("/"):
                pending.append(child.removesuffix("/"))
            else:
                files.append(child)
    return _Walk(files=tuple(sorted(files)), complete=True)


def _is_directory(fs: Filesystem, key: str) -> bool:
    try:
        fs.list_dir(key)
    except NotADirectoryError:
        return False
    return True


def _relative(path: str, base: str) -> str:
    """``path`` relative to directory ``base``; a file searched on its own is matched by its name."""
    if path == base:
        return path.rpartition("/")[2]
    return path[len(base) + 1 :] if base else path


def glob_files(fs: Filesystem, params: GlobFiles, limits: FileLimits) -> FileMatches:
    """The files under ``params.path`` whose paths relative to it match ``params.pattern``."""
    matcher = glob_regex(params.pattern)
    base = _directory(params.path)
    walk = walk_files(fs, base, max_entries=limits.max_walk_entries)
    found = tuple(path for path in walk.files if matcher.fullmatch(_relative(path, base)))
    shown = found[: limits.max_matches]
    complete = walk.complete and len(shown) == len(found)
    return FileMatches(pattern=params.pattern, paths=shown, complete=complete)


def _grep_corpus(
    fs: Filesystem, files: tuple[str, ...], limits: FileLimits
) -> tuple[list[str], list[tuple[str, int]], list[str], int, bool]:
    """All lines of the UTF-8 files, each with its file and line number, within the byte cap."""
    lines: list[str] = []
    origin: list[tuple[str, int]] = []
    skipped: list[str] = []
    searched = 0
    budget = limits.max_grep_bytes
    for path in files:
        try:
            data = fs.read_bytes(path)
            text = data.decode("utf-8")
        except (UnsafePathError, OSError, UnicodeDecodeError):
            skipped.append(path)
            continue
        if len(data) > budget:
            return lines, origin, skipped, searched, False
        budget -= len(data)
        searched += 1
        for number, line in enumerate(split_lines(text), start=1):
            lines.append(line)
            origin.append((path, number))
    return lines, origin, skipped, searched, True


def grep_files(fs: Filesystem, params: GrepFiles, limits: FileLimits) -> GrepMatches:
    """The first lines matching ``params.pattern`` under ``params.path``, guarded against runaway regexes."""
    try:
        compile_pattern(params.pattern)
    except PatternError as exc:
        raise FileToolError(str(exc)) from None
    base = _directory(params.path)
    walk = walk_files(fs, base, max_entries=limits.max_walk_entries)
    files = walk.files
    if params.glob is not None:
        matcher = glob_regex(params.glob)
        files = tuple(path for path in files if matcher.fullmatch(_relative(path, base)))
    lines, origin, skipped, searched, read_all = _grep_corpus(fs, files, limits)
    try:
        outcome = search_lines(
            params.pattern,
            lines,
            max_hits=limits.max_matches,
            timeout=limits.grep_timeout,
            isolate=limits.grep_isolate,
        )
    except (SearchTimeout, SearchFailed) as exc:
        raise FileToolError(f"the search for {params.pattern!r} did not finish: {exc}") from None
    hits = tuple(_hit(lines, origin, hit.line) for hit in outcome.hits)
    return GrepMatches(
        pattern=params.pattern,
        hits=hits,
        total=outcome.total,
        files_searched=searched,
        skipped=tuple(skipped),
        complete=walk.complete and read_all,
    )


def _hit(lines: list[str], origin: list[tuple[str, int]], index: int) -> GrepHit:
    path, number = origin[index]
    text = lines[index]
    if len(text) > MAX_HIT_CHARS:
        text = text[:MAX_HIT_CHARS] + "…"
    return GrepHit(path=path, line=number, text=text)


def _check_text(value: str, field: str) -> None:
    """Refuse text that cannot be stored as UTF-8 (a lone surrogate, which JSON can carry)."""
    at = find_surrogate(value)
    if at is not None:
        raise FileToolError(
            f"{field} contains a lone surrogate at index {at}: not valid text, nothing written"
        )


def write_file(fs: Filesystem, params: WriteFile) -> FileWritten:
    """Write ``params.content`` as the whole file, creating it and its directories if needed."""
    key = normalize_path(params.path)
    _check_text(params.content, "content")
    created = not fs.exists(key)
    data = params.content.encode("utf-8")
    fs.write_bytes(key, data)
    return FileWritten(path=key, size_bytes=len(data), created=created)


def edit_file(fs: Filesystem, params: EditFile, limits: FileLimits | None = None) -> FileEdited:
    """Replace ``old_text`` with ``new_text``: exactly one occurrence, or all with ``replace_all``."""
    key = normalize_path(params.path)
    if not params.old_text:
        raise FileToolError("old_text is empty; use write_file to create a file or replace all of it")
    if params.old_text == params.new_text:
        raise FileToolError("old_text and new_text are the same; there is nothing to change")
    _check_text(params.new_text, "new_text")
    text = _read_text(fs, key, limits or FileLimits())
    count = text.count(params.old_text)
    if count == 0:
        raise FileToolError(
            f"old_text was not found in {key}; copy it exactly from read_file's output "
            "(without the line numbers), including whitespace"
        )
    if count > 1 and not params.replace_all:
        raise FileToolError(
            f"old_text occurs {count} times in {key}; include more of the surrounding text so it "
            "occurs once, or set replace_all to replace every occurrence"
        )
    fs.write_text(key, text.replace(params.old_text, params.new_text))
    return FileEdited(path=key, replacements=count)
