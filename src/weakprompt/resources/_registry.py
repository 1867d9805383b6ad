"""A registry of shared resources (filesystem, clients, ...) keyed by type.

Resources that can capture and restore their own state implement
:class:`Snapshotable`; the registry snapshots all of them together so a
failed tool call can be rolled back across the session *and* its resources.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Protocol, TypeVar, cast, runtime_checkable

import attrs

from ..errors import ConfigurationError
from ._errors import ResourceNotFoundError

__all__ = ["ResourceRegistry", "ResourceSnapshot", "Snapshotable"]

T = TypeVar("T")


@runtime_checkable
class Snapshotable(Protocol):
    """State that can be captured and later put back exactly.

    ``snapshot()`` should be cheap (it runs before every tool call) and its
    result opaque to callers; ``restore()`` accepts only this object's own
    snapshots.
    """

    def snapshot(self) -> object: ...

    def restore(self, snapshot: object, /) -> None: ...


@attrs.frozen
class ResourceSnapshot:
    """The captured state of every snapshotable resource, each with its owner.

    Keeping the owner means a resource replaced after the snapshot is not
    handed a snapshot that belongs to another object.
    """

    entries: tuple[tuple[Snapshotable, object], ...]


class ResourceRegistry:
    """Resources looked up by the type they were registered under.

    Register under the interface callers ask for (``Filesystem``), not the
    implementation class. Thread-safe.
    """

    def __init__(self, resources: Mapping[type[object], object] | None = None) -> None:
        self._lock = threading.Lock()
        self._resources: dict[type[object], object] = {}
        for tp, resource in (resources or {}).items():
            self.register(tp, resource)

    def register(self, tp: type[T], resource: T, *, replace: bool = False) -> None:
        """Make ``resource`` available as ``tp``.

        Registering a type twice is a :class:`ConfigurationError` unless
        ``replace`` is true, so a second component cannot silently swap out
        a resource another one relies on.
        """
        if not isinstance(tp, type):
            raise TypeError(f"ResourceRegistry.register: expected a class as the key, got {tp!r}")
        try:
            matches = isinstance(resource, tp)
        except TypeError:  # a Protocol that is not runtime-checkable cannot be tested
            matches = True
        if not matches:
            raise TypeError(
                f"ResourceRegistry.register: {type(resource).__name__} object is not a {tp.__name__}"
            )
        key = cast("type[object]", tp)
        with self._lock:
            if key in self._resources and not replace:
                raise ConfigurationError(
                    f"a {tp.__name__} resource is already registered; pass replace=True to swap it"
                )
            self._resources[key] = resource

    def get(self, tp: type[T]) -> T:
        """The resource registered as ``tp``; raises :class:`ResourceNotFoundError`."""
        key = cast("type[object]", tp)
        resources = self._resources
        if key not in resources:
            known = ", ".join(sorted(t.__name__ for t in self._resources)) or "none"
            raise ResourceNotFoundError(f"no {tp.__name__} resource is registered (registered: {known})")
        return cast(T, resources[key])

    def get_optional(self, tp: type[T]) -> T | None:
        """The resource registered as ``tp``, or None."""
        return cast("T | None", self._resources.get(cast("type[object]", tp)))

    def __contains__(self, tp: object) -> bool:
        return isinstance(tp, type) and cast("type[object]", tp) in self._resources

    def __len__(self) -> int:
        return len(self._resources)

    def types(self) -> tuple[type[object], ...]:
        """The registered types, in registration order."""
        return tuple(self._resources)

    def has_snapshotable(self) -> bool:
        """Whether any resource rolls back with the session (concurrent tool calls cannot share one)."""
        with self._lock:
            return any(isinstance(resource, Snapshotable) for resource in self._resources.values())

    def snapshot(self) -> ResourceSnapshot:
        """Capture every registered resource that is :class:`Snapshotable`."""
        with self._lock:
            resources = list(self._resources.values())
        seen: set[int] = set()
        entries: list[tuple[Snapshotable, object]] = []
        for resource in resources:
            if isinstance(resource, Snapshotable) and id(resource) not in seen:
                seen.add(id(resource))
                entries.append((resource, resource.snapshot()))
        return ResourceSnapshot(tuple(entries))

    def restore(self, snapshot: ResourceSnapshot) -> None:
        """Put every captured resource back into its captured state."""
        if not isinstance(snapshot, ResourceSnapshot):
            raise TypeError(
                f"ResourceRegistry.restore takes a ResourceSnapshot, got {type(snapshot).__name__}"
            )
        for resource, state in snapshot.entries:
            resource.restore(state)
