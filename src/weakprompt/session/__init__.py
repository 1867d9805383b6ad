"""Sessions: typed slices of state, reducers, snapshots and rollback.

See ``specs/SESSIONS.md`` for the contract.
"""

from __future__ import annotations

from ._reducers import Reducer, SlicePolicy, append, replace_latest, upsert_by
from ._session import Session, SliceAccessor
from ._snapshot import SessionSnapshot, SnapshotMismatchError

__all__ = [
    "Reducer",
    "Session",
    "SessionSnapshot",
    "SliceAccessor",
    "SlicePolicy",
    "SnapshotMismatchError",
    "append",
    "replace_latest",
    "upsert_by",
]
