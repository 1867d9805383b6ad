"""ResourceRegistry: typed lookup and joint snapshots of snapshotable resources."""

from __future__ import annotations

from typing import Protocol

import pytest

from weakprompt.errors import ConfigurationError
from weakprompt.resources import (
    Filesystem,
    InMemoryFilesystem,
    ResourceNotFoundError,
    ResourceRegistry,
    ResourceSnapshot,
)


class Counter:
    """A snapshotable resource with mutable state."""

    def __init__(self) -> None:
        self.value = 0

    def snapshot(self) -> int:
        return self.value

    def restore(self, snapshot: object, /) -> None:
        assert isinstance(snapshot, int)
        self.value = snapshot


class HttpClient:
    """Not snapshotable."""


class Greeter(Protocol):
    def greet(self) -> str: ...


def test_get_returns_the_registered_resource() -> None:
    fs = InMemoryFilesystem()
    reg = ResourceRegistry({Filesystem: fs})
    assert reg.get(Filesystem) is fs
    assert reg.get_optional(Filesystem) is fs
    assert Filesystem in reg
    assert len(reg) == 1
    assert reg.types() == (Filesystem,)


def test_get_of_a_missing_type_names_it_and_the_registered_ones() -> None:
    reg = ResourceRegistry()
    with pytest.raises(
        ResourceNotFoundError, match=r"no HttpClient resource is registered \(registered: none\)"
    ):
        reg.get(HttpClient)
    reg.register(Counter, Counter())
    with pytest.raises(LookupError, match=r"registered: Counter"):
        reg.get(HttpClient)
    assert reg.get_optional(HttpClient) is None


def test_registration_checks_the_type_when_it_can() -> None:
    reg = ResourceRegistry()
    with pytest.raises(TypeError, match="HttpClient object is not a Counter"):
        reg.register(Counter, HttpClient())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="expected a class"):
        reg.register("Counter", Counter())  # type: ignore[arg-type]

    class Hello:
        def greet(self) -> str:
            return "hi"

    reg.register(Greeter, Hello())  # a non-runtime protocol cannot be checked; accepted
    assert reg.get(Greeter).greet() == "hi"


def test_double_registration_needs_replace() -> None:
    first, second = Counter(), Counter()
    reg = ResourceRegistry({Counter: first})
    with pytest.raises(ConfigurationError, match="Counter resource is already registered"):
        reg.register(Counter, second)
    assert reg.get(Counter) is first
    reg.register(Counter, second, replace=True)
    assert reg.get(Counter) is second


def test_snapshot_and_restore_cover_every_snapshotable_resource() -> None:
    counter = Counter()
    fs = InMemoryFilesystem({"a.txt": "before"})
    reg = ResourceRegistry({Counter: counter, Filesystem: fs, HttpClient: HttpClient()})
    snap = reg.snapshot()
    assert isinstance(snap, ResourceSnapshot)
    assert len(snap.entries) == 2
    counter.value = 5
    fs.write_text("a.txt", "after")
    reg.restore(snap)
    assert counter.value == 0
    assert fs.read_text("a.txt") == "before"


def test_a_resource_under_two_types_is_snapshotted_once() -> None:
    fs = InMemoryFilesystem()
    reg = ResourceRegistry({Filesystem: fs, InMemoryFilesystem: fs})
    assert len(reg.snapshot().entries) == 1


def test_restore_goes_to_the_object_that_was_snapshotted() -> None:
    old, new = Counter(), Counter()
    reg = ResourceRegistry({Counter: old})
    snap = reg.snapshot()
    old.value = 3
    new.value = 7
    reg.register(Counter, new, replace=True)
    reg.restore(snap)
    assert old.value == 0
    assert new.value == 7


def test_restore_rejects_other_values() -> None:
    with pytest.raises(TypeError, match="takes a ResourceSnapshot"):
        ResourceRegistry().restore({})  # type: ignore[arg-type]
