"""The evaluation loop: run a prompt with tools against a model until it answers.

One loop drives every adapter. It is a coroutine, :func:`run`;
:func:`run_sync` is its blocking twin (``evaluate`` is another name of it)
and :func:`stream` / :func:`stream_sync` (``runtime.streaming``) report its
events as they happen. Async functions have the plain name and their
blocking twins end in ``_sync``, across the library. Each turn it compiles the transcript, asks
the adapter for one reply, commits that reply, and runs the requested tool
calls in order through the shared :class:`ToolDispatcher`, committing each
result. It stops on a final answer, or raises when the turn cap, the
deadline or the budget says so. A model turn (the reply and the results of
the tool calls it made) is stored in one transaction when it ends, so an
error or a crash never leaves half a turn: the transcript keeps every turn
that finished before it. Between its own writes the loop does not re-read
the transcript: a commit another writer slips in between two turns is
shown to the model from the turn after, and the turn in progress is stored
after it.
"""

from __future__ import annotations

import threading
import weakref
from typing import TYPE_CHECKING, TypeVar

from typing_extensions import Unpack

from ..errors import ConfigurationError
from ..parts import as_parts, text_of
from ._store_work import StoreWork, claim_private_loop, on_private_loop
from .blocking import block_on
from .evaluation import PROMPT_KEY
from .recording import TRACE_KEY
from .response import PromptResponse
from .run_settings import (
    DEFAULT_MAX_EXPANSIONS,
    DEFAULT_MAX_TURNS,
    RunOptions,
    RunSettings,
    ToolWrapper,
    settings_of,
)
from .sub_agents import sub_agent_runner
from .tracing import installed_tracing

if TYPE_CHECKING:
    from ..model import ProviderAdapter
    from ..prompt import Prompt
    from ..session import Session
    from .resumption import Resumption

__all__ = [
    "DEFAULT_MAX_EXPANSIONS",
    "DEFAULT_MAX_TURNS",
    "PROMPT_KEY",
    "TRACE_KEY",
    "RunSettings",
    "ToolWrapper",
    "evaluate",
    "run",
    "run_resumed",
    "run_sync",
    "run_with",
    "run_with_sync",
]

OutputT = TypeVar("OutputT")


# Sessions with a run in progress: a second run on one of them is refused.
_RUNNING: weakref.WeakSet[Session] = weakref.WeakSet()
_RUNNING_LOCK = threading.Lock()


def run_sync(
    prompt: Prompt[OutputT],
    *,
    adapter: ProviderAdapter,
    session: Session,
    **options: Unpack[RunOptions[OutputT]],
) -> PromptResponse[OutputT]:
    """Run ``prompt`` on ``adapter`` until the model gives a final answer, blocking: :func:`run`'s twin.

    The conversation is recorded in ``transcript`` (default: the transcript
    of ``session``'s id in ``store``, itself defaulting to a private
    in-memory SQLite store, gone when the run ends). With a ``store``, the
    session id names a stored conversation: a run with a fixed
    ``session_id`` (``Session(session_id="user-42")``) CONTINUES what that
    session holds, the model seeing every earlier turn; give a new id (the
    default ``Session()`` makes one) for a fresh conversation.

    ``message_history`` is the stateless alternative: prior messages
    (``response.messages`` of an earlier run) stored after the system
    message and before ``input``, so the model sees them, with no store
    needed; ``response.new_messages`` are the ones this run added. Given
    with a session that already holds a stored conversation, it is refused
    (``ConfigurationError``): a run continues one or the other. A system
    message in the history is refused too (the prompt writes its own).

    ``tool_choice`` applies to the first model call
    only; later calls use ``"auto"`` so a forced tool cannot loop forever.
    A final answer that does not parse as the prompt's output type gets up
    to ``output_retries`` corrective turns before :class:`OutputParseError`.
    ``output_validators`` are functions over the parsed output (sync or
    async), run in order: one that raises :class:`OutputValidationError`
    rejects the answer, and its reason reaches the model as a corrective
    turn counted against the same ``output_retries``; past them, the last
    rejection is raised. The rejected reply is stored with who rejected it
    and why (``specs/ADAPTERS.md``, "Final answer").
    ``budget`` may be a :class:`BudgetTracker` shared with other work.

    Tool results go through the output pipeline (``specs/TOOL_RESULTS.md``):
    each is stored in the output store of the transcript's session; one
    over ``tool_outputs.policy`` (12288 bytes, or the remaining token
    budget) reaches the model as a handle for ``tool_output``.
    ``load_tool_results`` (default ``False``) shows results from before this
    evaluation's input as slim references the model can load with
    ``get_tool_result``; ``True`` keeps them all inline, a list of
    tool_call_ids keeps those. ``retention="evaluation"`` deletes the
    outputs this evaluation stored when it ends; the default keeps them
    until ``purge_session``.

    ``redact`` scrubs secrets from the text of every failed tool call before
    the model, the ``ToolInvoked`` event, the transcript or a raised error
    sees it (``specs/TOOLS.md``, "Redaction"), and from every successful
    result before the output store, the transcript or the model sees it
    (unless ``tool_outputs.redact_output`` is ``False``).

    ``tracing`` reports the run to an instrumentation (``weakprompt.otel``;
    ``specs/OBSERVABILITY.md``); by default the one installed with
    ``install_tracing`` (by ``weakprompt.otel.instrument()``), if any.
    A tool call that needs approval (or whose tool defers) pauses the run:
    the response has ``paused`` set and ``output`` ``None``, and
    :func:`~weakprompt.runtime.resume.resume_sync` continues it; ``approve`` decides
    such calls inline instead (``specs/APPROVAL.md``).

    ``model_settings`` (temperature, top_p, stop, reasoning effort, ...)
    go over the prompt template's, which go over the adapter's defaults; an
    adapter refuses a setting its provider does not take before sending
    anything, and each assistant commit records the settings used under
    ``metadata["model_settings"]`` (``specs/ADAPTERS.md``, "Model settings").

    Raises :class:`MaxTurnsExceededError` after ``max_turns`` model calls
    without a final answer, ``DeadlineExceededError`` / ``BudgetExceededError``
    when a limit is reached before a model call, and adapter errors as the
    typed :class:`~weakprompt.errors.AdapterError` subclasses.

    ``concurrent_tools`` and ``on_event`` are :func:`run`'s (``on_event``
    is called on the thread that drives the run).

    It drives :func:`run`: with ``asyncio.run`` when this thread runs no
    event loop, otherwise on a worker thread with its own loop (so it also
    works from a notebook or an async framework, blocking the caller).
    ``evaluate`` is the same function under its older name (kept, not
    deprecated).
    """
    settings = settings_of("run_sync", adapter, session, options)
    return run_with_sync(prompt, settings)


evaluate = run_sync
"""The blocking run under its first name: the same function as :func:`run_sync` (not deprecated)."""


async def run(
    prompt: Prompt[OutputT],
    *,
    adapter: ProviderAdapter,
    session: Session,
    **options: Unpack[RunOptions[OutputT]],
) -> PromptResponse[OutputT]:
    """The evaluation loop, a coroutine: see :func:`run_sync`, its blocking twin, for the parameters.

    As there: with a ``store``, a fixed session id continues the conversation
    stored under it; ``message_history`` runs on prior messages given
    instead (no store needed), and ``response.new_messages`` are this run's.

    A call that needs approval, or whose tool defers, pauses the run once
    the turn's other calls finish: the response has ``paused`` set and the
    pause is stored with the turn. With ``approve``, the run asks it for the
    decisions instead and goes on (``specs/APPROVAL.md``).

    ``concurrent_tools`` (default on) runs the tool calls of one reply at
    the same time where the concurrency rule allows (``specs/TOOLS.md``);
    results reach the model in call order either way. ``on_event`` receives
    every :data:`~weakprompt.runtime.run_events.RunEvent`. Store work runs on
    one worker thread of this run, off the event loop. Cancelling the task
    (or a deadline passing) stops the run between or inside turns: the turn
    in progress is not stored, and the session and snapshotable resources
    are put back as they were after the last stored turn. A second run on a
    session that is already running is refused (``ConfigurationError``), and
    so is a run on a session id another run (any ``Session`` object, any
    process) is running in the same store (``SessionBusyError``, a
    ``ConfigurationError``): the second run does not wait.
    """
    return await run_with(
        prompt,
        settings_of("run", adapter, session, options),
    )


async def run_with(prompt: Prompt[OutputT], settings: RunSettings) -> PromptResponse[OutputT]:
    """:func:`run` with its settings built: the entry for integrations (``weakprompt.durable``).

    Not exported by ``weakprompt`` or ``weakprompt.runtime``: an integration
    imports it from ``weakprompt.runtime.loop`` and builds the
    :class:`RunSettings` itself (with ``tool_wrapper``, which no public
    entry takes).
    """
    return await run_resumed(prompt, settings, None)


async def run_resumed(
    prompt: Prompt[OutputT], settings: RunSettings, resumption: Resumption | None
) -> PromptResponse[OutputT]:
    """The entry every run goes through: a new run (``resumption`` ``None``), or a stored one continued.

    ``resumption`` is the plan :func:`~weakprompt.runtime.resume.resume_with`
    made from the store (``specs/APPROVAL.md``); it is internal to the
    runtime, so no public signature carries it.
    """
    # The run's scope opens the store and the transcript (SQLAlchemy): loaded by the first run, so
    # that importing run/evaluate stays as cheap as the prompt and tool imports.
    from .run_scope import run_in_scope, store_in_memory, traced

    session = settings.session
    with _RUNNING_LOCK:
        if session in _RUNNING:
            raise ConfigurationError(
                f"session {session.session_id!r} is already running an evaluation; a session runs "
                "one evaluation at a time (use another Session for parallel work)"
            )
        _RUNNING.add(session)
    # One worker thread does all of this run's store work: off the event loop, and on one held
    # SQLite connection (a held connection belongs to the thread that holds it). Inline instead on
    # a loop run_sync() made for this run alone, where nothing else waits on it, and for a store in
    # memory, which never waits on anything (see _store_work).
    io = StoreWork(
        inline=claim_private_loop(), store_inline=store_in_memory(settings.store, settings.transcript)
    )
    tracing = settings.tracing if settings.tracing is not None else installed_tracing()
    try:
        trace = (
            None
            if tracing is None
            else tracing.start_run(
                agent_name=prompt.template.display_name,
                adapter=settings.adapter,
                conversation_id=session.session_id,
                input=None if settings.input is None else text_of(as_parts(settings.input)),
                redact=settings.redact,
            )
        )
        work = run_in_scope(
            io,
            prompt,
            settings,
            trace=trace,
            resumption=resumption,
            run_agent=sub_agent_runner(settings.redact, tracing),
        )
        return await (work if trace is None else traced(trace, work))
    finally:
        io.close()
        with _RUNNING_LOCK:
            _RUNNING.discard(session)


def run_with_sync(prompt: Prompt[OutputT], settings: RunSettings) -> PromptResponse[OutputT]:
    """:func:`run_with` from synchronous code, the way :func:`evaluate` runs (``weakprompt.agent`` uses it).

    With ``asyncio.run`` when this thread runs no event loop, otherwise on a
    worker thread with its own loop, blocking the caller.
    """
    return block_on(lambda: on_private_loop(run_with(prompt, settings)))
