"""Who decided what, when: every stored pause's calls and their decisions (``specs/APPROVAL.md``).

The one reader behind ``weakprompt approvals``, ``transcript show`` and the
inspector. The runtime keeps two records of a decision: the ``paused_runs``
row of the pause (its calls with their tokens and, once resumed, the
decisions, who made them and when), read here as :class:`PauseRecord`; and
the ``approval`` note in the metadata of each decided call's result commit,
written and read here as :class:`ApprovalNote`. Decisions made inline
(``run(..., approve=...)``) are stored as decided pauses too, with the
callback as the one who decided.

:func:`stored_pauses` never raises on a damaged row: it reads what it can
and says what it could not in ``problem`` (a viewer must show a broken
store, not fail on it); :func:`decision_records` is strict and raises.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Literal, TypeAlias

import attrs

from ..jsontypes import JSONObject, JSONValue
from ..store import pause_rows
from .approval import Approve, Decision, Deny, PendingKind, Supply, decisions_from_json, pending_from_json
from .pause_errors import ResumeError

if TYPE_CHECKING:
    from sqlalchemy import Connection

    from ..store import Store
    from ..store.pause_rows import PauseRow

__all__ = [
    "APPROVAL_KEY",
    "ApprovalNote",
    "CallDecision",
    "DecisionState",
    "PauseRecord",
    "PauseStatus",
    "approval_note",
    "decision_records",
    "read_pauses",
    "stored_pauses",
]

DecisionState: TypeAlias = Literal["pending", "approved", "approved_with_edits", "denied", "supplied"]
PauseStatus: TypeAlias = Literal["waiting", "decided"]

APPROVAL_KEY = "approval"
"""The key of a decided call's result commit metadata that holds its :class:`ApprovalNote`."""

_ACTIONS: dict[DecisionState, str] = {
    "pending": "pending",
    "approved": "approve",
    "approved_with_edits": "approve with edits",
    "denied": "deny",
    "supplied": "supply",
}

# What reading a row someone edited by hand can raise (the readers refuse it with one of these).
_DAMAGE = (AttributeError, KeyError, TypeError, ValueError, ResumeError)


def _json_text(value: JSONValue) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


@attrs.frozen(kw_only=True)
class CallDecision:
    """One call of one stored pause, and what became of it."""

    session_id: str
    seq: int
    """The pause's number in its session (1 for the first)."""
    paused_at: datetime | None
    """When the pause was stored (``None`` only when the stored time is damaged)."""
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
    is_error: bool = False
    """The result supplied is an error result."""

    @property
    def action(self) -> str:
        """The decision as a verb (``approve``, ``approve with edits``, ``deny``, ``supply``, ``pending``)."""
        return _ACTIONS[self.decision]

    @property
    def arguments_text(self) -> str:
        """The arguments shown, as JSON text."""
        return _json_text(self.arguments)

    @property
    def detail(self) -> str:
        """What goes with the decision: the edited arguments, the denial's message, the result supplied."""
        if self.decision == "approved_with_edits" and self.edited_arguments is not None:
            return f"arguments {_json_text(self.edited_arguments)}"
        if self.decision == "supplied":
            return f"{'an error result' if self.is_error else 'a result'}: {self.message}"
        return self.message


@attrs.frozen(kw_only=True)
class PauseRecord:
    """One stored pause: waiting for decisions, or decided (by whom, when), with each of its calls.

    ``problem`` says what could not be read of a damaged row; what could be
    read is kept all the same.
    """

    session_id: str
    seq: int
    status: PauseStatus
    created_at: str
    """When the pause was stored, as the store keeps it (ISO 8601 text)."""
    calls: tuple[CallDecision, ...] = ()
    """Every call of the pause, in the order it waited on them."""
    decided_by: str | None = None
    decided_at: str | None = None
    """When the pause was resumed, as the store keeps it (``None`` while it waits)."""
    problem: str | None = None

    @property
    def paused(self) -> bool:
        """The pause still waits for decisions."""
        return self.status == "waiting"

    @property
    def waiting(self) -> tuple[CallDecision, ...]:
        """The calls of a waiting pause, each with the token that decides it (none once decided)."""
        return tuple(call for call in self.calls if call.decision == "pending") if self.paused else ()

    @property
    def decided(self) -> tuple[CallDecision, ...]:
        """The calls that were decided."""
        return tuple(call for call in self.calls if call.decision != "pending")


def read_pauses(conn: Connection, session_id: str | None = None) -> tuple[PauseRecord, ...]:
    """Every stored pause (of one session, or of all), oldest first, inside the caller's transaction.

    A store older than the ``paused_runs`` table has none; a damaged row is
    kept with its ``problem``, never raised.
    """
    if not pause_rows.has_pause_table(conn):
        return ()
    return tuple(_pause(row) for row in pause_rows.pause_history(conn, session_id=session_id))


def stored_pauses(store: Store, session_id: str | None = None) -> tuple[PauseRecord, ...]:
    """:func:`read_pauses` in a read transaction of its own."""
    with store.read() as conn:
        return read_pauses(conn, session_id)


def decision_records(store: Store, session_id: str | None = None) -> list[CallDecision]:
    """Every call of every stored pause (of one session, or of all), oldest pause first, in call order.

    Strict, for a list someone acts on: a damaged pause raises :class:`ResumeError` naming it.
    """
    records: list[CallDecision] = []
    for pause in stored_pauses(store, session_id):
        if pause.problem is not None:
            raise ResumeError(
                f"pause {pause.seq} of session {pause.session_id!r}: the stored decisions are damaged: "
                f"{pause.problem}"
            )
        records.extend(pause.calls)
    return records


def _time(text: str | None, what: str, problems: list[str]) -> datetime | None:
    if text is None:
        return None
    try:
        return datetime.fromisoformat(text)
    except (TypeError, ValueError):
        problems.append(f"the {what} time {text!r} cannot be read")
        return None


def _pause(row: PauseRow) -> PauseRecord:
    problems: list[str] = []
    try:
        pending = pending_from_json(row.pending_json)
    except _DAMAGE as exc:
        problems.append(f"the pending calls cannot be read ({exc})")
        pending = ()
    decided: tuple[Decision, ...] = ()
    if row.decisions_json is not None:
        try:
            decided = decisions_from_json(row.decisions_json)
        except _DAMAGE as exc:
            problems.append(f"the decisions cannot be read ({exc})")
    paused_at = _time(row.created_at, "pause", problems)
    decided_at = _time(row.resumed_at, "decision", problems)
    by_id = {decision.call_id: decision for decision in decided}
    calls: list[CallDecision] = []
    for waiting in pending:
        decision = by_id.pop(waiting.call_id, None)
        state, edited, message, is_error = _state(decision, waiting.arguments)
        calls.append(
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
                is_error=is_error,
            )
        )
    for stray in by_id.values():  # a decision for a call the pause did not wait on: shown, and named
        state, edited, message, is_error = _state(stray, {})
        problems.append(f"a decision names call {stray.call_id!r}, which the pause did not wait on")
        calls.append(
            CallDecision(
                session_id=row.session_id,
                seq=row.seq,
                paused_at=paused_at,
                call_id=stray.call_id,
                tool="",
                kind="deferred" if isinstance(stray, Supply) else "approval",
                arguments={},
                token=stray.token,
                note="",
                decision=state,
                decided_by=row.decided_by,
                decided_at=decided_at,
                edited_arguments=edited,
                message=message,
                is_error=is_error,
            )
        )
    return PauseRecord(
        session_id=row.session_id,
        seq=row.seq,
        status="waiting" if row.status == "paused" else "decided",  # the table allows these two only
        created_at=row.created_at,
        calls=tuple(calls),
        decided_by=row.decided_by,
        decided_at=row.resumed_at,
        problem="; ".join(problems) or None,
    )


def _state(
    decision: Decision | None, shown: JSONObject
) -> tuple[DecisionState, JSONObject | None, str, bool]:
    if decision is None:
        return "pending", None, "", False
    if isinstance(decision, Approve):
        if decision.arguments is not None and decision.arguments != shown:
            return "approved_with_edits", decision.arguments, "", False
        return "approved", None, "", False
    if isinstance(decision, Deny):
        return "denied", None, decision.message, False
    return "supplied", None, decision.result, decision.is_error


# -- the note on a decided call's result commit -----------------------------------------------------


@attrs.frozen(kw_only=True)
class ApprovalNote:
    """How one call was decided, as its result commit's metadata says (under :data:`APPROVAL_KEY`).

    ``decision`` is what the runtime wrote: ``approved``, ``approved_with_edits``,
    ``denied``, ``supplied`` (or ``interrupted`` for a call a crash cut short);
    read back as stored, whatever it is.
    """

    decision: str
    decided_by: str | None = None
    message: str | None = None
    """A denial's message to the model."""
    original_arguments: JSONObject | None = None
    """The arguments the model asked for (``approved_with_edits``)."""
    arguments: JSONObject | None = None
    """The arguments the call ran with (``approved_with_edits``)."""

    def to_json(self) -> JSONObject:
        """The metadata value the runtime stores: absent parts left out."""
        note: JSONObject = {"decision": self.decision, "decided_by": self.decided_by}
        if self.message is not None:
            note["message"] = self.message
        if self.original_arguments is not None:
            note["original_arguments"] = self.original_arguments
        if self.arguments is not None:
            note["arguments"] = self.arguments
        return note

    @property
    def original_arguments_text(self) -> str | None:
        return None if self.original_arguments is None else _json_text(self.original_arguments)

    @property
    def arguments_text(self) -> str | None:
        return None if self.arguments is None else _json_text(self.arguments)


def approval_note(metadata: Mapping[str, JSONValue]) -> ApprovalNote | None:
    """The note a result commit's metadata carries, or ``None`` for a call nobody had to decide.

    Never raises: a part of another shape than the runtime writes is left out.
    """
    found = metadata.get(APPROVAL_KEY)
    if not isinstance(found, dict):
        return None
    decision = found.get("decision")
    if not isinstance(decision, str):
        return None

    def text(key: str) -> str | None:
        value = found.get(key)
        return value if isinstance(value, str) else None

    def obj(key: str) -> JSONObject | None:
        value = found.get(key)
        return value if isinstance(value, dict) else None

    return ApprovalNote(
        decision=decision,
        decided_by=text("decided_by"),
        message=text("message"),
        original_arguments=obj("original_arguments"),
        arguments=obj("arguments"),
    )
