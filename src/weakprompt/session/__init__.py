"""Sessions: typed slices of state, reducers, snapshots and rollback.

See ``specs/SESSIONS.md`` for the contract.
"""

from __future__ import annotations

from ._reducers import Reducer, SlicePolicy, append, replace_latest, upsert_by
from ._session import DispatchedEvent, Session, SessionFork, SessionOperation, SliceAccessor, SliceWrite
from ._snapshot import SessionSnapshot, SnapshotMismatchError

__all__ = [
    "DispatchedEvent",
    "Reducer",
    "Session",
    "SessionFork",
    "SessionOperation",
    "SessionSnapshot",
    "SliceAccessor",
    "SliceWrite",
    "SlicePolicy",
    "SnapshotMismatchError",
    "append",
    "replace_latest",
    "upsert_by",
]
