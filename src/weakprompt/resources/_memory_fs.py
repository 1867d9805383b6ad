"""A filesystem held in memory, with snapshots that cost nothing to take.

The file table is treated as immutable once a snapshot has seen it: the
next write copies the table (pointers only; file contents are immutable
``bytes``) and leaves the snapshot's table alone. So ``snapshot()`` is O(1)
and ``restore()`` is exact.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from types import MappingProxyType
from typing import TypeVar, cast

import attrs

from ._paths import normalize_path

__all__ = ["InMemoryFilesystem", "InMemorySnapshot"]

V = TypeVar("V")


@attrs.frozen
class InMemorySnapshot:
    """The files of an :class:`InMemoryFilesystem` at one moment."""

    files: Mapping[str, bytes]
    dirs: Mapping[str, int] = attrs.field(eq=False, repr=False)


def _parents(path: str) -> list[str]:
    """``a/b/c`` -> ``["a", "a/b"]``: the directories a file path lives in."""
    parts = path.split("/")
    return ["/".join(parts[:i]) for i in range(1, len(parts))]


def _frozen(table: Mapping[str, V]) -> Mapping[str, V]:
    """A read-only view; an existing view is reused so views never nest."""
    return table if isinstance(table, MappingProxyType) else MappingProxyType(table)


class InMemoryFilesystem:
    """A :class:`Filesystem` kept in a dict; snapshotable and thread-safe.

    Directories exist implicitly while they contain a file.
    """

    def __init__(self, files: Mapping[str, bytes | str] | None = None) -> None:
        self._lock = threading.Lock()
        # The current tables. While ``_shared`` is false they are dicts this
        # object owns; once a snapshot has seen them they are never mutated.
        self._files: Mapping[str, bytes] = {}
        # Directory path -> number of files anywhere below it.
        self._dirs: Mapping[str, int] = {}
        self._shared = False
        for path, content in (files or {}).items():
            if isinstance(content, str):
                self.write_text(path, content)
            else:
                self.write_bytes(path, content)

    # -- Snapshotable -----------------------------------------------------

    def snapshot(self) -> InMemorySnapshot:
        with self._lock:
            self._files = _frozen(self._files)
            self._dirs = _frozen(self._dirs)
            self._shared = True
            return InMemorySnapshot(self._files, self._dirs)

    def restore(self, snapshot: object, /) -> None:
        if not isinstance(snapshot, InMemorySnapshot):
            raise TypeError(
                f"InMemoryFilesystem.restore takes an InMemorySnapshot, got {type(snapshot).__name__}"
            )
        with self._lock:
            # The snapshot's tables are never mutated; share them until a write.
            self._files = snapshot.files
            self._dirs = snapshot.dirs
            self._shared = True

    def _own(self) -> tuple[dict[str, bytes], dict[str, int]]:
        """Writable tables, copied on the first write after a snapshot (caller holds the lock)."""
        if self._shared:
            self._files = dict(self._files)
            self._dirs = dict(self._dirs)
            self._shared = False
        return cast("dict[str, bytes]", self._files), cast("dict[str, int]", self._dirs)

    # -- Filesystem ----------------------------------------------------------

    def read_bytes(self, path: str) -> bytes:
        key = normalize_path(path)
        files = self._files
        if key in files:
            return files[key]
        if key in self._dirs:
            raise IsADirectoryError(f"{path!r} is a directory, not a file")
        raise FileNotFoundError(f"no such file: {path!r}")

    def read_text(self, path: str, *, encoding: str = "utf-8") -> str:
        return self.read_bytes(path).decode(encoding)

    def write_bytes(self, path: str, data: bytes) -> None:
        key = normalize_path(path)
        if not isinstance(data, bytes | bytearray | memoryview):
            raise TypeError(f"write_bytes({path!r}) takes bytes, got {type(data).__name__}")
        content = bytes(data)
        parents = _parents(key)
        with self._lock:
            if key in self._dirs:
                raise IsADirectoryError(f"cannot write {path!r}: it is a directory")
            for parent in parents:
                if parent in self._files:
                    raise NotADirectoryError(f"cannot write {path!r}: {parent!r} is a file")
            files, dirs = self._own()
            if key not in files:
                for parent in parents:
                    dirs[parent] = dirs.get(parent, 0) + 1
            files[key] = content

    def write_text(self, path: str, text: str, *, encoding: str = "utf-8") -> None:
        if not isinstance(text, str):
            raise TypeError(f"write_text({path!r}) takes str, got {type(text).__name__}")
        self.write_bytes(path, text.encode(encoding))

    def exists(self, path: str) -> bool:
        key = normalize_path(path, allow_root=True)
        return key == "" or key in self._files or key in self._dirs

    def list_dir(self, path: str = "") -> tuple[str, ...]:
        key = normalize_path(path, allow_root=True)
        files = self._files
        if key in files:
            raise NotADirectoryError(f"{path!r} is a file, not a directory")
        if key and key not in self._dirs:
            raise FileNotFoundError(f"no such directory: {path!r}")
        prefix = f"{key}/" if key else ""
        names: set[str] = set()
        for file_path in files:
            if file_path.startswith(prefix):
                head, sep, _ = file_path[len(prefix) :].partition("/")
                names.add(f"{head}/" if sep else head)
        return tuple(sorted(names))

    def delete(self, path: str) -> None:
        key = normalize_path(path)
        with self._lock:
            if key not in self._files:
                if key in self._dirs:
                    raise IsADirectoryError(f"cannot delete {path!r}: it is a directory")
                raise FileNotFoundError(f"no such file: {path!r}")
            files, dirs = self._own()
            del files[key]
            for parent in _parents(key):
                left = dirs[parent] - 1
                if left:
                    dirs[parent] = left
                else:
                    del dirs[parent]

    def __repr__(self) -> str:
        return f"InMemoryFilesystem({len(self._files)} files)"
