"""Events of pausing and resuming a run (``specs/APPROVAL.md``), and the waiting call a pause shows.

Published on the session's bus by the loop (``weakprompt.runtime``), which
loads them with the first run that pauses or resumes.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

import attrs

from ..jsontypes import JSONObject
from ._types import PendingKind, new_event_id

__all__ = ["DecisionKind", "PendingCall", "RunPaused", "RunResumed", "ToolCallDecided"]

DecisionKind = Literal["approved", "approved_with_edits", "denied", "supplied", "interrupted"]


@attrs.frozen
class PendingCall:
    """One call a paused run waits on: shown to whoever decides, with the token to decide it."""

    call_id: str
    tool: str
    kind: PendingKind
    arguments: JSONObject
    schema_hash: str
    token: str
    note: str = ""

    def to_json(self) -> JSONObject:
        return {
            "call_id": self.call_id,
            "tool": self.tool,
            "kind": self.kind,
            "arguments": self.arguments,
            "schema_hash": self.schema_hash,
            "token": self.token,
            "note": self.note,
        }


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
