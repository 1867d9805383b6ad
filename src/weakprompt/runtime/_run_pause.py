"""The loop's pause, decision and journal steps (``specs/APPROVAL.md``), called from hooks in the loop."""

from __future__ import annotations

import hmac
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
    InlineDecision,
    Resumption,
    RunContext,
    RunStateWrite,
    RunStep,
    interrupted_text,
    plan_steps,
    reply_to_json,
)
from .approval import (
    APPROVAL_KEY_ENV,
    Approve,
    Decision,
    Deny,
    PausedRun,
    PendingCall,
    ResumeError,
    Supply,
    ToolCallPending,
    approval_key,
    sign_pending,
)
from .pause_events import DecisionKind, RunPaused, ToolCallDecided
from .pause_records import ApprovalNote

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
    "hold",
    "pending_call",
    "resume_steps",
    "write_journal",
]


def schema_hashes(tools: Sequence[AnyTool], names: Sequence[str], hashes: Sequence[str]) -> dict[str, str]:
    """Schema hash per tool name: the rendered ones, and the spec hash of any other tool offered."""
    known = dict(zip(names, hashes, strict=True))
    return {t.name: known.get(t.name) or content_hash(t.spec()) for t in tools}


def pending_call(evaluation: _Evaluation[Any], pending: ToolCallPending) -> PendingCall:
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


async def hold(evaluation: _Evaluation[Any], pending: ToolCallPending, turn: TurnRecord) -> None:
    """Keep a call waiting for a decision; one whose id another waiting call has is answered instead.

    A decision names its call by id, so two waiting calls with one id could
    not be told apart: the second gets a failed result (the model reads it)
    and never runs or waits.
    """
    call = pending.call
    if any(waiting.call_id == call.id for waiting in evaluation.pending):
        result: ToolResult[object] = ToolResult.error(repeated_id_text(call.name, call.id))
        execution = evaluation.dispatcher.answer(call, result)
        await evaluation._take_result(call, execution, turn)  # pyright: ignore[reportPrivateUsage]
        return
    evaluation.pending.append(pending_call(evaluation, pending))


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
    decided, evaluation.decided_inline = evaluation.decided_inline, None
    if not pending and not journaled and decided is None:
        return
    state: JSONObject | None = None
    key = approval_key() if pending else None  # a bad key fails before the turn is written
    if pending:
        from ..session import persist_state

        state = {
            "session": persist_state(evaluation.session).to_json(),
            "run": run_context(evaluation).to_json(),
        }
    session_id = evaluation.transcript.session_id

    def paused(seq: int, signed: tuple[PendingCall, ...]) -> None:
        evaluation.paused = PausedRun(session_id=session_id, seq=seq, head=turn.head, pending=signed)
        evaluation._publish(  # pyright: ignore[reportPrivateUsage]
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
    evaluation: _Evaluation[Any],
    reply: AssistantTurn | None,
    call_ids: Sequence[str] | None = None,
    pause: int = 0,
) -> None:
    """Record, before they start, the calls of a turn that is not stored yet (run on the store thread).

    ``pause``: the stored pause whose decided calls these are (0: none).
    """
    from ..store import pause_rows

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


def check_decisions(
    paused: PausedRun,
    decisions: Sequence[Decision],
    tools: Mapping[str, AnyTool] | None,
    hashes: Mapping[str, str] | None,
    *,
    store_id: str,
    key: bytes | None,
) -> None:
    """Refuse (:class:`ResumeError`) decisions that do not match the stored pending calls exactly.

    Each pending call is checked against its own token first (a stored row
    edited by hand fails; with an approval key, even one whose token was
    recomputed), then against the tool as the prompt defines it now (a
    changed tool fails), then the decisions: one per pending call, with its
    token, of a kind that fits, and edited arguments that validate.
    Without the prompt's ``tools`` and ``hashes`` (``None``: a check before
    queueing a resume elsewhere) the checks that need them are left out.
    """
    where = f"pause {paused.seq} of session {paused.session_id!r}"
    by_id: dict[str, PendingCall] = {}
    check_stored_tokens(paused, store_id=store_id, key=key)
    for waiting in paused.pending:
        if tools is not None and hashes is not None:
            _check_tool_unchanged(where, waiting, tools, hashes)
        if waiting.call_id in by_id:
            raise ResumeError(
                f"{where}: two stored calls have the id {waiting.call_id!r}: the row is damaged"
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
        if not same_token(decision.token, waiting.token):
            raise ResumeError(
                f"{where}: the token for call {decision.call_id!r} does not match: it was made for "
                "other arguments, another call, pause, session or store, or another tool definition"
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


def _check_tool_unchanged(
    where: str, waiting: PendingCall, tools: Mapping[str, AnyTool], hashes: Mapping[str, str]
) -> None:
    if waiting.tool not in tools:
        raise ResumeError(
            f"{where}: the prompt no longer offers tool {waiting.tool!r} (call {waiting.call_id!r})"
        )
    if hashes.get(waiting.tool) != waiting.schema_hash:
        raise ResumeError(
            f"{where}: tool {waiting.tool!r} changed since the pause (schema hash "
            f"{waiting.schema_hash[:12]} was shown for call {waiting.call_id!r}); pause a new run"
        )


def same_token(given: object, expected: str) -> bool:
    """Compare tokens in constant time (any text, even a value that is not text, compares)."""
    text = given if isinstance(given, str) else repr(given)
    return hmac.compare_digest(
        text.encode("utf-8", "surrogatepass"), expected.encode("utf-8", "surrogatepass")
    )


def check_stored_tokens(paused: PausedRun, *, store_id: str, key: bytes | None) -> None:
    """Refuse a pause whose stored calls do not match their own tokens (edited, or another key)."""
    signed = sign_pending(
        paused.pending, store_id=store_id, session_id=paused.session_id, seq=paused.seq, key=key
    )
    for waiting, expected in zip(paused.pending, signed, strict=True):
        if not same_token(expected.token, waiting.token):
            state = "set" if key is not None else "not set"
            raise ResumeError(
                f"pause {paused.seq} of session {paused.session_id!r}: the stored call {waiting.call_id!r} "
                "does not match its token: the row was altered, or the pause was made with another "
                f"approval key ({APPROVAL_KEY_ENV} is {state} here)"
            )


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


def approver_name(approver: object) -> str:
    """Who decided inline: the ``approve`` callback, by name (recorded as ``decided_by``)."""
    name = getattr(approver, "__qualname__", None)
    return f"approve={name if isinstance(name, str) else type(approver).__qualname__}"


async def decide_inline(evaluation: _Evaluation[Any]) -> None:
    """Ask the run's ``approve`` callback, then go on exactly as a resume with those decisions would.

    The pause has number 0 and its tokens name no store; it is stored only
    once decided, with the decided turn, as a decided pause whose decider
    is the callback (so ``decision_records`` lists it).
    """
    approver = evaluation.approver
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
                await evaluation._take_result(step.call, request, turn)  # pyright: ignore[reportPrivateUsage]
                continue
            await evaluation._take_result(step.call, outcome, turn, step.provenance)  # pyright: ignore[reportPrivateUsage]
        else:
            result: ToolResult[object] = ToolResult(message=step.text, success=not step.is_error)
            execution = evaluation.dispatcher.answer(step.call, result)
            await evaluation._take_result(step.call, execution, turn, step.provenance)  # pyright: ignore[reportPrivateUsage]
