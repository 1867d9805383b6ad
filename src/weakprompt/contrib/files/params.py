"""Arguments of the file tools, as the model sends them.

The descriptions travel into each tool's JSON schema, which is all the model
sees of these classes; they are written for the model.
"""

from __future__ import annotations

import attrs

__all__ = ["EditFile", "GlobFiles", "GrepFiles", "ListFiles", "ReadFile", "WriteFile"]

_PATH = "Path relative to the root of the files, with '/' as the separator (e.g. 'docs/intro.md')."
_DIR = "Directory relative to the root of the files; '' (the default) is the root itself."


@attrs.frozen
class ListFiles:
    """List the entries directly inside one directory."""

    path: str = attrs.field(default="", metadata={"description": _DIR})


@attrs.frozen
class ReadFile:
    """Read a text file, or a window of its lines."""

    path: str = attrs.field(metadata={"description": _PATH})
    offset: int = attrs.field(
        default=1, metadata={"description": "Number of the first line to show (the first line is 1)."}
    )
    limit: int | None = attrs.field(
        default=None,
        metadata={"description": "Most lines to show; omit to read to the end of the file."},
    )


@attrs.frozen
class GlobFiles:
    """Find files whose paths match a glob pattern."""

    pattern: str = attrs.field(
        metadata={
            "description": (
                "Glob over paths relative to 'path': '*' matches within one name, '?' one character, "
                "'**' any number of directories (e.g. '**/*.md', 'src/*.py')."
            )
        }
    )
    path: str = attrs.field(
        default="", metadata={"description": "Directory to search under; '' is the root."}
    )


@attrs.frozen
class GrepFiles:
    """Search the lines of text files with a regular expression."""

    pattern: str = attrs.field(
        metadata={"description": "Python regular expression searched for on each line (re.search)."}
    )
    path: str = attrs.field(
        default="", metadata={"description": "A file, or a directory to search under; '' is the root."}
    )
    glob: str | None = attrs.field(
        default=None,
        metadata={"description": "Only search files whose paths match this glob (e.g. '**/*.py')."},
    )


@attrs.frozen
class WriteFile:
    """Create a file, or replace all of its content."""

    path: str = attrs.field(metadata={"description": _PATH})
    content: str = attrs.field(metadata={"description": "The complete new content of the file."})


@attrs.frozen
class EditFile:
    """Replace exact text in a file."""

    path: str = attrs.field(metadata={"description": _PATH})
    old_text: str = attrs.field(
        metadata={
            "description": (
                "Text to replace, copied exactly from the file (without read_file's line numbers); "
                "it must occur exactly once unless replace_all is true."
            )
        }
    )
    new_text: str = attrs.field(metadata={"description": "The text to put in its place."})
    replace_all: bool = attrs.field(
        default=False, metadata={"description": "Replace every occurrence instead of exactly one."}
    )
