"""Sessions: typed slices of state, reducers, snapshots and rollback.

See ``specs/SESSIONS.md`` for the contract.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from ._reducers import Reducer, SlicePolicy, append, replace_latest, upsert_by
from ._session import DispatchedEvent, Session, SessionFork, SessionOperation, SliceAccessor, SliceWrite
from ._snapshot import SessionSnapshot, SnapshotMismatchError

if TYPE_CHECKING:
    from ._persist import PersistedState, SessionStateError, persist_state, restore_state

# Persisting state (for paused runs) resolves on first access: a plain run never needs it.
_LAZY: dict[str, str] = {
    "PersistedState": "._persist",
    "SessionStateError": "._persist",
    "persist_state": "._persist",
    "restore_state": "._persist",
}

__all__ = [
    "DispatchedEvent",
    "PersistedState",
    "Reducer",
    "Session",
    "SessionFork",
    "SessionOperation",
    "SessionSnapshot",
    "SliceAccessor",
    "SliceWrite",
    "SlicePolicy",
    "SessionStateError",
    "SnapshotMismatchError",
    "persist_state",
    "append",
    "replace_latest",
    "restore_state",
    "upsert_by",
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
