"""The loop's pause, decision and journal steps (``specs/APPROVAL.md``), called from hooks in the loop."""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from ..canonical import canonical_json, content_hash
from ..errors import VisibilityExpansionRequired
from ..jsontypes import JSONObject, JSONValue
from ..serde import SerdeError
from ..tools import ToolResult
from ._pausing import (
    AnswerStep,
    Resumption,
    RunContext,
    RunStateWrite,
    RunStep,
    interrupted_text,
    plan_steps,
    reply_to_json,
)
from .approval import (
    Approve,
    Decision,
    Deny,
    PausedRun,
    PendingCall,
    ResumeError,
    Supply,
    ToolCallPending,
    approval_token,
)
from .pause_events import DecisionKind, RunPaused, ToolCallDecided

if TYPE_CHECKING:
    from ..messages import AssistantTurn
    from ..session import Session
    from ..tools import AnyTool
    from ..transcript.turns import TurnRecord
    from .loop import _Evaluation  # pyright: ignore[reportPrivateUsage]

__all__ = [
    "attach_run_state",
    "check_decisions",
    "decide_inline",
    "pending_call",
    "resume_steps",
    "write_journal",
]


def schema_hashes(tools: Sequence[AnyTool], names: Sequence[str], hashes: Sequence[str]) -> dict[str, str]:
    """Schema hash per tool name: the rendered ones, and the spec hash of any other tool offered."""
    known = dict(zip(names, hashes, strict=True))
    return {t.name: known.get(t.name) or content_hash(t.spec()) for t in tools}


def pending_call(evaluation: _Evaluation[Any], pending: ToolCallPending) -> PendingCall:
    call = pending.call
    arguments = cast("JSONObject", call.decoded_arguments)  # the call was validated: an object
    rendered = evaluation.rendered
    tools = tuple(evaluation.dispatcher.tools.values())
    schema = schema_hashes(tools, rendered.tool_names, rendered.tool_hashes)[call.name]
    session_id = evaluation.transcript.session_id
    return PendingCall(
        call_id=call.id,
        tool=call.name,
        kind=pending.kind,
        arguments=arguments,
        schema_hash=schema,
        token=approval_token(session_id, call.id, schema, arguments),
        note=pending.note,
    )


def run_context(evaluation: _Evaluation[Any]) -> RunContext:
    return RunContext(
        turn_start=evaluation.outputs.turn_start,
        expanded=tuple(evaluation.expanded),
        turns=evaluation.turns_before + evaluation.turns,
    )


def attach_run_state(evaluation: _Evaluation[Any], turn: TurnRecord) -> None:
    """Store the pause the turn ends in (unless decided inline) and drop the journal row, with the turn."""
    pending = tuple(evaluation.pending) if evaluation.approver is None else ()
    journaled, evaluation.journaled = evaluation.journaled, False
    if not pending and not journaled:
        return
    state: JSONObject | None = None
    if pending:
        from ..session import persist_state

        state = {
            "session": persist_state(evaluation.session).to_json(),
            "run": run_context(evaluation).to_json(),
        }
    session_id = evaluation.transcript.session_id

    def paused(seq: int) -> None:
        evaluation.paused = PausedRun(session_id=session_id, seq=seq, head=turn.head, pending=pending)
        evaluation._publish(  # pyright: ignore[reportPrivateUsage]
            RunPaused(
                prompt_name=evaluation.name,
                session_id=session_id,
                seq=seq,
                pending=pending,
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
            clear_journal=journaled,
            on_committed=paused,
        )
    )


def write_journal(
    evaluation: _Evaluation[Any], reply: AssistantTurn | None, call_ids: Sequence[str] | None = None
) -> None:
    """Record, before they start, the calls of a turn that is not stored yet (run on the store thread)."""
    from ..store import pause_rows

    ids = call_ids if call_ids is not None else [c.id for c in reply.tool_calls] if reply is not None else []
    row = pause_rows.JournalRow(
        session_id=evaluation.transcript.session_id,
        head_hash=evaluation.head,
        reply_json=reply_to_json(reply) if reply is not None else None,
        calls_json=canonical_json({"calls": list[JSONValue](ids), "run": run_context(evaluation).to_json()}),
        created_at=evaluation.session.clock.now().isoformat(),
    )
    with evaluation.transcript.store.write() as conn:
        pause_rows.write_journal(conn, row)
    evaluation.journaled = True  # the turn's transaction removes the row


def check_decisions(
    paused: PausedRun,
    decisions: Sequence[Decision],
    tools: Mapping[str, AnyTool] | None,
    hashes: Mapping[str, str] | None,
) -> None:
    """Refuse (:class:`ResumeError`) decisions that do not match the stored pending calls exactly.

    Each pending call is checked against its own token first (a stored row
    edited by hand fails), then against the tool as the prompt defines it
    now (a changed tool fails), then the decisions: one per pending call,
    with its token, of a kind that fits, and edited arguments that validate.
    Without the prompt's ``tools`` and ``hashes`` (``None``: a check before
    queueing a resume elsewhere) the checks that need them are left out.
    """
    where = f"pause {paused.seq} of session {paused.session_id!r}"
    by_id: dict[str, PendingCall] = {}
    for waiting in paused.pending:
        expected = approval_token(paused.session_id, waiting.call_id, waiting.schema_hash, waiting.arguments)
        if expected != waiting.token:
            raise ResumeError(
                f"{where}: the stored call {waiting.call_id!r} was altered (its token does not match)"
            )
        if tools is None or hashes is None:
            pass
        elif waiting.tool not in tools:
            raise ResumeError(
                f"{where}: the prompt no longer offers tool {waiting.tool!r} (call {waiting.call_id!r})"
            )
        elif hashes.get(waiting.tool) != waiting.schema_hash:
            raise ResumeError(
                f"{where}: tool {waiting.tool!r} changed since the pause (schema hash "
                f"{waiting.schema_hash[:12]} was shown for call {waiting.call_id!r}); pause a new run"
            )
        by_id[waiting.call_id] = waiting
    seen: set[str] = set()
    for decision in decisions:
        if not isinstance(decision, (Approve, Deny, Supply)):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ResumeError(f"{where}: {decision!r} is not an Approve, Deny or Supply decision")
        waiting = by_id.get(decision.call_id)
        if waiting is None:
            raise ResumeError(
                f"{where}: no pending call {decision.call_id!r} (pending: {', '.join(by_id) or 'none'})"
            )
        if decision.call_id in seen:
            raise ResumeError(f"{where}: call {decision.call_id!r} is decided twice")
        seen.add(decision.call_id)
        if decision.token != waiting.token:
            raise ResumeError(
                f"{where}: the token for call {decision.call_id!r} does not match: it was made for "
                "other arguments, another session or another tool definition"
            )
        if isinstance(decision, Approve):
            if waiting.kind == "deferred":
                raise ResumeError(
                    f"{where}: call {decision.call_id!r} is deferred: supply its result (Supply)"
                )
            if decision.arguments is not None and tools is not None:
                _check_arguments(where, waiting, decision.arguments, tools[waiting.tool])
    missing = [call_id for call_id in by_id if call_id not in seen]
    if missing:
        raise ResumeError(f"{where}: no decision for pending call(s) {', '.join(missing)}")


def _check_arguments(where: str, waiting: PendingCall, arguments: JSONObject, tool: AnyTool) -> None:
    try:
        if not isinstance(arguments, dict):  # pyright: ignore[reportUnnecessaryIsInstance]  # caller's value
            raise TypeError("not an object")
        canonical_json(arguments)
        tool.parse_arguments(arguments)
    except SerdeError as exc:
        raise ResumeError(
            f"{where}: the edited arguments for call {waiting.call_id!r} are invalid: {exc}"
        ) from exc
    except (TypeError, ValueError) as exc:
        raise ResumeError(
            f"{where}: the edited arguments for call {waiting.call_id!r} are not a JSON object: {exc}"
        ) from exc


async def decide_inline(evaluation: _Evaluation[Any]) -> None:
    """Ask the run's ``approve`` callback, then go on exactly as a resume with those decisions would."""
    approver = evaluation.approver
    assert approver is not None
    session_id = evaluation.transcript.session_id
    paused = PausedRun(session_id=session_id, seq=0, head=evaluation.head, pending=tuple(evaluation.pending))
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
    )
    evaluation.pending.clear()
    steps = plan_steps(paused.pending, decisions, None)
    publish_decisions(evaluation, steps, None)
    resumption = Resumption(steps)
    await evaluation._staged_turn(lambda turn: resume_steps(evaluation, turn, resumption))  # pyright: ignore[reportPrivateUsage]


def publish_decisions(
    evaluation: _Evaluation[Any], steps: Sequence[RunStep | AnswerStep], decided_by: str | None
) -> None:
    publish_decisions_for(evaluation.session, evaluation.transcript.session_id, steps, decided_by)


def publish_decisions_for(
    session: Session, session_id: str, steps: Sequence[RunStep | AnswerStep], decided_by: str | None
) -> None:
    """One ``ToolCallDecided`` per decided call, on the session's dispatcher."""
    from ..events import publish

    for step in steps:
        provenance = step.provenance
        if provenance is None:
            continue
        message = provenance.get("message")
        publish(
            session.dispatcher,
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
    evaluation: _Evaluation[Any], turn: TurnRecord, resumption: Resumption | None = None
) -> None:
    """The resumed turn: the reply a crash left unstored (if any), then each decided call, in order."""
    plan = resumption if resumption is not None else evaluation.resumption
    assert plan is not None
    if plan.reply is not None:
        reply = plan.reply
        await evaluation.io(lambda: evaluation._record_reply(reply, turn))  # pyright: ignore[reportPrivateUsage]
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
            steps.append(AnswerStep(step.call, text, True, {"decision": "interrupted", "decided_by": None}))
        else:
            steps.append(step)
    run_ids = [s.call.id for s in steps if isinstance(s, RunStep)]
    if evaluation.journal and run_ids:
        await evaluation.io(lambda: write_journal(evaluation, plan.reply, run_ids))
    for step in steps:
        if isinstance(step, RunStep):
            if step.provenance is not None:
                evaluation.approved.add(step.call.id)
            try:
                outcome = await evaluation.dispatcher.execute_async(step.call)
            except ToolCallPending as pending:
                evaluation.pending.append(pending_call(evaluation, pending))
                continue
            except VisibilityExpansionRequired as request:
                await evaluation._take_result(step.call, request, turn)  # pyright: ignore[reportPrivateUsage]
                continue
            await evaluation._take_result(step.call, outcome, turn, step.provenance)  # pyright: ignore[reportPrivateUsage]
        else:
            result: ToolResult[object] = ToolResult(message=step.text, success=not step.is_error)
            execution = evaluation.dispatcher.answer(step.call, result)
            await evaluation._take_result(step.call, execution, turn, step.provenance)  # pyright: ignore[reportPrivateUsage]
