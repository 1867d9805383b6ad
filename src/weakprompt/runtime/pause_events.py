"""Events of pausing and resuming a run (``specs/APPROVAL.md``), published on the session's dispatcher."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

import attrs

from ..events import new_event_id
from .approval import PendingCall

__all__ = ["RunPaused", "RunResumed", "ToolCallDecided"]

DecisionKind = Literal["approved", "approved_with_edits", "denied", "supplied", "interrupted"]


@attrs.frozen(kw_only=True)
class RunPaused:
    """The run stopped for decisions; the pause (``seq``) is stored with the turn that caused it."""

    prompt_name: str
    session_id: str
    seq: int
    pending: tuple[PendingCall, ...]
    created_at: datetime
    event_id: str = attrs.field(factory=new_event_id)


@attrs.frozen(kw_only=True)
class RunResumed:
    """A paused run (``seq``), or one interrupted by a crash (``seq`` 0), continues."""

    prompt_name: str
    session_id: str
    seq: int
    decided_by: str | None
    created_at: datetime
    event_id: str = attrs.field(factory=new_event_id)


@attrs.frozen(kw_only=True)
class ToolCallDecided:
    """One waiting call was decided: by whom (when the caller said), how, and the message if any."""

    session_id: str
    call_id: str
    tool: str
    decision: DecisionKind
    decided_by: str | None
    message: str
    created_at: datetime
    event_id: str = attrs.field(factory=new_event_id)
