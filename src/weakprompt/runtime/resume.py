"""Continue a stored run: after a pause, with decisions; after a crash, from the last stored turn.

Everything comes from the store, the prompt and the adapter: ``resume`` can
run in another process, hours later (``specs/APPROVAL.md``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, TypeVar

import attrs

from ..canonical import parse_canonical_json
from ..safetext import lone_surrogate, type_name
from ._sync import run_sync
from .loop import DEFAULT_MAX_TURNS, ToolWrapper, run
from .pause_errors import ResumeError
from .redaction import Redactor, default_redact

if TYPE_CHECKING:
    from ..budget import Budget, BudgetTracker
    from ..deadlines import Deadline
    from ..model import ProviderAdapter
    from ..prompt import Prompt
    from ..resources import ResourceRegistry
    from ..session import PersistedState, Session
    from ..store import Store
    from ..store.pause_rows import JournalRow, PauseRow
    from ..transcript.options import CompileView
    from ._pausing import AnswerStep, Resumption, RunContext, RunStep
    from .approval import Approver, Decision, PausedRun
    from .response import PromptResponse
    from .results import ToolOutputSettings
    from .run_events import EventCallback

__all__ = ["check_decisions_for", "paused_run", "paused_runs", "resume", "resume_async"]

OutputT = TypeVar("OutputT")


@attrs.frozen
class _Tokens:
    """What a pause's tokens are checked with here: the store's id and this process's approval key."""

    store_id: str
    key: bytes | None


def _paused(row: PauseRow) -> PausedRun:
    from .approval import PausedRun, pending_from_json

    return PausedRun(
        session_id=row.session_id,
        seq=row.seq,
        head=row.head_hash,
        pending=pending_from_json(row.pending_json),
    )


def paused_run(store: Store, session_id: str) -> PausedRun | None:
    """The pause session ``session_id`` waits in, or ``None`` when it waits for nothing."""
    from ..store import pause_rows

    with store.read() as conn:
        rows = pause_rows.paused_rows(conn, session_id=session_id)
    return _paused(rows[-1]) if rows else None


def paused_runs(store: Store) -> list[PausedRun]:
    """Every run of the store waiting for decisions, oldest first."""
    from ..store import pause_rows

    with store.read() as conn:
        return [_paused(row) for row in pause_rows.paused_rows(conn)]


def check_decisions_for(
    store: Store,
    session_id: str,
    decisions: Sequence[Decision],
    *,
    seq: int | None = None,
    decided_by: str | None = None,
) -> PausedRun:
    """Check ``decisions`` against the pause ``session_id`` waits in, writing nothing; that pause.

    For deciding in one place and resuming in another (a queue): it refuses
    (:class:`ResumeError`) what can be told from the store alone: no pause
    waits, or not pause ``seq``, or it was decided already; a stored call was
    altered; a pending call has no decision, two, or a wrong token. The
    checks that need the prompt (a changed tool, edited arguments) and the
    claim of the pause are :func:`resume_async`'s. ``decided_by`` is
    refused here too when the store could not keep it.
    """
    _check_decided_by(decided_by)
    from ..store import pause_rows
    from ._run_pause import check_decisions
    from .approval import approval_key

    with store.read() as conn:
        pause = pause_rows.latest_pause(conn, session_id)
        store_id = pause_rows.store_id(conn) if pause is not None else ""
    if pause is None:
        raise ResumeError(f"session {session_id!r} has no paused run: nothing is waiting for decisions")
    if pause.status != "paused" or (seq is not None and pause.seq != seq):
        asked = pause.seq if seq is None else seq
        raise ResumeError(
            f"pause {asked} of session {session_id!r} is not waiting for decisions (the session's last "
            f"pause is {pause.seq}, {pause.status}"
            + (f" by {pause.decided_by}" if pause.decided_by and pause.status != "paused" else "")
            + ")"
        )
    paused = _paused(pause)
    check_decisions(paused, tuple(decisions), None, None, store_id=store_id, key=approval_key())
    return paused


def resume(
    store: Store,
    session_id: str,
    decisions: Sequence[Decision] = (),
    *,
    prompt: Prompt[OutputT],
    adapter: ProviderAdapter,
    session: Session | None = None,
    decided_by: str | None = None,
    deadline: Deadline | None = None,
    budget: Budget | BudgetTracker | None = None,
    max_turns: int = DEFAULT_MAX_TURNS,
    resources: ResourceRegistry | None = None,
    tool_outputs: ToolOutputSettings | None = None,
    redact: Redactor = default_redact,
    approve: Approver | None = None,
) -> PromptResponse[OutputT]:
    """:func:`resume_async`, from synchronous code."""
    return run_sync(
        lambda: resume_async(
            store,
            session_id,
            decisions,
            prompt=prompt,
            adapter=adapter,
            session=session,
            decided_by=decided_by,
            deadline=deadline,
            budget=budget,
            max_turns=max_turns,
            resources=resources,
            tool_outputs=tool_outputs,
            redact=redact,
            approve=approve,
        )
    )


def _check_decided_by(decided_by: object) -> None:
    """Refuse a ``decided_by`` the store cannot keep, before anything is read or written.

    It is stored with the decisions and in each decided call's metadata: a
    lone surrogate would fail deep in the database driver, half-way through.
    """
    if decided_by is None:
        return
    if not isinstance(decided_by, str):
        raise ResumeError(f"decided_by must be text or None, not {type_name(decided_by)}")
    where = lone_surrogate(decided_by)
    if where is not None:
        raise ResumeError(f"decided_by holds a lone surrogate {where}, which is not valid Unicode")


async def resume_async(
    store: Store,
    session_id: str,
    decisions: Sequence[Decision] = (),
    *,
    prompt: Prompt[OutputT],
    adapter: ProviderAdapter,
    session: Session | None = None,
    decided_by: str | None = None,
    deadline: Deadline | None = None,
    budget: Budget | BudgetTracker | None = None,
    max_turns: int = DEFAULT_MAX_TURNS,
    resources: ResourceRegistry | None = None,
    tool_outputs: ToolOutputSettings | None = None,
    redact: Redactor = default_redact,
    approve: Approver | None = None,
    on_event: EventCallback | None = None,
    concurrent_tools: bool = True,
    tool_wrapper: ToolWrapper | None = None,
) -> PromptResponse[OutputT]:
    """Continue the run of ``session_id`` in ``store``.

    When the session waits in a pause, ``decisions`` must decide every
    pending call, each with its token: they are checked before anything is
    written, and a mismatch raises :class:`ResumeError` with the store
    untouched. The first resume to claim the pause wins; another gets
    :class:`ResumeError`. The session state stored with the pause is
    restored into ``session`` (default: a new ``Session(session_id=...)``).

    When it waits for nothing, the last run is continued from its last
    stored turn, as after a crash: a call whose result was stored never
    runs again, and one that may have started without its result being
    stored runs again only if its tool is ``idempotent`` (otherwise the
    model reads that it was interrupted). A run that ended with its final
    answer has nothing to resume (:class:`ResumeError`).

    ``max_turns`` caps the model calls of the whole run: those made before
    the pause or the crash count (a run paused after 3 calls and resumed
    with ``max_turns=5`` has 2 left). ``concurrent_tools`` and
    ``tool_wrapper`` are :func:`run`'s.
    """
    import asyncio

    from ..session import Session
    from .pause_events import RunResumed

    _check_decided_by(decided_by)
    used = session if session is not None else Session(session_id=session_id)
    resumption, seq = await asyncio.to_thread(
        _prepare, store, session_id, tuple(decisions), prompt, used, session is not None, decided_by
    )
    used.dispatch(
        RunResumed(
            prompt_name=prompt.template.display_name,
            session_id=session_id,
            seq=seq,
            decided_by=decided_by,
            created_at=used.clock.now(),
        )
    )
    if seq:
        from ._run_pause import publish_decisions_for

        publish_decisions_for(used, session_id, resumption.steps, decided_by)
    return await run(
        prompt,
        adapter=adapter,
        session=used,
        store=store,
        deadline=deadline,
        budget=budget,
        max_turns=max_turns,
        resources=resources,
        tool_outputs=tool_outputs,
        redact=redact,
        approve=approve,
        on_event=on_event,
        resumption=resumption,
        concurrent_tools=concurrent_tools,
        tool_wrapper=tool_wrapper,
    )


def _prepare(  # noqa: PLR0917 - one private call site, on a worker thread
    store: Store,
    session_id: str,
    decisions: tuple[Decision, ...],
    prompt: Prompt[OutputT],
    session: Session,
    given: bool,
    decided_by: str | None,
) -> tuple[Resumption, int]:
    """Read what the run left, check decisions, claim the pause; the plan and the pause number (0: none)."""
    from ..store import pause_rows
    from .approval import approval_key

    with store.read() as conn:
        pause = pause_rows.latest_pause(conn, session_id)
        journal = pause_rows.read_journal(conn, session_id)
        store_id = pause_rows.store_id(conn) if pause is not None else ""
    key = approval_key()
    if pause is not None and pause.status == "paused":
        tokens = _Tokens(store_id, key)
        return _resume_pause(store, pause, decisions, prompt, session, given, decided_by, tokens), pause.seq
    if decisions:
        if pause is not None:
            raise ResumeError(
                f"pause {pause.seq} of session {session_id!r} was already decided"
                + (f" by {pause.decided_by}" if pause.decided_by else "")
                + "; nothing is waiting for decisions"
            )
        raise ResumeError(f"session {session_id!r} has no paused run: nothing is waiting for decisions")
    resumption, state_of = _recover(store, session_id, pause, journal, _Tokens(store_id, key))
    if state_of is not None:  # the decided turn of this pause was not stored: its state still holds
        _restore(state_of, session, given)
    return resumption, 0


def _resume_pause(  # noqa: PLR0917 - one private call site
    store: Store,
    pause: PauseRow,
    decisions: tuple[Decision, ...],
    prompt: Prompt[OutputT],
    session: Session,
    given: bool,
    decided_by: str | None,
    tokens: _Tokens,
) -> Resumption:
    from ..session import SessionStateError, restore_state
    from ..store import pause_rows
    from ._pausing import Resumption, plan_steps
    from ._run_pause import check_decisions, schema_hashes
    from .approval import decisions_to_json

    paused = _paused(pause)
    context, persisted = _stored_state(pause, given)
    rendered = (prompt.with_expanded(context.expanded) if context.expanded else prompt).render(session)
    tools = {t.name: t for t in rendered.tools}
    check_decisions(
        paused,
        decisions,
        tools,
        schema_hashes(rendered.tools, rendered.tool_names, rendered.tool_hashes),
        store_id=tokens.store_id,
        key=tokens.key,
    )
    with store.write(lock=f"paused_runs:{pause.session_id}") as conn:
        claimed = pause_rows.claim_pause(
            conn,
            pause.session_id,
            pause.seq,
            decisions_json=decisions_to_json(decisions),
            decided_by=decided_by,
            now=store.clock.now().isoformat(),
        )
    if not claimed:
        raise ResumeError(
            f"pause {pause.seq} of session {pause.session_id!r} was already resumed by someone else"
        )
    try:
        restore_state(session, persisted)
    except SessionStateError as exc:
        exc.add_note("the pause is claimed: resume again (without decisions) once the session types import")
        raise
    return Resumption(plan_steps(paused.pending, decisions, decided_by), context=context, pause=pause.seq)


def _stored_state(pause: PauseRow, given: bool) -> tuple[RunContext, PersistedState]:
    """The run context and session state stored with ``pause`` (refused: a slice missing and not given)."""
    from ..session import PersistedState
    from ._pausing import RunContext

    state = parse_canonical_json(pause.state_json)
    context = RunContext.from_json(state.get("run") if isinstance(state, dict) else None)
    persisted = PersistedState.from_json(state.get("session") if isinstance(state, dict) else None)
    if persisted.unpersisted and not given:
        raise ResumeError(
            f"pause {pause.seq} of session {pause.session_id!r}: session slices "
            f"{', '.join(sorted(persisted.unpersisted))} could not be stored "
            f"({'; '.join(persisted.unpersisted.values())}); pass session= holding them"
        )
    return context, persisted


def _restore(pause: PauseRow, session: Session, given: bool) -> None:
    from ..session import restore_state

    restore_state(session, _stored_state(pause, given)[1])


def _replayed(pause: PauseRow, tokens: _Tokens) -> tuple[RunStep | AnswerStep, ...]:
    """The steps of a claimed pause's stored decisions, replayed after a crash (its tokens checked again)."""
    from ._pausing import plan_steps
    from ._run_pause import check_stored_tokens
    from .approval import decisions_from_json

    paused = _paused(pause)
    check_stored_tokens(paused, store_id=tokens.store_id, key=tokens.key)
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


def _recover(
    store: Store, session_id: str, pause: PauseRow | None, journal: JournalRow | None, tokens: _Tokens
) -> tuple[Resumption, PauseRow | None]:
    """The plan after a crash (see :func:`resume_async`), and the pause whose state to restore."""
    from ..transcript import Transcript
    from ._pausing import Resumption, RunContext, RunStep, reply_from_json
    from .approval import pending_from_json

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
            steps = _replayed(pause, tokens)
            return Resumption(steps, context=context, interrupted=started, pause=pause.seq), pause
    if pause is not None and pause.decisions_json is not None:
        answered = _answered_since(view, pause.head_hash)
        pending = pending_from_json(pause.pending_json)
        if any(p.call_id not in answered for p in pending):  # claimed, but stopped before running any
            steps = _replayed(pause, tokens)
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
