"""Sessions: typed slices of state, reducers, snapshots and rollback.

See ``specs/SESSIONS.md`` for the contract.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports
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


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__)
