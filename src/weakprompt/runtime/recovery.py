"""The plan of a run that stopped without a pause to decide: after a crash, from the last stored turn.

``resume`` reads the session's last pause and its run journal, then asks
:func:`recovery_plan` what to carry out: the reply a crash left unstored
(its calls re-run only if their tool is idempotent), the decided calls of a
claimed pause whose turn was not stored, or nothing but the next model call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..canonical import parse_canonical_json
from ..transcript import Transcript
from .approval import PausedRun, decisions_from_json, pending_from_json
from .decision_checks import check_stored_tokens
from .pause_errors import ResumeError
from .resumption import AnswerStep, Resumption, RunContext, RunStep, plan_steps, reply_from_json

if TYPE_CHECKING:
    from ..store import Store
    from ..store.pause_rows import JournalRow, PauseRow
    from ..transcript.options import CompileView

__all__ = ["paused_from_row", "recovery_plan"]


def paused_from_row(row: PauseRow) -> PausedRun:
    """The pause a stored row holds."""
    return PausedRun(
        session_id=row.session_id,
        seq=row.seq,
        head=row.head_hash,
        pending=pending_from_json(row.pending_json),
    )


def _replayed(pause: PauseRow, *, store_id: str, key: bytes | None) -> tuple[RunStep | AnswerStep, ...]:
    """The steps of a claimed pause's stored decisions, replayed after a crash (its tokens checked again)."""

    paused = paused_from_row(pause)
    check_stored_tokens(paused, store_id=store_id, key=key)
    decisions = decisions_from_json(pause.decisions_json or "[]")
    by_id = {waiting.call_id: waiting.token for waiting in paused.pending}
    for decision in decisions:
        if by_id.get(decision.call_id) != decision.token:
            raise ResumeError(
                f"pause {pause.seq} of session {pause.session_id!r}: the stored decision for call "
                f"{decision.call_id!r} does not carry its token: the row was altered"
            )
    return plan_steps(paused.pending, decisions, pause.decided_by)


def _answered_since(view: CompileView, head: str | None) -> set[str]:
    """Ids of the calls answered after commit ``head`` (all of them when it is not found).

    A model may reuse a call id from an earlier turn: a result before the
    pause does not answer the pause's call of that id.
    """
    hashes = [commit.hash for commit in view.commits]
    start = hashes.index(head) + 1 if head in hashes else 0
    return {m.tool_call_id for m in view.context.messages[start:] if m.role == "tool" and m.tool_call_id}


def recovery_plan(
    store: Store,
    session_id: str,
    pause: PauseRow | None,
    journal: JournalRow | None,
    *,
    store_id: str,
    key: bytes | None,
) -> tuple[Resumption, PauseRow | None]:
    """The plan after a crash (see ``resume_sync``), and the pause whose state to restore."""
    view = Transcript(store, session_id).compile_view()
    compiled = view.context
    if journal is not None:
        data = parse_canonical_json(journal.calls_json)
        info = data if isinstance(data, dict) else {}
        context = RunContext.from_json(info.get("run"))
        calls = info.get("calls")
        started = frozenset(str(c) for c in calls) if isinstance(calls, list) else frozenset[str]()
        if journal.reply_json is not None:  # the model's reply and its calls were never stored
            reply = reply_from_json(journal.reply_json)
            steps = tuple(RunStep(call, None) for call in reply.tool_calls)
            return Resumption(steps, reply=reply, context=context, interrupted=started), None
        journaled = info.get("pause", 0)  # absent in rows of older code: no pause named, nothing replayed
        if pause is not None and pause.decisions_json is not None and journaled == pause.seq:
            # this pause's decided turn, not stored: its decisions, and no older pause's, are replayed
            steps = _replayed(pause, store_id=store_id, key=key)
            return Resumption(steps, context=context, interrupted=started, pause=pause.seq), pause
    if pause is not None and pause.decisions_json is not None:
        answered = _answered_since(view, pause.head_hash)
        pending = pending_from_json(pause.pending_json)
        if any(p.call_id not in answered for p in pending):  # claimed, but stopped before running any
            steps = _replayed(pause, store_id=store_id, key=key)
            state = parse_canonical_json(pause.state_json)
            context = RunContext.from_json(state.get("run") if isinstance(state, dict) else None)
            return Resumption(steps, context=context, pause=pause.seq), pause
    last = compiled.messages[-1] if compiled.messages else None
    if last is None:
        raise ResumeError(f"session {session_id!r} has no stored run to resume")
    if last.role == "assistant" and not last.tool_calls:
        raise ResumeError(
            f"the last run of session {session_id!r} finished with a final answer: nothing to resume"
        )
    return Resumption(()), None
