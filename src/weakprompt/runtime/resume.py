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

from ..errors import ConfigurationError
from ..lazy import deprecated_alias
from ..session import Session
from .blocking import block_on
from .loop import run_resumed
from .pause_reads import check_decided_by, check_decisions_for, paused_run, paused_runs
from .redaction import Redactor, default_redact
from .resume_plan import prepare
from .run_settings import DEFAULT_MAX_TURNS, RunSettings

if TYPE_CHECKING:
    from ..budget import Budget, BudgetTracker
    from ..deadlines import Deadline
    from ..model import ProviderAdapter
    from ..prompt import Prompt
    from ..resources import ResourceRegistry
    from ..store import Store
    from .approval import Decision, InlineApprover
    from .output_checks import OutputValidator
    from .response import PromptResponse
    from .results import ToolOutputSettings
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
    check_decided_by(decided_by)
    used = settings.session
    resumption, seq = await asyncio.to_thread(
        prepare, store, session_id, tuple(decisions), prompt, used, session_given, decided_by
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
