"""The file tools: thin handlers over ``logic`` that find the :class:`Filesystem` and report failures.

Each handler looks the filesystem up in the call's resources
(``context.filesystem``). Anything the model asked for that cannot be done
comes back as a failed result naming the path as the model gave it, and a
failed result makes the dispatcher roll the call back (a snapshotable
filesystem such as :class:`InMemoryFilesystem` returns to its state before
the call). Results are not shortened here: a read too large for the context
goes to the tool-output pipeline, which stores it and hands the model a
handle (``specs/TOOL_RESULTS.md``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from ...resources import Filesystem, UnsafePathError
from ...tools import AnyTool, Tool, ToolContext, ToolExample, ToolResult
from .logic import (
    FileLimits,
    FileToolError,
    edit_file,
    glob_files,
    grep_files,
    list_files,
    read_file,
    write_file,
)
from .names import (
    EDIT_FILE_TOOL,
    GLOB_FILES_TOOL,
    GREP_FILES_TOOL,
    LIST_FILES_TOOL,
    READ_FILE_TOOL,
    WRITE_FILE_TOOL,
)
from .params import EditFile, GlobFiles, GrepFiles, ListFiles, ReadFile, WriteFile
from .results import FileEdited, FileListing, FileMatches, FileWindow, FileWritten, GrepHit, GrepMatches

__all__ = ["FileTools", "file_tools"]

T = TypeVar("T")

_REPORTED = (FileToolError, UnsafePathError, OSError)
NO_FILESYSTEM = (
    "No Filesystem resource is registered for this run, so there are no files to work on. "
    "(Whoever runs the prompt passes resources=ResourceRegistry({Filesystem: ...}), "
    "or `weakprompt run --files DIR`.)"
)


def _run(context: ToolContext, action: Callable[[Filesystem], T]) -> ToolResult[T]:
    fs = context.filesystem
    if fs is None:
        return ToolResult.error(NO_FILESYSTEM)
    try:
        value = action(fs)
    except _REPORTED as exc:
        return ToolResult.error(str(exc))
    return ToolResult(message="", value=value)


class FileTools:
    """The handlers, bound to one set of :class:`FileLimits`."""

    def __init__(self, limits: FileLimits | None = None) -> None:
        self.limits = limits if limits is not None else FileLimits()

    def list_files(self, params: ListFiles, *, context: ToolContext) -> ToolResult[FileListing]:
        return _run(context, lambda fs: list_files(fs, params.path))

    def read_file(self, params: ReadFile, *, context: ToolContext) -> ToolResult[FileWindow]:
        return _run(context, lambda fs: read_file(fs, params, self.limits))

    def glob_files(self, params: GlobFiles, *, context: ToolContext) -> ToolResult[FileMatches]:
        return _run(context, lambda fs: glob_files(fs, params, self.limits))

    def grep_files(self, params: GrepFiles, *, context: ToolContext) -> ToolResult[GrepMatches]:
        return _run(context, lambda fs: grep_files(fs, params, self.limits))

    def write_file(self, params: WriteFile, *, context: ToolContext) -> ToolResult[FileWritten]:
        return _run(context, lambda fs: write_file(fs, params))

    def edit_file(self, params: EditFile, *, context: ToolContext) -> ToolResult[FileEdited]:
        return _run(context, lambda fs: edit_file(fs, params, self.limits))


def file_tools(
    *,
    writable: bool = False,
    require_approval_for_writes: bool = True,
    limits: FileLimits | None = None,
    accepts_overrides: bool = False,
) -> tuple[AnyTool, ...]:
    """Fresh file tools: the four read-only ones, then ``write_file`` and ``edit_file`` when ``writable``.

    The writing tools run one at a time (``sequential``) and, unless
    ``require_approval_for_writes`` is false, pause the run for a decision
    on each call (``specs/APPROVAL.md``).
    """
    handlers = FileTools(limits)
    tools: list[AnyTool] = [
        Tool(
            name=LIST_FILES_TOOL,
            description="List what a directory contains (directory names end with '/').",
            handler=handlers.list_files,
            params_type=ListFiles,
            result_type=FileListing,
            examples=(
                ToolExample(
                    description="List the root",
                    input=ListFiles(),
                    output=FileListing(path="", entries=("README.md", "docs/")),
                ),
            ),
            accepts_overrides=accepts_overrides,
        ),
        Tool(
            name=READ_FILE_TOOL,
            description=(
                "Read a UTF-8 text file with numbered lines; offset and limit choose a window of lines. "
                "The result says how many lines remain after the window."
            ),
            handler=handlers.read_file,
            params_type=ReadFile,
            result_type=FileWindow,
            examples=(
                ToolExample(
                    description="Read the first two lines",
                    input=ReadFile(path="docs/intro.md", limit=2),
                    output=FileWindow(path="docs/intro.md", offset=1, lines=("# Intro", ""), total_lines=40),
                ),
            ),
            accepts_overrides=accepts_overrides,
        ),
        Tool(
            name=GLOB_FILES_TOOL,
            description="Find files by a glob pattern over their paths, such as '**/*.md'.",
            handler=handlers.glob_files,
            params_type=GlobFiles,
            result_type=FileMatches,
            examples=(
                ToolExample(
                    description="Every Markdown file",
                    input=GlobFiles(pattern="**/*.md"),
                    output=FileMatches(pattern="**/*.md", paths=("README.md", "docs/intro.md")),
                ),
            ),
            accepts_overrides=accepts_overrides,
        ),
        Tool(
            name=GREP_FILES_TOOL,
            description=(
                "Search text files for lines matching a regular expression; returns path:line: text "
                "for the first matches."
            ),
            handler=handlers.grep_files,
            params_type=GrepFiles,
            result_type=GrepMatches,
            examples=(
                ToolExample(
                    description="Where a function is defined",
                    input=GrepFiles(pattern=r"def parse\(", glob="**/*.py"),
                    output=GrepMatches(
                        pattern=r"def parse\(",
                        hits=(GrepHit(path="src/reader.py", line=12, text="def parse(text):"),),
                        total=1,
                        files_searched=3,
                    ),
                ),
            ),
            accepts_overrides=accepts_overrides,
        ),
    ]
    if writable:
        tools += [
            Tool(
                name=WRITE_FILE_TOOL,
                description="Create a file, or replace all of its content; missing directories are created.",
                handler=handlers.write_file,
                params_type=WriteFile,
                result_type=FileWritten,
                examples=(
                    ToolExample(
                        description="Write a new note",
                        input=WriteFile(path="notes/todo.md", content="- call Ann\n"),
                        output=FileWritten(path="notes/todo.md", size_bytes=11, created=True),
                    ),
                ),
                accepts_overrides=accepts_overrides,
                sequential=True,
                requires_approval=require_approval_for_writes,
            ),
            Tool(
                name=EDIT_FILE_TOOL,
                description=(
                    "Replace exact text in a file. old_text must occur exactly once unless replace_all "
                    "is true; read the file first and copy the text without the line numbers."
                ),
                handler=handlers.edit_file,
                params_type=EditFile,
                result_type=FileEdited,
                examples=(
                    ToolExample(
                        description="Fix one word",
                        input=EditFile(path="notes/todo.md", old_text="Ann", new_text="Anne"),
                        output=FileEdited(path="notes/todo.md", replacements=1),
                    ),
                ),
                accepts_overrides=accepts_overrides,
                sequential=True,
                requires_approval=require_approval_for_writes,
            ),
        ]
    return tuple(tools)
