"""Resources tools share: a registry keyed by type, and filesystems.

Snapshotable resources are rolled back together with the session when a
tool call fails; see ``specs/SESSIONS.md``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from ._errors import ResourceNotFoundError, UnsafePathError
from ._filesystem import Filesystem
from ._memory_fs import InMemoryFilesystem, InMemorySnapshot
from ._paths import normalize_path
from ._registry import ResourceRegistry, ResourceSnapshot, Snapshotable

if TYPE_CHECKING:
    from ._host_fs import HostFilesystem

__all__ = [
    "Filesystem",
    "HostFilesystem",
    "InMemoryFilesystem",
    "InMemorySnapshot",
    "ResourceNotFoundError",
    "ResourceRegistry",
    "ResourceSnapshot",
    "Snapshotable",
    "UnsafePathError",
    "normalize_path",
]


def __getattr__(name: str) -> object:
    # The host filesystem loads pathlib: only when it is asked for.
    if name != "HostFilesystem":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value: object = importlib.import_module("._host_fs", __name__).HostFilesystem
    globals()[name] = value
    return value
