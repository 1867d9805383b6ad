"""The file tools' names, shared by the tools, the section's copy and the CLI."""

from __future__ import annotations

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
]

LIST_FILES_TOOL = "list_files"
READ_FILE_TOOL = "read_file"
GLOB_FILES_TOOL = "glob_files"
GREP_FILES_TOOL = "grep_files"
WRITE_FILE_TOOL = "write_file"
EDIT_FILE_TOOL = "edit_file"
READ_TOOL_NAMES = (LIST_FILES_TOOL, READ_FILE_TOOL, GLOB_FILES_TOOL, GREP_FILES_TOOL)
WRITE_TOOL_NAMES = (WRITE_FILE_TOOL, EDIT_FILE_TOOL)
FILE_TOOL_NAMES = (*READ_TOOL_NAMES, *WRITE_TOOL_NAMES)
