"""Replay a stored session offline: recorded replies, today's prompt and tools, each request checked.

``replay`` / ``replay_sync`` run a prompt again over a session of a store
with a :class:`ReplayAdapter` serving the recorded model replies, and
report the first :class:`ReplayDivergence` (``specs/REPLAY.md``); ``fork``
branches a session at a commit without copying its history.
"""

from __future__ import annotations

from ._adapter import RecordedTurn, ReplayAdapter
from ._divergence import DivergenceKind, ReplayDivergence
from ._fork import fork
from ._replay import ReplayReport, ToolMode, replay, replay_sync

__all__ = [
    "DivergenceKind",
    "RecordedTurn",
    "ReplayAdapter",
    "ReplayDivergence",
    "ReplayReport",
    "ToolMode",
    "fork",
    "replay",
    "replay_sync",
]
