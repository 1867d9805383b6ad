"""Sessions: typed slices of state, reducers, snapshots and rollback.

See ``specs/SESSIONS.md`` for the contract.
"""

from __future__ import annotations

from ._persist import PersistedState, SessionStateError, persist_state, restore_state
from ._reducers import Reducer, SlicePolicy, append, replace_latest, upsert_by
from ._session import DispatchedEvent, Session, SessionFork, SessionOperation, SliceAccessor, SliceWrite
from ._snapshot import SessionSnapshot, SnapshotMismatchError

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
