"""Resources tools share: a registry keyed by type, and filesystems.

Snapshotable resources are rolled back together with the session when a
tool call fails; see ``specs/SESSIONS.md``.
"""

from __future__ import annotations

from ._errors import ResourceNotFoundError, UnsafePathError
from ._filesystem import Filesystem
from ._host_fs import HostFilesystem
from ._memory_fs import InMemoryFilesystem, InMemorySnapshot
from ._paths import normalize_path
from ._registry import ResourceRegistry, ResourceSnapshot, Snapshotable

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
