"""Reducers: pure functions from (slice state, event) to the next slice state.

A slice's state is an immutable tuple, so a reducer can never edit state in
place: it returns a new tuple, and the old one stays valid for any snapshot
that still holds it. That is what makes snapshots free.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Hashable
from typing import TypeAlias, TypeVar

__all__ = ["Reducer", "SlicePolicy", "append", "replace_latest", "upsert_by"]

S = TypeVar("S")
E = TypeVar("E")
K = TypeVar("K", bound=Hashable)

Reducer: TypeAlias = Callable[[tuple[S, ...], E], tuple[S, ...]]
"""``(current state, event) -> new state``; must return a tuple and not mutate."""


class SlicePolicy(enum.Enum):
    """How a slice behaves when the session is rolled back.

    ``STATE`` slices are working state: captured by ``snapshot()`` and put
    back by ``restore()``. ``LOG`` slices are a record of what happened (for
    example every ``ToolInvoked``): a rollback must not erase history, so
    they are neither captured nor restored.
    """

    STATE = "state"
    LOG = "log"


def append(state: tuple[S, ...], event: S) -> tuple[S, ...]:
    """Add the event to the end of the slice."""
    return (*state, event)


def replace_latest(state: tuple[S, ...], event: S) -> tuple[S, ...]:
    """Keep only the event: the slice holds one current value."""
    del state
    return (event,)


def upsert_by(key: Callable[[S], K]) -> Reducer[S, S]:
    """A reducer that replaces the item with the event's key, or appends it.

    The replaced item keeps its position, so the slice's order is the order in
    which keys first appeared.
    """

    def upsert(state: tuple[S, ...], event: S) -> tuple[S, ...]:
        wanted = key(event)
        for index, item in enumerate(state):
            if key(item) == wanted:
                return (*state[:index], event, *state[index + 1 :])
        return (*state, event)

    upsert.__qualname__ = f"upsert_by({getattr(key, '__qualname__', repr(key))})"
    return upsert
