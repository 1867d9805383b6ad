"""Pausing a run, and going on from a pause: the one module the loop asks about decisions.

The loop's parts call this interface, each with the run's
:class:`~weakprompt.runtime.evaluation.Evaluation`:

- :func:`hold`: a call waits for a decision (its tool needs approval, or defers);
- :func:`attach_run_state`: store, with the turn, the pause it ends in, the
  inline decisions it carried out, and drop the journal row;
- :func:`write_journal`: before a turn's calls start, record them (a crash
  is then resumed from there);
- :func:`decide_inline`: ask the run's ``approve=`` callback, then carry out
  its decisions as a resume would;
- :func:`resume_steps`: carry out a :class:`~weakprompt.runtime.resumption.Resumption`.

The state of a pause lives on the evaluation (``pending``,
``decided_inline``, ``paused``, ``journal``, ``journaled``); only this
module changes it. ``specs/APPROVAL.md`` describes the behaviour.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, cast

import attrs

from ..canonical import canonical_json
from ..errors import VisibilityExpansionRequired
from ..events import publish
from ..jsontypes import JSONObject, JSONValue
from ..session import persist_state
from ..store import pause_rows
from ..tools import ToolResult
from .approval import (
    Decision,
    PausedRun,
    PendingCall,
    ToolCallPending,
    approval_key,
    decisions_to_json,
    pending_to_json,
    sign_pending,
)
from .decision_checks import check_decisions, schema_hashes
from .pause_events import DecisionKind, RunPaused, ToolCallDecided
from .pause_records import ApprovalNote
from .recording import record_reply
from .resumption import (
    AnswerStep,
    Resumption,
    RunContext,
    RunStep,
    interrupted_text,
    plan_steps,
    reply_to_json,
)
from .tool_calls import take_result
from .turns import staged_turn

if TYPE_CHECKING:
    from sqlalchemy import Connection

    from ..clock import Clock
    from ..messages import AssistantTurn
    from ..session import Session
    from ..transcript.turns import TurnRecord
    from .evaluation import Evaluation

__all__ = [
    "InlineDecision",
    "RunStateWrite",
    "attach_run_state",
    "decide_inline",
    "hold",
    "publish_decisions_for",
    "resume_steps",
    "write_journal",
]


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


def pending_call(evaluation: Evaluation[Any], pending: ToolCallPending) -> PendingCall:
    """The waiting call, without its token yet: that is made once the pause has its number."""
    call = pending.call
    arguments = cast("JSONObject", call.decoded_arguments)  # the call was validated: an object
    rendered = evaluation.rendered
    tools = tuple(evaluation.dispatcher.tools.values())
    schema = schema_hashes(tools, rendered.tool_names, rendered.tool_hashes)[call.name]
    return PendingCall(
        call_id=call.id,
        tool=call.name,
        kind=pending.kind,
        arguments=arguments,
        schema_hash=schema,
        token="",
        note=pending.note,
    )


def repeated_id_text(tool: str, call_id: str) -> str:
    return (
        f"Tool {tool!r} was not run: call id {call_id!r} is already used by another call of this reply "
        "that waits for a decision. Send this call again with an id of its own."
    )


async def hold(evaluation: Evaluation[Any], pending: ToolCallPending, turn: TurnRecord) -> None:
    """Keep a call waiting for a decision; one whose id another waiting call has is answered instead.

    A decision names its call by id, so two waiting calls with one id could
    not be told apart: the second gets a failed result (the model reads it)
    and never runs or waits.
    """
    call = pending.call
    if any(waiting.call_id == call.id for waiting in evaluation.pending):
        result: ToolResult[object] = ToolResult.error(repeated_id_text(call.name, call.id))
        execution = evaluation.dispatcher.answer(call, result)
        await take_result(evaluation, call, execution, turn)
        return
    evaluation.pending.append(pending_call(evaluation, pending))


def run_context(evaluation: Evaluation[Any]) -> RunContext:
    return RunContext(
        turn_start=evaluation.outputs.turn_start,
        expanded=tuple(evaluation.expanded),
        turns=evaluation.turns_before + evaluation.turns,
    )


def attach_run_state(evaluation: Evaluation[Any], turn: TurnRecord) -> None:
    """Store the pause the turn ends in (unless decided inline) and drop the journal row, with the turn."""
    pending = tuple(evaluation.pending) if evaluation.settings.approve is None else ()
    journaled, evaluation.journaled = evaluation.journaled, False
    decided, evaluation.decided_inline = evaluation.decided_inline, None
    if not pending and not journaled and decided is None:
        return
    state: JSONObject | None = None
    key = approval_key() if pending else None  # a bad key fails before the turn is written
    if pending:
        state = {
            "session": persist_state(evaluation.session).to_json(),
            "run": run_context(evaluation).to_json(),
        }
    session_id = evaluation.transcript.session_id

    def paused(seq: int, signed: tuple[PendingCall, ...]) -> None:
        evaluation.paused = PausedRun(session_id=session_id, seq=seq, head=turn.head, pending=signed)
        evaluation.publish(
            RunPaused(
                prompt_name=evaluation.name,
                session_id=session_id,
                seq=seq,
                pending=signed,
                created_at=evaluation.session.clock.now(),
            )
        )

    turn.attach(
        RunStateWrite(
            session_id=session_id,
            clock=evaluation.session.clock,
            head=lambda: turn.head,
            pending=pending,
            state=state,
            key=key,
            decided=decided,
            clear_journal=journaled,
            on_committed=paused,
        )
    )


def write_journal(
    evaluation: Evaluation[Any],
    reply: AssistantTurn | None,
    call_ids: Sequence[str] | None = None,
    pause: int = 0,
) -> None:
    """Record, before they start, the calls of a turn that is not stored yet (run on the store thread).

    ``pause``: the stored pause whose decided calls these are (0: none).
    """
    ids = call_ids if call_ids is not None else [c.id for c in reply.tool_calls] if reply is not None else []
    calls: JSONObject = {
        "calls": list[JSONValue](ids),
        "run": run_context(evaluation).to_json(),
        "pause": pause,
    }
    row = pause_rows.JournalRow(
        session_id=evaluation.transcript.session_id,
        head_hash=evaluation.head,
        reply_json=reply_to_json(reply) if reply is not None else None,
        calls_json=canonical_json(calls),
        created_at=evaluation.session.clock.now().isoformat(),
    )
    with evaluation.transcript.store.write() as conn:
        pause_rows.write_journal(conn, row)
    evaluation.journaled = True  # the turn's transaction removes the row


def approver_name(approver: object) -> str:
    """Who decided inline: the ``approve`` callback, by name (recorded as ``decided_by``)."""
    name = getattr(approver, "__qualname__", None)
    return f"approve={name if isinstance(name, str) else type(approver).__qualname__}"


async def decide_inline(evaluation: Evaluation[Any]) -> None:
    """Ask the run's ``approve`` callback, then go on exactly as a resume with those decisions would.

    The pause has number 0 and its tokens name no store; it is stored only
    once decided, with the decided turn, as a decided pause whose decider
    is the callback (so ``decision_records`` lists it).
    """
    approver = evaluation.settings.approve
    assert approver is not None
    session_id = evaluation.transcript.session_id
    key = approval_key()
    pending = sign_pending(tuple(evaluation.pending), store_id="", session_id=session_id, seq=0, key=key)
    paused = PausedRun(session_id=session_id, seq=0, head=evaluation.head, pending=pending)
    answered = approver(paused)
    if inspect.isawaitable(answered):
        answered = await answered
    decisions = tuple(answered)
    rendered = evaluation.rendered
    tools = evaluation.dispatcher.tools
    check_decisions(
        paused,
        decisions,
        tools,
        schema_hashes(tuple(tools.values()), rendered.tool_names, rendered.tool_hashes),
        store_id="",
        key=key,
    )
    evaluation.pending.clear()
    who = approver_name(approver)
    evaluation.decided_inline = InlineDecision(paused, decisions, who)  # stored with the decided turn
    steps = plan_steps(paused.pending, decisions, who)
    publish_decisions(evaluation, steps, who)
    resumption = Resumption(steps)
    await staged_turn(evaluation, lambda turn: resume_steps(evaluation, turn, resumption))


def publish_decisions(
    evaluation: Evaluation[Any], steps: Sequence[RunStep | AnswerStep], decided_by: str | None
) -> None:
    publish_decisions_for(evaluation.session, evaluation.transcript.session_id, steps, decided_by)


def publish_decisions_for(
    session: Session, session_id: str, steps: Sequence[RunStep | AnswerStep], decided_by: str | None
) -> None:
    """One ``ToolCallDecided`` per decided call, on the session's dispatcher."""
    for step in steps:
        provenance = step.provenance
        if provenance is None:
            continue
        message = provenance.get("message")
        publish(
            session.bus,
            ToolCallDecided(
                session_id=session_id,
                call_id=step.call.id,
                tool=step.call.name,
                decision=cast("DecisionKind", provenance.get("decision")),
                decided_by=decided_by,
                message=message if isinstance(message, str) else "",
                created_at=session.clock.now(),
            ),
            about="for a decision on a paused run",
        )


async def resume_steps(
    evaluation: Evaluation[Any], turn: TurnRecord, resumption: Resumption | None = None
) -> None:
    """The resumed turn: the reply a crash left unstored (if any), then each decided call, in order."""
    plan = resumption if resumption is not None else evaluation.resumption
    assert plan is not None
    if plan.reply is not None:
        reply = plan.reply
        await evaluation.io(lambda: record_reply(evaluation, reply, turn))
    steps: list[RunStep | AnswerStep] = []
    tools = evaluation.dispatcher.tools
    for step in plan.steps:
        tool = tools.get(step.call.name)
        if (
            isinstance(step, RunStep)
            and step.call.id in plan.interrupted
            and not (tool is not None and tool.idempotent)
            and not (step.provenance is None and evaluation.dispatcher.holds(step.call))
        ):  # a call held for approval never started: it is held again instead
            text = interrupted_text(step.call.name)
            steps.append(AnswerStep(step.call, text, True, ApprovalNote(decision="interrupted").to_json()))
        else:
            steps.append(step)
    run_ids = [s.call.id for s in steps if isinstance(s, RunStep)]
    if evaluation.journal and run_ids:
        await evaluation.io(lambda: write_journal(evaluation, plan.reply, run_ids, plan.pause))
    for step in steps:
        if isinstance(step, RunStep):
            # A person's approval covers this one execution of exactly this call, nothing later.
            approved = step.provenance is not None
            try:
                outcome = await evaluation.dispatcher.execute_async(step.call, approved=approved)
            except ToolCallPending as pending:
                await hold(evaluation, pending, turn)
                continue
            except VisibilityExpansionRequired as request:
                await take_result(evaluation, step.call, request, turn)
                continue
            await take_result(evaluation, step.call, outcome, turn, step.provenance)
        else:
            result: ToolResult[object] = ToolResult(message=step.text, success=not step.is_error)
            execution = evaluation.dispatcher.answer(step.call, result)
            await take_result(evaluation, step.call, execution, turn, step.provenance)
