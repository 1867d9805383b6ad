"""Built-in file tools over the ``Filesystem`` resource, and the section that offers them.

Typical use::

    fs = InMemoryFilesystem({"notes.md": "# Notes\\n"})   # or HostFilesystem("some/dir")
    template = PromptTemplate(ns="agents", key="reader", sections=[..., FilesSection()])
    evaluate(Prompt(template), adapter=..., resources=ResourceRegistry({Filesystem: fs}))

Read-only unless ``FilesSection(writable=True)``; writes wait for approval
unless ``require_approval_for_writes=False``. See ``specs/FILES.md``.
"""

from __future__ import annotations

from .logic import (
    FileLimits,
    FileToolError,
    edit_file,
    glob_files,
    glob_regex,
    grep_files,
    list_files,
    read_file,
    split_lines,
    walk_files,
    write_file,
)
from .names import (
    EDIT_FILE_TOOL,
    FILE_TOOL_NAMES,
    GLOB_FILES_TOOL,
    GREP_FILES_TOOL,
    LIST_FILES_TOOL,
    READ_FILE_TOOL,
    READ_TOOL_NAMES,
    WRITE_FILE_TOOL,
    WRITE_TOOL_NAMES,
)
from .params import EditFile, GlobFiles, GrepFiles, ListFiles, ReadFile, WriteFile
from .results import FileEdited, FileListing, FileMatches, FileWindow, FileWritten, GrepHit, GrepMatches
from .section import FilesSection, files_copy
from .tools import FileTools, file_tools

__all__ = [
    "EDIT_FILE_TOOL",
    "FILE_TOOL_NAMES",
    "GLOB_FILES_TOOL",
    "GREP_FILES_TOOL",
    "LIST_FILES_TOOL",
    "READ_FILE_TOOL",
    "READ_TOOL_NAMES",
    "WRITE_FILE_TOOL",
    "WRITE_TOOL_NAMES",
    "EditFile",
    "FileEdited",
    "FileLimits",
    "FileListing",
    "FileMatches",
    "FileToolError",
    "FileTools",
    "FileWindow",
    "FileWritten",
    "FilesSection",
    "GlobFiles",
    "GrepFiles",
    "GrepHit",
    "GrepMatches",
    "ListFiles",
    "ReadFile",
    "WriteFile",
    "edit_file",
    "file_tools",
    "files_copy",
    "glob_files",
    "glob_regex",
    "grep_files",
    "list_files",
    "read_file",
    "split_lines",
    "walk_files",
    "write_file",
]
