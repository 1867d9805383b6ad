"""Who decided what, when: every stored pause's calls and their decisions (``specs/APPROVAL.md``).

The one reader behind ``weakprompt approvals``, ``transcript show`` and the
inspector. A pause still waiting lists its calls as ``"pending"`` with their
tokens; a decided one lists each call's decision, who made it and when.
Decisions made inline (``run(..., approve=...)``) are stored as decided
pauses too, with the callback as the one who decided.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Literal, TypeAlias

import attrs

from .approval import Approve, Decision, Deny, PendingKind, decisions_from_json, pending_from_json
from .pause_errors import ResumeError

if TYPE_CHECKING:
    from ..jsontypes import JSONObject
    from ..store import Store
    from ..store.pause_rows import PauseRow

__all__ = ["CallDecision", "DecisionState", "decision_records"]

DecisionState: TypeAlias = Literal["pending", "approved", "approved_with_edits", "denied", "supplied"]


@attrs.frozen(kw_only=True)
class CallDecision:
    """One call of one stored pause, and what became of it."""

    session_id: str
    seq: int
    """The pause's number in its session (1 for the first)."""
    paused_at: datetime
    call_id: str
    tool: str
    kind: PendingKind
    arguments: JSONObject
    """The arguments shown to whoever decides (the model's)."""
    token: str
    note: str
    decision: DecisionState
    decided_by: str | None = None
    decided_at: datetime | None = None
    edited_arguments: JSONObject | None = None
    """The arguments the call ran with instead (``approved_with_edits``)."""
    message: str = ""
    """A denial's message to the model, or the result supplied."""


def decision_records(store: Store, session_id: str | None = None) -> list[CallDecision]:
    """Every call of every stored pause (of one session, or of all), oldest pause first, in call order."""
    from ..store import pause_rows

    with store.read() as conn:
        rows = pause_rows.pause_history(conn, session_id=session_id)
    return [record for row in rows for record in _records(row)]


def _records(row: PauseRow) -> list[CallDecision]:
    pending = pending_from_json(row.pending_json)
    try:
        decided = decisions_from_json(row.decisions_json) if row.decisions_json is not None else ()
    except (AttributeError, KeyError, TypeError, ValueError, ResumeError) as exc:
        raise ResumeError(
            f"pause {row.seq} of session {row.session_id!r}: the stored decisions are damaged: {exc}"
        ) from exc
    by_id = {decision.call_id: decision for decision in decided}
    paused_at = datetime.fromisoformat(row.created_at)
    decided_at = datetime.fromisoformat(row.resumed_at) if row.resumed_at is not None else None
    records: list[CallDecision] = []
    for waiting in pending:
        state, edited, message = _state(by_id.get(waiting.call_id), waiting.arguments)
        records.append(
            CallDecision(
                session_id=row.session_id,
                seq=row.seq,
                paused_at=paused_at,
                call_id=waiting.call_id,
                tool=waiting.tool,
                kind=waiting.kind,
                arguments=waiting.arguments,
                token=waiting.token,
                note=waiting.note,
                decision=state,
                decided_by=row.decided_by if state != "pending" else None,
                decided_at=decided_at if state != "pending" else None,
                edited_arguments=edited,
                message=message,
            )
        )
    return records


def _state(decision: Decision | None, shown: JSONObject) -> tuple[DecisionState, JSONObject | None, str]:
    if decision is None:
        return "pending", None, ""
    if isinstance(decision, Approve):
        if decision.arguments is not None and decision.arguments != shown:
            return "approved_with_edits", decision.arguments, ""
        return "approved", None, ""
    if isinstance(decision, Deny):
        return "denied", None, decision.message
    return "supplied", None, decision.result
