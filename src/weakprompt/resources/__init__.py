"""Resources tools share: a registry keyed by type, and filesystems.

Snapshotable resources are rolled back together with the session when a
tool call fails; see ``specs/SESSIONS.md``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from ._errors import ResourceNotFoundError, UnsafePathError
from ._filesystem import Filesystem
from ._paths import normalize_path
from ._registry import ResourceRegistry, ResourceSnapshot, Snapshotable

if TYPE_CHECKING:
    from ._host_fs import HostFilesystem
    from ._memory_fs import InMemoryFilesystem, InMemorySnapshot

# name -> the module of this package that defines it. The filesystems load on first access
# (the host one loads pathlib); a tool context needs only the registry.
_LAZY: dict[str, str] = {
    "HostFilesystem": "._host_fs",
    "InMemoryFilesystem": "._memory_fs",
    "InMemorySnapshot": "._memory_fs",
}

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
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value: object = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
