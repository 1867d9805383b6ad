"""What the loop stores to pause a run and to survive a crash (``specs/APPROVAL.md``).

Kept out of ``loop.py``: the loop calls these from a few small hooks.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, cast

import attrs

from ..canonical import canonical_json, parse_canonical_json
from ..jsontypes import JSONObject, JSONValue
from ..messages import AssistantTurn, FinishReason, ToolCall, Usage
from .approval import (
    Approve,
    Decision,
    Deny,
    PausedRun,
    PendingCall,
    Supply,
    decisions_to_json,
    pending_to_json,
    sign_pending,
)
from .pause_records import ApprovalNote

if TYPE_CHECKING:
    from sqlalchemy import Connection

    from ..clock import Clock

__all__ = [
    "AnswerStep",
    "InlineDecision",
    "Resumption",
    "RunContext",
    "RunStateWrite",
    "RunStep",
    "interrupted_text",
    "plan_steps",
    "reply_from_json",
    "reply_to_json",
]


@attrs.frozen
class RunContext:
    """What a resumed run needs besides the session: where this run's input began, sections opened.

    ``turns``: the model calls the run made before it stopped (over every
    earlier attempt), so that ``max_turns`` caps the whole run, not each
    resumption of it.
    """

    turn_start: str | None = None
    expanded: tuple[str, ...] = ()
    turns: int = 0

    def to_json(self) -> JSONObject:
        expanded = list[JSONValue](self.expanded)
        return {"turn_start": self.turn_start, "expanded": expanded, "turns": self.turns}

    @classmethod
    def from_json(cls, data: JSONValue) -> RunContext:
        if not isinstance(data, dict):
            return cls()
        start = data.get("turn_start")
        expanded = data.get("expanded")
        keys = tuple(str(k) for k in expanded) if isinstance(expanded, list) else ()
        turns = data.get("turns")  # absent in pauses stored before it was kept
        made = turns if isinstance(turns, int) and not isinstance(turns, bool) and turns > 0 else 0
        return cls(turn_start=start if isinstance(start, str) else None, expanded=keys, turns=made)


@attrs.frozen
class RunStep:
    """Run this call (approved, possibly with edited arguments) through the dispatcher."""

    call: ToolCall
    provenance: JSONObject | None
    """How a person decided it; ``None`` for a call re-run after a crash (its tool is idempotent)."""


@attrs.frozen
class AnswerStep:
    """Answer this call without running it: a denial, a supplied result, an interruption."""

    call: ToolCall
    text: str
    is_error: bool
    provenance: JSONObject


@attrs.frozen
class Resumption:
    """How a resumed run begins: an uncommitted reply to store first (after a crash), then its steps."""

    steps: tuple[RunStep | AnswerStep, ...]
    reply: AssistantTurn | None = None
    context: RunContext = RunContext()
    interrupted: frozenset[str] = frozenset()
    """Calls that may have started before a crash: re-run only if their tool is idempotent."""
    pause: int = 0
    """The stored pause whose decisions these steps carry out (0: none, or decided inline).

    Kept in the journal row of the decided turn, so that after a crash only
    that pause's decisions are replayed, never an older pause's.
    """


def plan_steps(
    pending: Sequence[PendingCall], decisions: Sequence[Decision], decided_by: str | None
) -> tuple[RunStep | AnswerStep, ...]:
    """Steps for already-checked decisions, in the order the calls are pending."""
    by_id = {d.call_id: d for d in decisions}
    steps: list[RunStep | AnswerStep] = []
    for waiting in pending:
        decision = by_id[waiting.call_id]
        original = ToolCall(waiting.call_id, waiting.tool, waiting.arguments)
        if isinstance(decision, Approve):
            if decision.arguments is not None and decision.arguments != waiting.arguments:
                note = ApprovalNote(
                    decision="approved_with_edits",
                    decided_by=decided_by,
                    original_arguments=waiting.arguments,
                    arguments=decision.arguments,
                )
                edited = ToolCall(waiting.call_id, waiting.tool, decision.arguments)
                steps.append(RunStep(edited, note.to_json()))
            else:
                note = ApprovalNote(decision="approved", decided_by=decided_by)
                steps.append(RunStep(original, note.to_json()))
        elif isinstance(decision, Deny):
            text = f"Tool {waiting.tool!r} was not run: the call was denied. {decision.message}".strip()
            note = ApprovalNote(decision="denied", decided_by=decided_by, message=decision.message)
            steps.append(AnswerStep(original, text, True, note.to_json()))
        else:
            assert isinstance(decision, Supply)
            note = ApprovalNote(decision="supplied", decided_by=decided_by)
            steps.append(AnswerStep(original, decision.result, decision.is_error, note.to_json()))
    return tuple(steps)


def interrupted_text(tool: str) -> str:
    return (
        f"Tool {tool!r} was interrupted: the run stopped while this call was running, so it may or may "
        "not have taken effect. It was not run again because the tool is not marked idempotent."
    )


def reply_to_json(reply: AssistantTurn) -> str:
    usage = reply.usage
    return canonical_json(
        {
            "text": reply.text,
            "tool_calls": [
                {"id": c.id, "name": c.name, "arguments": c.arguments_json()} for c in reply.tool_calls
            ],
            "usage": [usage.input_tokens, usage.output_tokens, usage.cached_input_tokens, usage.model_calls],
            "finish_reason": reply.finish_reason,
        }
    )


def reply_from_json(text: str) -> AssistantTurn:
    data = cast("dict[str, JSONValue]", parse_canonical_json(text))
    calls = cast("list[dict[str, str]]", data["tool_calls"])
    usage = cast("list[int]", data["usage"])
    return AssistantTurn(
        text=str(data["text"]),
        tool_calls=tuple(ToolCall(c["id"], c["name"], c["arguments"]) for c in calls),
        usage=Usage(*usage),
        finish_reason=cast("FinishReason", data["finish_reason"]),
    )


@attrs.frozen
class InlineDecision:
    """Decisions an ``approve=`` callback made: stored with the turn they decided, as a decided pause."""

    paused: PausedRun
    decisions: tuple[Decision, ...]
    decided_by: str


@attrs.define
class RunStateWrite:
    """Rows a turn stores in its transaction: the pause it ends in (if any); the journal row goes.

    The pending calls get their tokens here, once the pause's number and the
    store's id are known (signed with ``key``, see ``runtime.approval``).
    """

    session_id: str
    clock: Clock
    head: Callable[[], str | None]
    pending: tuple[PendingCall, ...] = ()
    state: JSONObject | None = None
    key: bytes | None = None
    decided: InlineDecision | None = None
    clear_journal: bool = True
    on_committed: Callable[[int, tuple[PendingCall, ...]], None] | None = None
    seq: int = 0

    def write(self, conn: Connection) -> None:
        from ..store import pause_rows

        if self.clear_journal:
            pause_rows.clear_journal(conn, self.session_id)
        if self.decided is not None:
            self._record_inline(conn, self.decided)
        if not self.pending:
            return
        self.seq = pause_rows.next_pause_seq(conn, self.session_id)
        self.pending = sign_pending(
            self.pending,
            store_id=pause_rows.store_id(conn),
            session_id=self.session_id,
            seq=self.seq,
            key=self.key,
        )
        pause_rows.insert_pause(
            conn,
            pause_rows.PauseRow(
                session_id=self.session_id,
                seq=self.seq,
                status="paused",
                head_hash=self.head(),
                pending_json=pending_to_json(self.pending),
                state_json=canonical_json(self.state or {}),
                created_at=self.clock.now().isoformat(),
            ),
        )

    def _record_inline(self, conn: Connection, decided: InlineDecision) -> None:
        """A row for the inline pause, already decided: who decided which call, listed like any other.

        Its calls keep the tokens the callback was shown (pause 0, no store):
        it is never resumed, only read.
        """
        from ..store import pause_rows

        now = self.clock.now().isoformat()
        pause_rows.insert_pause(
            conn,
            pause_rows.PauseRow(
                session_id=self.session_id,
                seq=pause_rows.next_pause_seq(conn, self.session_id),
                status="resumed",
                head_hash=decided.paused.head,
                pending_json=pending_to_json(decided.paused.pending),
                state_json="{}",
                created_at=now,
                decisions_json=decisions_to_json(decided.decisions),
                decided_by=decided.decided_by,
                resumed_at=now,
            ),
        )

    def committed(self) -> None:
        if self.pending and self.on_committed is not None:
            self.on_committed(self.seq, self.pending)
