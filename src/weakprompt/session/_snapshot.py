"""The value a session snapshot is: a frozen copy of its STATE slice table."""

from __future__ import annotations

from types import MappingProxyType
from typing import TypeVar, cast

import attrs

from ..errors import WeakpromptError

__all__ = ["SessionSnapshot", "SnapshotMismatchError"]

S = TypeVar("S")


class SnapshotMismatchError(WeakpromptError, ValueError):
    """A snapshot was handed to a session other than the one that took it."""


@attrs.frozen(eq=True)
class SessionSnapshot:
    """The STATE slices of one session at one moment.

    Only the slice table is copied: the slices themselves are immutable
    tuples shared with the session, so taking a snapshot costs the same
    whatever the amount of state.
    """

    session_id: str
    slices: MappingProxyType[type[object], tuple[object, ...]]

    def values(self, slice_type: type[S]) -> tuple[S, ...]:
        """The values the slice held when the snapshot was taken."""
        return cast("tuple[S, ...]", self.slices.get(slice_type, ()))
