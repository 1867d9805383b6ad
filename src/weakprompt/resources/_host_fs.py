"""A filesystem confined to one directory of the host.

Every path is checked twice: by syntax (no absolute paths, no ``..``) and
after resolving symlinks (the real location must stay under the root), so
a link planted inside the root cannot be used to read or write outside it.

Only regular files with a single link are read or written. A hard link
inside the root may be another name for a file outside it, and nothing on
the file says which name is the "real" one, so a regular file with more than
one link is refused. A FIFO, socket or device would block a read or do
something other than storing bytes, so anything that is not a regular file
is refused. The type and link count are checked before opening and again on
the open descriptor (``fstat``), which is opened without following a final
symlink and without blocking, so swapping the file between check and use
gains nothing.

Errors name the path as the caller gave it, never the host path under the
root: the caller is often a model, which has no business learning where the
root lives. Operating-system errors are turned into the filesystem's own
error types with such a message.

Snapshots are an undo journal, not copies: ``snapshot()`` marks a place in
the journal (nothing is read), and while a snapshot is alive each write or
delete first records what it replaces (the file's old bytes, or that it
did not exist, and the directories it made). ``restore()`` undoes the
writes made since its mark, newest first, so the dispatcher's rollback of a
failed tool call (and the loop's of a turn that was not stored) puts the
files back byte for byte. Entries no live snapshot can reach are dropped,
so a long run keeps only what the oldest live snapshot needs. Only changes
made through this object are journaled; another process writing the same
files is outside what a restore can put back, and so is a deleted name
that was not a regular file of one link (its bytes are never read).
"""

from __future__ import annotations

import errno
import os
import stat
import threading
import weakref
from collections.abc import Generator
from contextlib import contextmanager
from pathlib import Path

import attrs

from ._errors import UnsafePathError
from ._paths import normalize_path

__all__ = ["HostFilesystem", "HostSnapshot"]

_NO_FOLLOW = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_KINDS = {
    stat.S_IFIFO: "a FIFO",
    stat.S_IFSOCK: "a socket",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFLNK: "a symbolic link",
}


class HostSnapshot:
    """A place in a :class:`HostFilesystem`'s undo journal (see the module docstring); opaque."""

    __slots__ = ("__weakref__", "owner", "position")

    def __init__(self, owner: HostFilesystem, position: int) -> None:
        self.owner = owner
        self.position = position


@attrs.frozen
class _Undo:
    """What a write or delete replaced: the file's old bytes (``None``: absent), the directories it made."""

    real: Path
    before: bytes | None
    made_dirs: tuple[Path, ...] = ()


class HostFilesystem:
    """A :class:`Filesystem` over a real directory, confined to ``root``; snapshotable (an undo journal).

    The check happens before each operation; a directory on the path swapped
    for a symlink by another process between the check and the use is
    outside what it guards (the file itself is opened without following a
    symlink).
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        resolved = Path(root).resolve()
        if not resolved.exists():
            raise FileNotFoundError(f"HostFilesystem root {os.fspath(root)!r} does not exist")
        if not resolved.is_dir():
            raise NotADirectoryError(f"HostFilesystem root {os.fspath(root)!r} is not a directory")
        self._root = resolved
        self._lock = threading.RLock()
        self._journal: list[_Undo] = []
        self._base = 0  # journal position of self._journal[0] (older entries were dropped)
        self._live: weakref.WeakSet[HostSnapshot] = weakref.WeakSet()

    @property
    def root(self) -> Path:
        return self._root

    # -- Snapshotable -----------------------------------------------------

    def snapshot(self) -> HostSnapshot:
        """Mark the journal's current end (O(1): nothing is read or copied)."""
        with self._lock:
            marker = HostSnapshot(self, self._base + len(self._journal))
            self._live.add(marker)
            return marker

    def restore(self, snapshot: object, /) -> None:
        """Undo every write and delete made through this object since ``snapshot``, newest first."""
        if not isinstance(snapshot, HostSnapshot) or snapshot.owner is not self:
            raise TypeError(
                "HostFilesystem.restore takes a snapshot of this HostFilesystem, got "
                f"{type(snapshot).__name__}"
            )
        with self._lock:
            keep = snapshot.position - self._base
            assert keep >= 0  # entries a live snapshot needs are never dropped
            while len(self._journal) > keep:
                self._undo(self._journal.pop())

    def _record(self, real: Path, made_dirs: tuple[Path, ...] = ()) -> None:
        """Journal what a write or delete of ``real`` is about to replace, if a live snapshot may need it."""
        live = [marker.position for marker in self._live]
        if not live:
            self._base += len(self._journal)
            self._journal.clear()
            return
        oldest = min(live)
        if oldest > self._base:  # entries no live snapshot reaches
            del self._journal[: oldest - self._base]
            self._base = oldest
        before: bytes | None = None
        if real.exists():  # a regular file with one link: the caller checked it
            fd = os.open(real, os.O_RDONLY | _NO_FOLLOW)
            with os.fdopen(fd, "rb") as file:
                before = file.read()
        self._journal.append(_Undo(real, before, made_dirs))

    def _undo(self, entry: _Undo) -> None:
        if entry.before is None:
            entry.real.unlink(missing_ok=True)
        else:
            fd = os.open(entry.real, os.O_WRONLY | os.O_CREAT | _NO_FOLLOW, 0o666)
            with os.fdopen(fd, "wb") as file:
                file.truncate(0)
                file.write(entry.before)
        for directory in reversed(entry.made_dirs):  # deepest first; left alone if not empty
            try:
                directory.rmdir()
            except OSError:
                break

    def __repr__(self) -> str:
        return f"HostFilesystem({str(self._root)!r})"

    def _resolve(self, path: str, *, allow_root: bool = False) -> Path:
        """The real location of ``path``, after checking it stays under the root."""
        relative = normalize_path(path, allow_root=allow_root)
        with _host_errors(path, "resolve"):
            real = Path(os.path.realpath(self._root / relative))
        if real != self._root and not real.is_relative_to(self._root):
            raise UnsafePathError(
                f"path {path!r} resolves outside the filesystem root through a symbolic link"
            )
        return real

    def read_bytes(self, path: str) -> bytes:
        real = self._resolve(path)
        with _host_errors(path, "read"):
            _check_file(path, os.lstat(real), "read")
            fd = os.open(real, os.O_RDONLY | _NO_FOLLOW)
            with os.fdopen(fd, "rb") as file:
                _check_file(path, os.fstat(file.fileno()), "read")
                return file.read()

    def read_text(self, path: str, *, encoding: str = "utf-8") -> str:
        return self.read_bytes(path).decode(encoding)

    def write_bytes(self, path: str, data: bytes) -> None:
        if not isinstance(data, bytes | bytearray | memoryview):
            raise TypeError(f"write_bytes({path!r}) takes bytes, got {type(data).__name__}")
        real = self._resolve(path)
        with _host_errors(path, "write"):
            if real.is_dir():
                raise IsADirectoryError(f"cannot write {path!r}: it is a directory")
            parent = real.parent
            ancestor = parent
            while ancestor != self._root:  # `real` is under the root, so this ends there
                if ancestor.exists() and not ancestor.is_dir():
                    relative = ancestor.relative_to(self._root).as_posix()
                    raise NotADirectoryError(f"cannot write {path!r}: {relative!r} is a file")
                ancestor = ancestor.parent
            with self._lock:
                missing: list[Path] = []
                ancestor = parent
                while ancestor != self._root and not ancestor.exists():
                    missing.append(ancestor)
                    ancestor = ancestor.parent
                if real.exists():
                    _check_file(path, os.lstat(real), "write")
                self._record(real, tuple(reversed(missing)))
                parent.mkdir(parents=True, exist_ok=True)
                # No O_TRUNC: nothing changes until the open file is known to be ours to write.
                fd = os.open(real, os.O_WRONLY | os.O_CREAT | _NO_FOLLOW, 0o666)
                with os.fdopen(fd, "wb") as file:
                    _check_file(path, os.fstat(file.fileno()), "write")
                    file.truncate(0)
                    file.write(bytes(data))

    def write_text(self, path: str, text: str, *, encoding: str = "utf-8") -> None:
        if not isinstance(text, str):
            raise TypeError(f"write_text({path!r}) takes str, got {type(text).__name__}")
        self.write_bytes(path, text.encode(encoding))

    def exists(self, path: str) -> bool:
        real = self._resolve(path, allow_root=True)
        with _host_errors(path, "look up"):
            return real.exists()

    def list_dir(self, path: str = "") -> tuple[str, ...]:
        real = self._resolve(path, allow_root=True)
        with _host_errors(path, "list"):
            try:
                info = os.stat(real)
            except FileNotFoundError:
                raise FileNotFoundError(f"no such directory: {path!r}") from None
            if not stat.S_ISDIR(info.st_mode):
                raise NotADirectoryError(f"{path!r} is a file, not a directory")
            names = (f"{entry.name}/" if entry.is_dir() else entry.name for entry in real.iterdir())
            return tuple(sorted(names))

    def delete(self, path: str) -> None:
        real = self._resolve(path)
        # A symlink (whose target is under the root) is removed itself, like ``rm``.
        head, _, name = normalize_path(path).rpartition("/")
        entry = self._resolve(head, allow_root=True) / name
        with _host_errors(path, "delete"), self._lock:
            if entry.is_symlink():
                entry.unlink()  # not journaled: a restore puts back files, not links
                return
            if real.is_dir():
                raise IsADirectoryError(f"cannot delete {path!r}: it is a directory")
            info = os.lstat(real)
            if stat.S_ISREG(info.st_mode) and info.st_nlink == 1:
                self._record(real)
            # Another name of a hard-linked file (or a FIFO, a socket) is removed without a journal
            # entry: its bytes are not ours to read, so a restore cannot bring that name back.
            real.unlink()


def _check_file(path: str, info: os.stat_result, action: str) -> None:
    """Refuse what is not a regular file with one link (see the module docstring)."""
    if stat.S_ISDIR(info.st_mode):
        raise IsADirectoryError(f"cannot {action} {path!r}: it is a directory, not a file")
    if not stat.S_ISREG(info.st_mode):
        kind = _KINDS.get(stat.S_IFMT(info.st_mode), "not a regular file")
        raise UnsafePathError(f"cannot {action} {path!r}: it is {kind}, not a regular file")
    if info.st_nlink > 1:
        raise UnsafePathError(
            f"cannot {action} {path!r}: the file has {info.st_nlink} hard links, and another name for "
            "it may be outside the filesystem root"
        )


@contextmanager
def _host_errors(path: str, action: str) -> Generator[None, None, None]:
    """Turn an operating-system error into one naming ``path`` as given, never the host path.

    Errors this module raises itself carry no errno and pass through.
    """
    try:
        yield
    except OSError as exc:
        if exc.errno is None:
            raise
        raise _named(exc.errno, path, action, exc.strerror) from None


def _named(code: int, path: str, action: str, reason: str | None) -> OSError | UnsafePathError:
    if code == errno.ENOENT:
        return FileNotFoundError(f"no such file: {path!r}")
    if code == errno.EISDIR:
        return IsADirectoryError(f"cannot {action} {path!r}: it is a directory")
    if code == errno.ENOTDIR:
        return NotADirectoryError(f"cannot {action} {path!r}: a part of the path is a file, not a directory")
    if code in (errno.EACCES, errno.EPERM):
        return PermissionError(f"cannot {action} {path!r}: permission denied")
    if code == errno.ELOOP:
        return UnsafePathError(
            f"cannot {action} {path!r}: it does not resolve (a symbolic link loop, or a symbolic link "
            "where a file was expected)"
        )
    if code == errno.ENAMETOOLONG:
        return UnsafePathError(f"cannot {action} {path!r}: a name in it, or the whole path, is too long")
    if code == errno.ENXIO:
        return UnsafePathError(f"cannot {action} {path!r}: it is not a regular file")
    return OSError(code, f"cannot {action} {path!r}: {reason or os.strerror(code)}")
