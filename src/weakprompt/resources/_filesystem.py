"""The Filesystem protocol tools use, whatever actually stores the files."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

__all__ = ["Filesystem"]


@runtime_checkable
class Filesystem(Protocol):
    """Files under one root, addressed by relative POSIX paths (``notes/a.md``).

    Paths may not be absolute or contain ``..`` (``UnsafePathError``).
    Writing creates missing parent directories. Reading or deleting a
    missing file raises ``FileNotFoundError``; a directory where a file is
    expected raises ``IsADirectoryError``. ``list_dir`` returns the names
    directly inside a directory (``""`` is the root), sorted, with a ``/``
    after each directory name.
    """

    def read_text(self, path: str, *, encoding: str = "utf-8") -> str: ...

    def write_text(self, path: str, text: str, *, encoding: str = "utf-8") -> None: ...

    def read_bytes(self, path: str) -> bytes: ...

    def write_bytes(self, path: str, data: bytes) -> None: ...

    def exists(self, path: str) -> bool: ...

    def list_dir(self, path: str = "") -> tuple[str, ...]: ...

    def delete(self, path: str) -> None: ...
