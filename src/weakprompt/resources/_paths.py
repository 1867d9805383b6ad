"""Validation of the relative POSIX paths every Filesystem takes."""

from __future__ import annotations

from ..canonical import find_surrogate
from ._errors import UnsafePathError

__all__ = ["normalize_path"]


def normalize_path(path: str, *, allow_root: bool = False) -> str:
    """Check ``path`` and return it in canonical form (``a/b``, no ``.`` parts).

    Absolute paths, ``..`` parts, backslashes, NUL bytes and lone surrogates
    (not text: they cannot name a file) are refused with an
    :class:`UnsafePathError` naming the path. ``""`` and ``"."`` name the
    root, which only directory operations accept (``allow_root``).
    """
    if not isinstance(path, str):
        raise TypeError(f"filesystem paths are str, got {type(path).__name__}: {path!r}")
    if "\x00" in path:
        raise UnsafePathError(f"path {path!r} contains a NUL byte")
    at = find_surrogate(path)
    if at is not None:
        raise UnsafePathError(f"path {path!r} contains a lone surrogate at index {at}: not valid text")
    if "\\" in path:
        raise UnsafePathError(f"path {path!r} contains a backslash; use '/' as the separator")
    if path.startswith("/"):
        raise UnsafePathError(f"path {path!r} is absolute; paths are relative to the filesystem root")
    parts = [part for part in path.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise UnsafePathError(f"path {path!r} contains '..'; paths may not leave the filesystem root")
    if not parts and not allow_root:
        raise UnsafePathError(f"path {path!r} names the root directory, not a file")
    return "/".join(parts)
