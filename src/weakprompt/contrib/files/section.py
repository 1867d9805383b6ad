"""The prompt section that tells the model about the files and carries the file tools."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...prompt import MarkdownSection
from .logic import FileLimits
from .tools import file_tools

if TYPE_CHECKING:
    from ...prompt import EnabledPredicate

__all__ = ["FilesSection", "files_copy"]


def files_copy(*, writable: bool) -> str:
    """The section text: where the files are, how paths work, and what the model may change."""
    lines = [
        "You can work with a set of files through tools. Paths are relative to the root of the "
        "files, use '/' as the separator, and cannot leave the root ('..' and absolute paths are "
        "refused).",
        "",
        "- list_files shows what a directory contains; glob_files finds files by name pattern; "
        "grep_files finds the lines that match a regular expression.",
        "- read_file shows numbered lines; for a long file, read a window with offset and limit.",
    ]
    if writable:
        lines += [
            "- write_file creates a file or replaces all of its content.",
            "- edit_file replaces exact text: read the file first and copy old_text exactly, "
            "without the line numbers.",
        ]
    else:
        lines.append("- The files are read-only: you cannot create, change or delete them.")
    return "\n".join(lines)


class FilesSection(MarkdownSection[None]):
    """Instructions for the file tools, and the tools themselves.

    The tools work on the ``Filesystem`` registered in the run's resources
    (``evaluate(..., resources=ResourceRegistry({Filesystem: fs}))``). The
    section is read-only unless ``writable``; then ``write_file`` and
    ``edit_file`` are offered too, each call waiting for approval unless
    ``require_approval_for_writes`` is false. See ``specs/FILES.md``.
    """

    __slots__ = ("_writable",)

    def __init__(
        self,
        *,
        writable: bool = False,
        require_approval_for_writes: bool = True,
        limits: FileLimits | None = None,
        accepts_overrides: bool = False,
        title: str = "Files",
        key: str = "files",
        enabled: EnabledPredicate[None] = True,
    ) -> None:
        super().__init__(
            title=title,
            key=key,
            template=files_copy(writable=writable),
            tools=file_tools(
                writable=writable,
                require_approval_for_writes=require_approval_for_writes,
                limits=limits,
                accepts_overrides=accepts_overrides,
            ),
            accepts_overrides=accepts_overrides,
            enabled=enabled,
        )
        object.__setattr__(self, "_writable", writable)

    @property
    def writable(self) -> bool:
        """Whether the section offers the writing tools."""
        return self._writable
