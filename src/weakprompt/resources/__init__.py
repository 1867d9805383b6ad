"""Resources tools share: a registry keyed by type, and filesystems.

Snapshotable resources are rolled back together with the session when a
tool call fails; see ``specs/SESSIONS.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports
from ._errors import ResourceNotFoundError, UnsafePathError
from ._filesystem import Filesystem
from ._paths import normalize_path
from ._registry import ResourceRegistry, ResourceSnapshot, Snapshotable

if TYPE_CHECKING:
    from ._host_fs import HostFilesystem, HostSnapshot
    from ._memory_fs import InMemoryFilesystem, InMemorySnapshot

# name -> the module of this package that defines it. The filesystems load on first access
# (the host one loads pathlib); a tool context needs only the registry.
_LAZY: dict[str, str] = {
    "HostFilesystem": "._host_fs",
    "HostSnapshot": "._host_fs",
    "InMemoryFilesystem": "._memory_fs",
    "InMemorySnapshot": "._memory_fs",
}

__all__ = [
    "Filesystem",
    "HostFilesystem",
    "HostSnapshot",
    "InMemoryFilesystem",
    "InMemorySnapshot",
    "ResourceNotFoundError",
    "ResourceRegistry",
    "ResourceSnapshot",
    "Snapshotable",
    "UnsafePathError",
    "normalize_path",
]


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__)
