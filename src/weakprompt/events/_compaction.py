"""The event a compaction of the compiled context publishes (``specs/COMPACTION.md``)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

import attrs

from ._types import new_event_id

__all__ = ["CompactionTier", "Compacted"]

CompactionTier = Literal["slim", "summary", "drop"]
"""``slim``: old tool results as references; ``summary``: old turns as one summary; ``drop``: left out."""


@attrs.frozen(kw_only=True)
class Compacted:
    """The history passed the window threshold and one tier shrank it; ``commit_hash`` records it.

    ``covered`` lists the commits the compacted view no longer shows in full
    (they stay in the transcript: ``recall_history`` brings them back);
    the token counts are the request's estimate before and after.
    """

    session_id: str | None
    tier: CompactionTier
    commit_hash: str
    covered: tuple[str, ...]
    tokens_before: int
    tokens_after: int
    context_window: int
    created_at: datetime
    event_id: str = attrs.field(factory=new_event_id)
