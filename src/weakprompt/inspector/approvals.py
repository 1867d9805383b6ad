"""Approvals as the store keeps them: the pauses of a session and how each tool call was decided.

Two records, both written by the runtime (``specs/APPROVAL.md``): the
``paused_runs`` table has one row per pause, with the calls it waited on
(and their tokens), and, once resumed, the decisions, who made them
(``decided_by``) and when (``resumed_at``); and a decided call's result
commit carries ``{"approval": {"decision", "decided_by", ...}}`` in its
metadata (calls decided inline by ``approve=`` have only that one). Both
are read here, read-only, for the inspector and ``transcript show``; a
damaged row is shown as damaged, never raised. A store older than the
table has no pauses.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

import attrs
from sqlalchemy import Connection, RowMapping, inspect, select

from ..jsontypes import JSONValue
from ..runtime.approval import Approve, Deny, ResumeError, decisions_from_json, pending_from_json
from ..store import Store, tables
from ._json import as_object, as_str

__all__ = [
    "APPROVAL_KEY",
    "CallDecision",
    "DecidedCall",
    "PauseView",
    "WaitingCall",
    "call_decision",
    "read_pauses",
    "session_pauses",
]

APPROVAL_KEY = "approval"
"""The key of a decided call's result commit metadata that says how it was decided."""

_PAUSES = tables.paused_runs


@attrs.frozen
class CallDecision:
    """How a person decided one call, from its result commit (``decision`` as the runtime names it:
    ``approved``, ``approved_with_edits``, ``denied``, ``supplied``)."""

    decision: str
    decided_by: str | None
    message: str | None = None
    original_arguments: str | None = None
    arguments: str | None = None


@attrs.frozen
class WaitingCall:
    """A call a pause waits on, as it was shown to whoever decides: with the token that decides it."""

    call_id: str
    tool: str
    kind: str  # "approval" or "deferred"
    arguments: str
    token: str
    note: str = ""


@attrs.frozen
class DecidedCall:
    """One decision of a resumed pause: which call, what was decided, and its detail."""

    call_id: str
    tool: str
    decision: str  # "approve", "approve with edits", "deny", "supply"
    detail: str = ""


@attrs.frozen
class PauseView:
    """One pause of a session: waiting (``status == "paused"``) or decided (``"resumed"``).

    ``problem`` says what could not be read of a damaged row; what could be
    read is shown all the same.
    """

    session_id: str
    seq: int
    status: str
    created_at: str
    waiting: tuple[WaitingCall, ...] = ()
    decided: tuple[DecidedCall, ...] = ()
    decided_by: str | None = None
    decided_at: str | None = None
    problem: str | None = None

    @property
    def paused(self) -> bool:
        return self.status == "paused"


def _json_text(value: JSONValue) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def call_decision(metadata: Mapping[str, JSONValue]) -> CallDecision | None:
    """The decision a result commit records, or ``None`` for a call nobody had to decide."""
    found = as_object(metadata.get(APPROVAL_KEY))
    decision = as_str(found.get("decision"))
    if decision is None:
        return None
    original, edited = found.get("original_arguments"), found.get("arguments")
    return CallDecision(
        decision=decision,
        decided_by=as_str(found.get("decided_by")),
        message=as_str(found.get("message")),
        original_arguments=None if original is None else _json_text(original),
        arguments=None if edited is None else _json_text(edited),
    )


def _pause(row: RowMapping) -> PauseView:
    problems: list[str] = []
    waiting: tuple[WaitingCall, ...] = ()
    tools: dict[str, str] = {}
    try:
        pending = pending_from_json(str(row["pending_json"]))
    except (ResumeError, ValueError, TypeError) as exc:
        problems.append(f"the pending calls cannot be read ({exc})")
        pending = ()
    for call in pending:
        tools[call.call_id] = call.tool
    status = str(row["status"])
    if status == "paused":
        waiting = tuple(
            WaitingCall(p.call_id, p.tool, p.kind, _json_text(p.arguments), p.token, p.note) for p in pending
        )
    decided: list[DecidedCall] = []
    stored = row["decisions_json"]
    if stored is not None:
        try:
            decisions = decisions_from_json(str(stored))
        except (ResumeError, ValueError, TypeError, AttributeError) as exc:
            problems.append(f"the decisions cannot be read ({exc})")
            decisions = ()
        for decision in decisions:
            tool = tools.get(decision.call_id, "")
            if isinstance(decision, Approve):
                edited = decision.arguments is not None
                detail = "" if decision.arguments is None else f"arguments {_json_text(decision.arguments)}"
                decided.append(
                    DecidedCall(decision.call_id, tool, "approve with edits" if edited else "approve", detail)
                )
            elif isinstance(decision, Deny):
                decided.append(DecidedCall(decision.call_id, tool, "deny", decision.message))
            else:
                kind = "an error result" if decision.is_error else "a result"
                decided.append(DecidedCall(decision.call_id, tool, "supply", f"{kind}: {decision.result}"))
    seq = row["seq"]
    return PauseView(
        session_id=str(row["session_id"]),
        seq=seq if isinstance(seq, int) else 0,
        status=status,
        created_at=str(row["created_at"]),
        waiting=waiting,
        decided=tuple(decided),
        decided_by=None if row["decided_by"] is None else str(row["decided_by"]),
        decided_at=None if row["resumed_at"] is None else str(row["resumed_at"]),
        problem="; ".join(problems) or None,
    )


def read_pauses(conn: Connection, session_id: str) -> tuple[PauseView, ...]:
    """Every pause of ``session_id``, first to last (none when the store has no ``paused_runs``)."""
    if not inspect(conn).has_table(_PAUSES.name):
        return ()
    query = select(_PAUSES).where(_PAUSES.c.session_id == session_id).order_by(_PAUSES.c.seq)
    return tuple(_pause(row) for row in conn.execute(query).mappings())


def session_pauses(store: Store, session_id: str) -> tuple[PauseView, ...]:
    """:func:`read_pauses` in a read transaction of its own."""
    with store.read() as conn:
        return read_pauses(conn, session_id)
