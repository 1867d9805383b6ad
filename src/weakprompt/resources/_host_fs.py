"""A filesystem confined to one directory of the host.

Every path is checked twice: by syntax (no absolute paths, no ``..``) and
after resolving symlinks (the real location must stay under the root), so
a link planted inside the root cannot be used to read or write outside it.
"""

from __future__ import annotations

import os
from pathlib import Path

from ._errors import UnsafePathError
from ._paths import normalize_path

__all__ = ["HostFilesystem"]


class HostFilesystem:
    """A :class:`Filesystem` over a real directory, confined to ``root``.

    The check happens before each operation; a symlink swapped in between
    the check and the use by another process is outside what it guards.
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        resolved = Path(root).resolve()
        if not resolved.exists():
            raise FileNotFoundError(f"HostFilesystem root {os.fspath(root)!r} does not exist")
        if not resolved.is_dir():
            raise NotADirectoryError(f"HostFilesystem root {os.fspath(root)!r} is not a directory")
        self._root = resolved

    @property
    def root(self) -> Path:
        return self._root

    def __repr__(self) -> str:
        return f"HostFilesystem({str(self._root)!r})"

    def _resolve(self, path: str, *, allow_root: bool = False) -> Path:
        """The real location of ``path``, after checking it stays under the root."""
        relative = normalize_path(path, allow_root=allow_root)
        real = Path(os.path.realpath(self._root / relative))
        if real != self._root and not real.is_relative_to(self._root):
            raise UnsafePathError(
                f"path {path!r} resolves outside the filesystem root through a symbolic link"
            )
        return real

    def read_bytes(self, path: str) -> bytes:
        real = self._resolve(path)
        if real.is_dir():
            raise IsADirectoryError(f"{path!r} is a directory, not a file")
        try:
            return real.read_bytes()
        except FileNotFoundError:
            raise FileNotFoundError(f"no such file: {path!r}") from None

    def read_text(self, path: str, *, encoding: str = "utf-8") -> str:
        return self.read_bytes(path).decode(encoding)

    def write_bytes(self, path: str, data: bytes) -> None:
        if not isinstance(data, bytes | bytearray | memoryview):
            raise TypeError(f"write_bytes({path!r}) takes bytes, got {type(data).__name__}")
        real = self._resolve(path)
        if real.is_dir():
            raise IsADirectoryError(f"cannot write {path!r}: it is a directory")
        parent = real.parent
        ancestor = parent
        while ancestor != self._root:  # `real` is under the root, so this ends there
            if ancestor.exists() and not ancestor.is_dir():
                relative = ancestor.relative_to(self._root).as_posix()
                raise NotADirectoryError(f"cannot write {path!r}: {relative!r} is a file")
            ancestor = ancestor.parent
        parent.mkdir(parents=True, exist_ok=True)
        real.write_bytes(bytes(data))

    def write_text(self, path: str, text: str, *, encoding: str = "utf-8") -> None:
        if not isinstance(text, str):
            raise TypeError(f"write_text({path!r}) takes str, got {type(text).__name__}")
        self.write_bytes(path, text.encode(encoding))

    def exists(self, path: str) -> bool:
        return self._resolve(path, allow_root=True).exists()

    def list_dir(self, path: str = "") -> tuple[str, ...]:
        real = self._resolve(path, allow_root=True)
        if not real.exists():
            raise FileNotFoundError(f"no such directory: {path!r}")
        if not real.is_dir():
            raise NotADirectoryError(f"{path!r} is a file, not a directory")
        return tuple(sorted(f"{entry.name}/" if entry.is_dir() else entry.name for entry in real.iterdir()))

    def delete(self, path: str) -> None:
        real = self._resolve(path)
        # A symlink (whose target is under the root) is removed itself, like ``rm``.
        head, _, name = normalize_path(path).rpartition("/")
        entry = self._resolve(head, allow_root=True) / name
        if entry.is_symlink():
            entry.unlink()
            return
        if real.is_dir():
            raise IsADirectoryError(f"cannot delete {path!r}: it is a directory")
        try:
            real.unlink()
        except FileNotFoundError:
            raise FileNotFoundError(f"no such file: {path!r}") from None
