"""Continue a stored run: after a pause, with decisions; after a crash, from the last stored turn.

Everything comes from the store, the prompt and the adapter: a resume can
run in another process, hours later (``specs/APPROVAL.md``).

:func:`resume_sync` blocks; :func:`resume_with` is the coroutine for
integrations (and the ``Agent``). The bare name ``resume`` still blocks for
this release but warns: it becomes the coroutine in the next one, as
``run`` is (async functions have the plain name, blocking twins end in
``_sync``). ``resume_async``, its former async name, warns too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, TypeVar

import attrs

from .. import session as sessions  # its state persistence resolves on first use (the package root)
from ..canonical import parse_canonical_json
from ..errors import ConfigurationError
from ..lazy import deprecated_alias
from ..safetext import lone_surrogate, type_name
from ..session import Session
from .blocking import block_on
from .loop import run_resumed
from .pause_errors import ResumeError
from .redaction import Redactor, default_redact
from .run_settings import DEFAULT_MAX_TURNS, RunSettings

if TYPE_CHECKING:
    from ..budget import Budget, BudgetTracker
    from ..deadlines import Deadline
    from ..model import ProviderAdapter
    from ..prompt import Prompt
    from ..resources import ResourceRegistry
    from ..session import PersistedState
    from ..store import Store
    from ..store.pause_rows import PauseRow
    from .approval import Decision, InlineApprover, PausedRun
    from .output_checks import OutputValidator
    from .response import PromptResponse
    from .results import ToolOutputSettings
    from .resumption import Resumption, RunContext
    from .run_events import EventCallback

__all__ = [
    "check_decisions_for",
    "paused_run",
    "paused_runs",
    "resume",
    "resume_async",
    "resume_sync",
    "resume_with",
    "resume_with_sync",
]

OutputT = TypeVar("OutputT")


def _pause_rows():
    """The store's pause rows, loaded at first use.

    The runtime package binds ``resume`` from this module, whose name it
    shares, so this module loads with ``import weakprompt.runtime``; that
    import loads no store (SQLAlchemy).
    """
    from ..store import pause_rows

    return pause_rows


@attrs.frozen
class _Tokens:
    """What a pause's tokens are checked with here: the store's id and this process's approval key."""

    store_id: str
    key: bytes | None


def paused_run(store: Store, session_id: str) -> PausedRun | None:
    """The pause session ``session_id`` waits in, or ``None`` when it waits for nothing."""
    from .recovery import paused_from_row

    pause_rows = _pause_rows()
    with store.read() as conn:
        rows = pause_rows.paused_rows(conn, session_id=session_id)
    return paused_from_row(rows[-1]) if rows else None


def paused_runs(store: Store) -> list[PausedRun]:
    """Every run of the store waiting for decisions, oldest first."""
    from .recovery import paused_from_row

    pause_rows = _pause_rows()
    with store.read() as conn:
        return [paused_from_row(row) for row in pause_rows.paused_rows(conn)]


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
    claim of the pause are :func:`resume_sync`'s. ``decided_by`` is
    refused here too when the store could not keep it.
    """
    _check_decided_by(decided_by)
    from .approval import approval_key
    from .decision_checks import check_decisions
    from .recovery import paused_from_row

    pause_rows = _pause_rows()
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
    paused = paused_from_row(pause)
    check_decisions(paused, tuple(decisions), None, None, store_id=store_id, key=approval_key())
    return paused


def resume_sync(
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
    output_retries: int = 1,
    output_validators: Sequence[OutputValidator[OutputT]] = (),
    resources: ResourceRegistry | None = None,
    tool_outputs: ToolOutputSettings | None = None,
    redact: Redactor = default_redact,
    approve: InlineApprover | None = None,
    on_event: EventCallback | None = None,
    concurrent_tools: bool = True,
) -> PromptResponse[OutputT]:
    """Continue the run of ``session_id`` in ``store``, blocking: after a pause (``decisions``) or a crash.

    Everything comes from the store, ``prompt`` and ``adapter``, so this can
    run in another process, hours later. ``prompt`` must offer the tools the
    paused calls name, with the schemas they had (a changed tool is
    refused); the ``adapter`` answers the model calls after the resume.

    **After a pause** (the run returned ``response.paused``, or
    :func:`paused_run` shows it): ``decisions`` must decide every pending
    call exactly once, each carrying the token the pause gave it:

    - ``Approve(call_id, token)`` runs the call as the model made it, or with
      the arguments given (``Approve(call_id, token, {...})``, checked
      against the tool's schema);
    - ``Deny(call_id, token, reason)`` gives the model a failed result with
      the reason instead of running the call;
    - ``Supply(call_id, token, result)`` answers a deferred call (a handler
      that raised ``CallDeferred``) with the result given.

    They are all checked before anything is written; a mismatch (a missing,
    doubled or unknown call, a wrong token, a tool that changed) raises
    :class:`ResumeError` with the store untouched. The first resume to claim
    the pause wins; another gets :class:`ResumeError`. ``decided_by`` (who
    decided, e.g. a user name) is stored with the decisions and on each
    decided call's result.

    **After a crash** (no decisions, and the session waits in no pause):
    the last run goes on from its last stored turn. A call whose result was
    stored never runs again; one that may have started without its result
    being stored runs again only if its tool is ``idempotent`` (otherwise
    the model reads that it was interrupted). A run that ended with its
    final answer has nothing to resume (:class:`ResumeError`), and so has
    a session with no run.

    **The session.** The state stored with the pause (the session's STATE
    slices) is restored into ``session`` when one is given: pass the
    ``Session`` your code keeps for this conversation (its reducers, its
    clock); its ``session_id`` must be ``session_id``
    (``ConfigurationError`` otherwise: it would run another session's
    transcript). Without ``session=``, a new ``Session(session_id=...)``
    holds the restored state, which is refused (:class:`ResumeError`) when
    some slice could not be stored and so cannot be restored. Either way
    ``response.session`` is the session the run used, in the state it
    ended in. A slice whose type no longer imports raises
    ``SessionStateError`` after the claim; resume again without decisions
    once the code is fixed (the stored decisions are replayed).

    ``max_turns`` caps the model calls of the whole run: those made before
    the pause or the crash count (a run paused after 3 calls and resumed
    with ``max_turns=5`` has 2 left). ``output_retries``,
    ``output_validators``, ``deadline``, ``budget``, ``resources``,
    ``tool_outputs``, ``redact``, ``approve`` (decide later pauses inline),
    ``on_event`` and ``concurrent_tools`` are :func:`~weakprompt.runtime.loop.run`'s. From async
    code, build the settings and await :func:`resume_with` (or ``Agent.resume``).

    Returns the run's :class:`PromptResponse`: its final answer, or
    ``paused`` set again when a later call waits for a decision (a new
    pause, ``seq`` + 1). Errors of the run itself (adapter errors, limits,
    an unusable final answer) are raised as :func:`run` raises them.
    """
    return block_on(
        lambda: _resume(
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
            output_retries=output_retries,
            output_validators=output_validators,
            resources=resources,
            tool_outputs=tool_outputs,
            redact=redact,
            approve=approve,
            on_event=on_event,
            concurrent_tools=concurrent_tools,
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


async def _resume(
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
    output_retries: int = 1,
    output_validators: Sequence[OutputValidator[OutputT]] = (),
    resources: ResourceRegistry | None = None,
    tool_outputs: ToolOutputSettings | None = None,
    redact: Redactor = default_redact,
    approve: InlineApprover | None = None,
    on_event: EventCallback | None = None,
    concurrent_tools: bool = True,
) -> PromptResponse[OutputT]:
    """:func:`resume_sync`, as a coroutine (the deprecated ``resume_async`` and, next release, ``resume``)."""
    settings = RunSettings(
        adapter=adapter,
        session=session if session is not None else Session(session_id=session_id),
        store=store,
        deadline=deadline,
        budget=budget,
        max_turns=max_turns,
        output_retries=output_retries,
        output_validators=output_validators,
        resources=resources,
        tool_outputs=tool_outputs,
        redact=redact,
        approve=approve,
        on_event=on_event,
        concurrent_tools=concurrent_tools,
    )
    return await resume_with(
        session_id,
        decisions,
        prompt=prompt,
        settings=settings,
        session_given=session is not None,
        decided_by=decided_by,
    )


async def resume_with(
    session_id: str,
    decisions: Sequence[Decision],
    *,
    prompt: Prompt[OutputT],
    settings: RunSettings,
    session_given: bool = True,
    decided_by: str | None = None,
) -> PromptResponse[OutputT]:
    """:func:`resume_sync` as a coroutine, its settings built (their ``store`` is the run's).

    The async entry for integrations (``weakprompt.durable``) and the
    ``Agent``; not exported by ``weakprompt.runtime``.

    ``session_given``: whether ``settings.session`` came from the caller
    (a session made here must find every stored slice in the pause).
    """
    import asyncio

    from .pause_events import RunResumed

    store = settings.store
    if store is None:
        raise ConfigurationError("resume: the settings name no store to resume the run from")
    if settings.session.session_id != session_id:
        raise ConfigurationError(
            f"resume: session= has id {settings.session.session_id!r}, but the run to resume is session "
            f"{session_id!r}; pass the Session of that id (or none, and read response.session)"
        )
    _check_decided_by(decided_by)
    used = settings.session
    resumption, seq = await asyncio.to_thread(
        _prepare, store, session_id, tuple(decisions), prompt, used, session_given, decided_by
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
        from .pausing import publish_decisions_for

        publish_decisions_for(used, session_id, resumption.steps, decided_by)
    return await run_resumed(prompt, settings, resumption)


def resume_with_sync(
    session_id: str,
    decisions: Sequence[Decision],
    *,
    prompt: Prompt[OutputT],
    settings: RunSettings,
    session_given: bool = True,
    decided_by: str | None = None,
) -> PromptResponse[OutputT]:
    """:func:`resume_with` from synchronous code (``weakprompt.agent`` uses it)."""
    return block_on(
        lambda: resume_with(
            session_id,
            decisions,
            prompt=prompt,
            settings=settings,
            session_given=session_given,
            decided_by=decided_by,
        )
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
    from .approval import approval_key
    from .recovery import recovery_plan

    pause_rows = _pause_rows()
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
    resumption, state_of = recovery_plan(store, session_id, pause, journal, store_id=store_id, key=key)
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
    from .approval import decisions_to_json
    from .decision_checks import check_decisions, schema_hashes
    from .recovery import paused_from_row
    from .resumption import Resumption, plan_steps

    pause_rows = _pause_rows()
    paused = paused_from_row(pause)
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
        sessions.restore_state(session, persisted)
    except sessions.SessionStateError as exc:
        exc.add_note("the pause is claimed: resume again (without decisions) once the session types import")
        raise
    return Resumption(plan_steps(paused.pending, decisions, decided_by), context=context, pause=pause.seq)


def _stored_state(pause: PauseRow, given: bool) -> tuple[RunContext, PersistedState]:
    """The run context and session state stored with ``pause`` (refused: a slice missing and not given)."""
    from .resumption import RunContext

    state = parse_canonical_json(pause.state_json)
    context = RunContext.from_json(state.get("run") if isinstance(state, dict) else None)
    persisted = sessions.PersistedState.from_json(state.get("session") if isinstance(state, dict) else None)
    if persisted.unpersisted and not given:
        raise ResumeError(
            f"pause {pause.seq} of session {pause.session_id!r}: session slices "
            f"{', '.join(sorted(persisted.unpersisted))} could not be stored "
            f"({'; '.join(persisted.unpersisted.values())}); pass session= holding them"
        )
    return context, persisted


def _restore(pause: PauseRow, session: Session, given: bool) -> None:
    sessions.restore_state(session, _stored_state(pause, given)[1])


# The bare name becomes the coroutine next release (as ``run`` is); a name cannot change its meaning
# behind an alias, so for one release it keeps blocking and warns.
resume = deprecated_alias(
    resume_sync,
    "resume",
    "weakprompt.runtime.resume blocks in this release and becomes a coroutine in the next one; "
    "call resume_sync to block (or await Agent.resume)",
)

resume_async = deprecated_alias(
    _resume,
    "resume_async",
    "weakprompt.runtime.resume_async is deprecated and will be removed in the next release, when "
    "resume becomes the coroutine; call resume_sync to block (or await Agent.resume)",
)
