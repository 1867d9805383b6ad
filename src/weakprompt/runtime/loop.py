"""The evaluation loop: run a prompt with tools against a model until it answers.

One loop drives every adapter. It is a coroutine, :func:`run`;
:func:`evaluate` is its synchronous wrapper and :func:`stream` /
:func:`stream_sync` (``runtime.streaming``) report its events as they
happen. Each turn it compiles the transcript, asks
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

import contextlib
import functools
import logging
import threading
import weakref
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

import attrs

from ..budget import Budget, BudgetTracker
from ..clock import SystemClock
from ..errors import (
    ConfigurationError,
    DeadlineExceededError,
    MaxTurnsExceededError,
    OutputParseError,
    PromptRenderError,
    VisibilityExpansionRequired,
)
from ..events import PromptExecuted, PromptRendered, publish
from ..messages import AssistantTurn, ToolCall, Usage
from ..model import ForceTool, ModelRequest
from ..tools import is_async_handler
from . import loop_messages
from ._model_stream import model_reply
from ._store_work import StoreWork, claim_private_loop, on_private_loop
from ._sync import run_sync
from .dispatcher import ToolDispatcher, ToolExecution
from .loop_events import ModelTurnCompleted, OutputRejected, SectionsExpanded, ToolResultCommitted
from .pause_errors import ToolCallPending
from .redaction import Redactor, default_redact
from .response import PromptResponse
from .tracing import RunSpan, ToolSpan, Tracing, installed_tracing, model_call_scope

if TYPE_CHECKING:
    from sqlalchemy import Connection

    from ..deadlines import Deadline
    from ..jsontypes import JSONObject
    from ..model import ProviderAdapter, ToolChoice
    from ..prompt import Prompt, RenderedPrompt
    from ..resources import ResourceRegistry, ResourceSnapshot
    from ..session import Session, SessionSnapshot
    from ..store import Store
    from ..tools import AnyTool
    from ..transcript.lazy import LoadToolResults
    from ..transcript.transcript import Transcript
    from ..transcript.turns import TurnRecord
    from ._pausing import InlineDecision, Resumption
    from .approval import Approver, PausedRun, PendingCall
    from .results import EvaluationOutputs, Retention, RunSubAgent, ToolOutputSettings
    from .run_events import EventCallback, RunEvent

__all__ = [
    "DEFAULT_MAX_EXPANSIONS",
    "DEFAULT_MAX_TURNS",
    "PROMPT_KEY",
    "ToolWrapper",
    "evaluate",
    "run",
]

PROMPT_KEY = "prompt"
"""Metadata key of the system commit an evaluation writes: the prompt's display name (for viewers)."""

logger = logging.getLogger(__name__)

OutputT = TypeVar("OutputT")
T = TypeVar("T")

DEFAULT_MAX_TURNS = 16
DEFAULT_MAX_EXPANSIONS = 4

ToolWrapper = Callable[["AnyTool"], "AnyTool"]
"""``tool_wrapper=``: gives the tool the dispatcher runs in place of each offered tool.

An integration that must see every handler call (a durable engine that
records each call, ``weakprompt.durable``) wraps the handler here; the
wrapper keeps the tool's name and schema, so approvals and stored
definitions do not change.
"""

# Sessions with a run in progress: a second run on one of them is refused.
_RUNNING: weakref.WeakSet[Session] = weakref.WeakSet()
_RUNNING_LOCK = threading.Lock()


def evaluate(
    prompt: Prompt[OutputT],
    *,
    adapter: ProviderAdapter,
    session: Session,
    input: str | None = None,
    store: Store | None = None,
    transcript: Transcript | None = None,
    deadline: Deadline | None = None,
    budget: Budget | BudgetTracker | None = None,
    max_turns: int = DEFAULT_MAX_TURNS,
    tool_choice: ToolChoice = "auto",
    output_retries: int = 1,
    max_expansions: int = DEFAULT_MAX_EXPANSIONS,
    resources: ResourceRegistry | None = None,
    max_output_tokens: int | None = None,
    load_tool_results: LoadToolResults = False,
    retention: Retention = "session",
    tool_outputs: ToolOutputSettings | None = None,
    redact: Redactor = default_redact,
    tracing: Tracing | None = None,
    approve: Approver | None = None,
) -> PromptResponse[OutputT]:
    """Run ``prompt`` on ``adapter`` until the model gives a final answer.

    The conversation is recorded in ``transcript`` (default: the transcript
    of ``session``'s id in ``store``, itself defaulting to a private
    in-memory SQLite store). ``tool_choice`` applies to the first model call
    only; later calls use ``"auto"`` so a forced tool cannot loop forever.
    A final answer that does not parse as the prompt's output type gets up
    to ``output_retries`` corrective turns before :class:`OutputParseError`.
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
    :func:`~weakprompt.runtime.resume` continues it; ``approve`` decides
    such calls inline instead (``specs/APPROVAL.md``).

    Raises :class:`MaxTurnsExceededError` after ``max_turns`` model calls
    without a final answer, ``DeadlineExceededError`` / ``BudgetExceededError``
    when a limit is reached before a model call, and adapter errors as the
    typed :class:`~weakprompt.errors.AdapterError` subclasses.

    It drives :func:`run`: with ``asyncio.run`` when this thread runs no
    event loop, otherwise on a worker thread with its own loop (so it also
    works from a notebook or an async framework, blocking the caller).
    """
    return run_sync(
        lambda: on_private_loop(
            run(
                prompt,
                adapter=adapter,
                session=session,
                input=input,
                store=store,
                transcript=transcript,
                deadline=deadline,
                budget=budget,
                max_turns=max_turns,
                tool_choice=tool_choice,
                output_retries=output_retries,
                max_expansions=max_expansions,
                resources=resources,
                max_output_tokens=max_output_tokens,
                load_tool_results=load_tool_results,
                retention=retention,
                tool_outputs=tool_outputs,
                redact=redact,
                tracing=tracing,
                approve=approve,
            )
        )
    )


async def run(
    prompt: Prompt[OutputT],
    *,
    adapter: ProviderAdapter,
    session: Session,
    input: str | None = None,
    store: Store | None = None,
    transcript: Transcript | None = None,
    deadline: Deadline | None = None,
    budget: Budget | BudgetTracker | None = None,
    max_turns: int = DEFAULT_MAX_TURNS,
    tool_choice: ToolChoice = "auto",
    output_retries: int = 1,
    max_expansions: int = DEFAULT_MAX_EXPANSIONS,
    resources: ResourceRegistry | None = None,
    max_output_tokens: int | None = None,
    load_tool_results: LoadToolResults = False,
    retention: Retention = "session",
    tool_outputs: ToolOutputSettings | None = None,
    redact: Redactor = default_redact,
    concurrent_tools: bool = True,
    on_event: EventCallback | None = None,
    tracing: Tracing | None = None,
    approve: Approver | None = None,
    resumption: Resumption | None = None,
    tool_wrapper: ToolWrapper | None = None,
) -> PromptResponse[OutputT]:
    """The evaluation loop: :func:`evaluate`'s parameters, plus ``concurrent_tools`` and ``on_event``.

    A call that needs approval, or whose tool defers, pauses the run once
    the turn's other calls finish: the response has ``paused`` set and the
    pause is stored with the turn. With ``approve``, the run asks it for the
    decisions instead and goes on. ``resumption`` is how
    :func:`~weakprompt.runtime.resume` continues a stored run
    (``specs/APPROVAL.md``). ``tool_wrapper`` replaces each offered tool
    with the tool it returns (see :data:`ToolWrapper`).

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
    _check_limits(max_turns, output_retries, max_expansions)
    tracker = BudgetTracker(budget) if isinstance(budget, Budget) else budget
    with _RUNNING_LOCK:
        if session in _RUNNING:
            raise ConfigurationError(
                f"session {session.session_id!r} is already running an evaluation; a session runs "
                "one evaluation at a time (use another Session for parallel work)"
            )
        _RUNNING.add(session)
    # One worker thread does all of this run's store work: off the event loop, and on one held
    # SQLite connection (a held connection belongs to the thread that holds it). Inline instead on
    # a loop evaluate() made for this run alone, where nothing else waits on it, and for a store in
    # memory, which never waits on anything (see _store_work).
    io = StoreWork(inline=claim_private_loop(), store_inline=_store_in_memory(store, transcript))
    tracing = tracing if tracing is not None else installed_tracing()
    try:
        trace = (
            None
            if tracing is None
            else tracing.start_run(
                agent_name=prompt.template.display_name,
                adapter=adapter,
                conversation_id=session.session_id,
                input=input,
                redact=redact,
            )
        )
        work = _run_on(
            io,
            prompt,
            adapter=adapter,
            session=session,
            input=input,
            store=store,
            transcript=transcript,
            deadline=deadline,
            tracker=tracker,
            max_turns=max_turns,
            tool_choice=tool_choice,
            output_retries=output_retries,
            max_expansions=max_expansions,
            resources=resources,
            max_output_tokens=max_output_tokens,
            load_tool_results=load_tool_results,
            retention=retention,
            tool_outputs=tool_outputs,
            redact=redact,
            concurrent_tools=concurrent_tools,
            on_event=on_event,
            tracing=tracing,
            trace=trace,
            approve=approve,
            resumption=resumption,
            tool_wrapper=tool_wrapper,
        )
        return await (work if trace is None else _traced(trace, work))
    finally:
        io.close()
        with _RUNNING_LOCK:
            _RUNNING.discard(session)


_QUICK_STAGING_CHARS = 1 << 16
"""A result up to this size is measured, hashed and staged in well under a millisecond."""


def _store_in_memory(store: Store | None, transcript: Transcript | None) -> bool:
    """Whether the run's store is in memory: the private default, or one the caller opened so."""
    if transcript is not None:
        return transcript.store.in_memory
    return store is None or store.in_memory


async def _run_on(
    io: StoreWork,
    prompt: Prompt[OutputT],
    *,
    adapter: ProviderAdapter,
    session: Session,
    input: str | None,
    store: Store | None,
    transcript: Transcript | None,
    deadline: Deadline | None,
    tracker: BudgetTracker | None,
    max_turns: int,
    tool_choice: ToolChoice,
    output_retries: int,
    max_expansions: int,
    resources: ResourceRegistry | None,
    max_output_tokens: int | None,
    load_tool_results: LoadToolResults,
    retention: Retention,
    tool_outputs: ToolOutputSettings | None,
    redact: Redactor,
    concurrent_tools: bool,
    on_event: EventCallback | None,
    tracing: Tracing | None,
    trace: RunSpan | None,
    approve: Approver | None,
    resumption: Resumption | None,
    tool_wrapper: ToolWrapper | None,
) -> PromptResponse[OutputT]:
    def open_transcript() -> Transcript:
        if transcript is not None:
            if store is not None and transcript.store is not store:
                raise ConfigurationError(
                    "evaluate: the transcript given belongs to another store than store="
                )
            return transcript
        # Loaded here, not at the top: importing the runtime does not load the store.
        from ..transcript.transcript import Transcript

        opened = store
        if opened is None:
            from ..store import Store

            # Nothing outside this run can read it: its writes wait until something in the run does.
            opened = Store.open("sqlite://", clock=session.clock, deferred=True)
        # A store made here holds nothing, and nothing else can write to it.
        new = store is None
        return Transcript(opened, session.session_id, token_counter=adapter.token_counter, assume_new=new)

    record = await io(open_transcript)
    # A private store this run just made is empty: nothing there needs reading to be known.
    empty = store is None and transcript is None
    # The output store loads SQLAlchemy: imported here, so importing the runtime stays light.
    from .results import EvaluationOutputs

    outputs = EvaluationOutputs(
        transcript=record,
        empty=empty,
        session=session,
        adapter=adapter,
        tracker=tracker,
        settings=tool_outputs,
        load_tool_results=load_tool_results,
        retention=retention,
        run_agent=_sub_agent_runner(redact, tracing),  # read-grep extraction runs its sub-agent on this loop
        redact=redact,
        traced_extraction=None
        if trace is None
        else functools.partial(trace.traced_adapter, purpose="extraction"),
    )
    evaluation = _Evaluation(
        prompt,
        adapter=adapter,
        session=session,
        transcript=record,
        deadline=deadline,
        tracker=tracker,
        resources=resources,
        output_retries=output_retries,
        max_expansions=max_expansions,
        max_output_tokens=max_output_tokens,
        outputs=outputs,
        redact=redact,
        io=io,
        concurrent_tools=concurrent_tools,
        on_event=on_event,
        trace=trace,
    )
    evaluation.approver = approve
    evaluation.resumption = resumption
    evaluation.tool_wrapper = tool_wrapper
    evaluation.empty_transcript = empty
    scope = contextlib.ExitStack()

    def begin() -> None:
        # Many small transactions follow one another: run them on one held connection (SQLite).
        scope.enter_context(record.store.hold_connection())
        if not empty:  # a store this run made itself: no other run can reach it
            # One run per session of a store, across Session objects and processes (store/run_leases).
            from ..store.run_leases import take_session_lease

            scope.callback(take_session_lease(record.store, record.session_id).release)
        outputs.open()
        scope.callback(outputs.close)
        # tool_result hooks summarize with this evaluation's adapter (unless they have their
        # own summarizer) and charge its budget and usage
        scope.enter_context(
            record.hooks.evaluation(
                adapter=adapter if trace is None else trace.traced_adapter(adapter, "summarization"),
                budget_tracker=tracker,
                dispatcher=session.dispatcher,
                on_usage=evaluation.add_usage,
            )
        )

    try:
        await evaluation.io(begin)
        try:
            async with _deadline_scope(deadline):
                return await evaluation.run(input, max_turns=max_turns, first_choice=tool_choice)
        except BaseException as exc:
            evaluation.roll_back()
            if trace is not None:
                trace.rolled_back()
                evaluation.abandon_tool_spans(exc)
            if isinstance(exc, Exception):
                exc.add_note(
                    f"weakprompt: evaluation of {evaluation.name!r} stopped after {evaluation.turns} "
                    f"model call(s); everything before is in transcript session {record.session_id!r} "
                    f"(head {evaluation.head or 'none'})"
                )
            raise
    finally:
        await io.settled(scope.close if not empty else functools.partial(_close_private, scope, record))


def _close_private(scope: contextlib.ExitStack, record: Transcript) -> None:
    """End a run on the private store it made: nothing can reach that store afterwards.

    Closed here, its in-memory database is freed at once, not whenever the
    cyclic garbage collector gets to the store's engine (a gen-2 collection,
    when a thousand sessions run).
    """
    try:
        scope.close()
    finally:
        record.store.close()


async def _traced(trace: RunSpan, work: Awaitable[PromptResponse[OutputT]]) -> PromptResponse[OutputT]:
    """Await ``work`` as the current step of ``trace``, and tell the trace how it ended."""
    with trace.activated():
        try:
            response = await work
        except BaseException as exc:
            trace.fail(exc)
            raise
    trace.finish(
        text=response.text, usage=response.usage, turns=response.turns, finish_reason=response.finish_reason
    )
    return response


@contextlib.asynccontextmanager
async def _deadline_scope(deadline: Deadline | None):
    """Stop the run where it stands when a real-time deadline passes (cancelling calls in flight).

    Only a deadline judged by the system clock can be armed as a timer; one
    on another clock (a test's fake clock) is checked before each model call.
    """
    if deadline is None or not isinstance(deadline.clock, SystemClock):
        yield
        return
    try:
        import asyncio  # on first use: keeps importing this module cheap

        async with asyncio.timeout(max(deadline.remaining().total_seconds(), 0.0)):
            yield
    except TimeoutError as exc:
        raise DeadlineExceededError(
            f"the deadline {deadline.expires_at.isoformat()} passed during the run"
        ) from exc


def _sub_agent_runner(redact: Redactor, tracing: Tracing | None) -> RunSubAgent:
    """``evaluate`` for the read-grep sub-agent of ``tool_output``.

    The sub-agent reads an output already stored (so already redacted, if
    the evaluation redacts output), and its answer comes back through this
    evaluation's pipeline: its own tool results are not redacted again.
    Its failure texts are, with this evaluation's hook.
    """
    if redact is default_redact and tracing is None:
        return _default_sub_agent_runner()  # the usual case: one runner for every run
    return _make_sub_agent_runner(redact, tracing)


@functools.cache
def _default_sub_agent_runner() -> RunSubAgent:
    return _make_sub_agent_runner(default_redact, None)


@functools.cache
def _sub_agent_settings() -> ToolOutputSettings:
    """The sub-agent's output settings (its results are already redacted): immutable, so shared."""
    from .results import ToolOutputSettings

    return ToolOutputSettings(redact_output=False)


def _make_sub_agent_runner(redact: Redactor, tracing: Tracing | None) -> RunSubAgent:
    settings = _sub_agent_settings()

    def run_sub_agent(
        prompt: Prompt[None],
        *,
        adapter: ProviderAdapter,
        session: Session,
        input: str | None,
        deadline: Deadline | None,
        max_turns: int,
        max_output_tokens: int | None,
    ) -> PromptResponse[None]:
        return evaluate(
            prompt,
            adapter=adapter,
            session=session,
            input=input,
            deadline=deadline,
            max_turns=max_turns,
            max_output_tokens=max_output_tokens,
            redact=redact,
            tool_outputs=settings,
            tracing=tracing,
        )

    return run_sub_agent


def _check_limits(max_turns: int, output_retries: int, max_expansions: int) -> None:
    for name, value, least in (
        ("max_turns", max_turns, 1),
        ("output_retries", output_retries, 0),
        ("max_expansions", max_expansions, 0),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or value < least:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigurationError(f"evaluate: {name} must be an int >= {least}, got {value!r}")


def _check_choice(
    choice: ToolChoice, names: tuple[str, ...], more_names: Callable[[], tuple[str, ...]] = tuple
) -> None:
    """Refuse a tool choice the prompt cannot honour; ``more_names`` (pipeline tools) is asked only if needed.

    Working out whether a pipeline tool is on offer reads the store, so a
    choice the prompt's own tools settle never asks.
    """
    if isinstance(choice, ForceTool):
        if choice.name not in names:
            names = names + more_names()
        if choice.name not in names:
            raise ConfigurationError(
                f"evaluate: tool_choice forces tool {choice.name!r}, which the prompt does not offer "
                f"(tools: {', '.join(names) or 'none'})"
            )
    elif choice not in ("auto", "required", "none"):
        raise ConfigurationError(
            f"evaluate: tool_choice must be 'auto', 'required', 'none' or ForceTool(name), got {choice!r}"
        )
    elif choice == "required" and not names and not more_names():
        raise ConfigurationError("evaluate: tool_choice='required' but the prompt offers no tools")


class _Evaluation(Generic[OutputT]):
    """The mutable state of one running evaluation (never shared)."""

    def __init__(
        self,
        prompt: Prompt[OutputT],
        *,
        adapter: ProviderAdapter,
        session: Session,
        transcript: Transcript,
        deadline: Deadline | None,
        tracker: BudgetTracker | None,
        resources: ResourceRegistry | None,
        output_retries: int,
        max_expansions: int,
        max_output_tokens: int | None,
        outputs: EvaluationOutputs,
        redact: Redactor,
        io: StoreWork,
        concurrent_tools: bool,
        on_event: EventCallback | None,
        trace: RunSpan | None = None,
    ) -> None:
        self._io = io
        self.trace = trace
        # The spans of tool calls started but not committed yet, by call (the call objects are alive).
        self.open_tools: dict[int, ToolSpan] = {}
        self.concurrent_tools = concurrent_tools
        self.on_event = on_event
        self.prompt = prompt
        self.name = prompt.template.display_name
        self.adapter = adapter
        self.adapter_name = adapter.name
        self.session = session
        self.transcript = transcript
        self.deadline = deadline
        self.tracker = tracker
        self.resources = resources
        self.output_retries = output_retries
        self.max_expansions = max_expansions
        self.max_output_tokens = max_output_tokens
        self.outputs = outputs
        self.redact = redact
        self.offered: tuple[str, ...] = ()
        self.usage = Usage()
        self.turns = 0
        self.turns_before = 0  # model calls of the run before this resumption of it
        self.empty_transcript = False  # a private store made for this run: no system message yet
        self.retries_used = 0
        self.head: str | None = None
        self.system_commit: str | None = None
        self.executions: list[ToolExecution] = []
        self.async_handlers: dict[str, bool] = {}  # by tool name, for the current dispatcher
        self.expanded: list[str] = []
        # Pausing (specs/APPROVAL.md): calls waiting now, how decisions come.
        self.pending: list[PendingCall] = []
        self.approver: Approver | None = None
        self.decided_inline: InlineDecision | None = None  # stored with the turn it decided
        self.resumption: Resumption | None = None
        self.tool_wrapper: ToolWrapper | None = None
        self.paused: PausedRun | None = None
        # A store in memory dies with the process: no crash to resume, no journal to keep.
        self.journal = not transcript.store.in_memory
        # A journal row may be there for the turn in progress; at first, one a failed run left
        # behind: this run's first stored turn removes it (it supersedes that run).
        self.journaled = self.journal
        self.rendered: RenderedPrompt[OutputT]
        self.dispatcher: ToolDispatcher
        # The state the transcript agrees with: taken after each stored turn, put back on failure.
        self.kept_state: SessionSnapshot = session.snapshot()
        self.kept_resources: ResourceSnapshot | None = resources.snapshot() if resources is not None else None

    async def io(self, work: Callable[[], T]) -> T:
        """Run store work on this run's worker thread (or inline, see ``_store_work``)."""
        return await self._io(work)

    async def emit(self, event: RunEvent[OutputT]) -> None:
        if self.on_event is None:
            return
        returned = self.on_event(event)
        if isinstance(returned, Awaitable):
            await cast("Awaitable[object]", returned)

    def _tool_span(self, call: ToolCall) -> ToolSpan:
        assert self.trace is not None  # only handed to the dispatcher when tracing
        span = self.trace.tool_call(call)
        self.open_tools[id(call)] = span
        return span

    def abandon_tool_spans(self, error: BaseException) -> None:
        """End the spans of tool calls whose results will never be committed."""
        for span in self.open_tools.values():
            span.fail(error)
        self.open_tools.clear()

    def keep_state(self) -> None:
        self.kept_state = self.session.snapshot()
        if self.resources is not None:
            self.kept_resources = self.resources.snapshot()

    def roll_back(self) -> None:
        """Put the session (and snapshotable resources) back as of the last stored turn."""
        try:
            self.session.restore(self.kept_state)
            if self.resources is not None and self.kept_resources is not None:
                self.resources.restore(self.kept_resources)
        except Exception:  # the original error matters more; this one is logged
            logger.exception("restoring the session after a failed evaluation of %r failed", self.name)

    # -- the loop -------------------------------------------------------------------------------

    async def run(
        self, input: str | None, *, max_turns: int, first_choice: ToolChoice
    ) -> PromptResponse[OutputT]:
        await self.io(lambda: self._start(input, first_choice))
        choice: ToolChoice = first_choice
        ahead: _OpenTurn | None = None  # the next turn, opened with the write of the last one
        reply: AssistantTurn | None = None
        if self.resumption is not None:
            self.turns_before = self.resumption.context.turns
            await self._staged_turn(lambda turn: _resuming(self, turn))
        while True:
            if self.pending:  # the last turn ended on calls waiting for decisions (none opened ahead)
                if self.approver is None:
                    return await self._finish_paused(reply)
                await _decide_inline(self)
                continue
            try:
                if not self._turns_left(max_turns):
                    raise MaxTurnsExceededError(max_turns)
                if self.deadline is not None:
                    self.deadline.check()
                if self.tracker is not None:
                    self.tracker.check()
            except BaseException as exc:
                if ahead is not None:
                    await self._drop_ahead(ahead.staging, exc)
                raise
            reply, ahead = await self._model_turn(choice, ahead, max_turns=max_turns)
            choice = "auto"
            if reply.tool_calls:
                continue
            if self.rendered.output_type is None:  # then the prompt is a Prompt[None]
                return await self._finish(reply, cast("OutputT", None))
            try:
                output = self.rendered.parse_output(reply.text)
            except OutputParseError as exc:
                left = self._turns_left(max_turns)
                await self.io(functools.partial(self._reject_output, reply.text, exc, turns_left=left))
                continue
            return await self._finish(reply, output)

    def _start(self, input: str | None, first_choice: ToolChoice) -> None:
        if self.resumption is not None and self.resumption.context.expanded:
            self.prompt = self.prompt.with_expanded(self.resumption.context.expanded)
            self.expanded.extend(self.resumption.context.expanded)
        rendered = self.prompt.render(self.session)
        names = rendered.tool_names
        _check_choice(first_choice, names, lambda: self.outputs.available_names(names))
        self._adopt(self.prompt, rendered)
        # The system message and the input are stored together: one transaction, never one alone.
        with self.transcript.turn(refresh=False) as opening:
            self._commit_system(rendered.text)
            if input is not None:
                self.head = self.transcript.user(input).hash
        if opening.moved:  # another writer appended meanwhile: the commits were stored under new hashes
            assert self.head is not None and self.system_commit is not None  # both set by a stored commit
            self.head = opening.stored_hash(self.head)
            self.system_commit = opening.stored_hash(self.system_commit)
        if self.resumption is not None:
            self.head = self.transcript.head
            self.outputs.turn_start = self.resumption.context.turn_start
            return
        self.outputs.turn_start = self.head

    def _turns_left(self, max_turns: int) -> bool:
        """Whether ``max_turns`` allows another model call, counting those before a pause or crash."""
        return self.turns_before + self.turns < max_turns

    async def _model_turn(
        self, choice: ToolChoice, ahead: _OpenTurn | None, *, max_turns: int
    ) -> tuple[AssistantTurn, _OpenTurn | None]:
        """One model call and the tool calls it asked for, stored together as one transcript turn.

        The turn is staged on the worker thread and written there in one
        transaction when it ends: the reply's commit, its results' commits
        and their stored outputs. A failure or cancellation before that
        drops it whole; one that arrives while it is being written waits
        for the write, so the turn is either stored or not, never half. The
        events that report it (``ModelTurnCompleted``, ``ToolResultStored``,
        ``ToolResultCommitted``) are published once it has committed, with
        the hashes as stored, and ``TurnCommitted`` after them.

        The turn is opened, and its request compiled, in one trip to the
        worker thread (``ahead``: already, in the trip that wrote the turn
        before). When the model asked for tools and a model call is left, the
        trip that writes this turn opens the next one too (and returns it),
        so a round trip costs one trip less; the loop drops it unopened if
        a limit stops the run first.
        """

        # No closures here: a variable a nested function uses becomes a cell object, and this
        # frame lives through the model call; partials of module functions instead.
        before = self.head
        staging = ahead.staging if ahead is not None else self.transcript.turn(refresh=False)
        entered: list[TurnRecord] = [ahead.record] if ahead is not None else []
        try:
            request = (
                ahead.request
                if ahead is not None
                else await self._io.settled(functools.partial(_open_turn, self, staging, entered, choice))
            )
            turn = entered[0]
            reply = await self._call_model(request, turn)
            if reply.tool_calls:
                if self.tracker is not None:  # max_tool_calls: none of them runs past the limit
                    self.tracker.take_tool_calls(len(reply.tool_calls))
                if self.journal:
                    await self.io(functools.partial(_journal, self, reply))
                await self._run_tools(reply.tool_calls, turn)
        except BaseException as exc:
            self.head = before  # nothing of the unfinished turn is stored
            if entered:
                await self._io.settled(functools.partial(staging.__exit__, type(exc), exc, exc.__traceback__))
            raise
        # No turn ahead when calls wait for a decision: the run pauses (or decides) first.
        following = (
            self.transcript.turn(refresh=False)
            if reply.tool_calls and self._turns_left(max_turns) and not self.pending
            else None
        )
        opened: list[TurnRecord] = []
        try:
            upcoming = await self._io.settled(
                functools.partial(_write_and_open_next, self, staging, turn, following, opened)
            )
        except BaseException as exc:
            if following is not None and opened:
                await self._drop_ahead(following, exc)
            if not turn.stored:
                self.head = before
                raise
            self._stored(turn)  # cancelled while writing, but the write went through
            raise
        self._stored(turn)
        if self.on_event is not None:
            from . import run_events  # built only for a listener: loaded on first use

            await self.emit(
                run_events.TurnCommitted(
                    turn=self.turns, head=self.head, commit_hashes=tuple(c.hash for c in turn.commits)
                )
            )
        if following is None or upcoming is None:
            return reply, None
        return reply, _OpenTurn(following, opened[0], upcoming)

    async def _staged_turn(self, body: Callable[[TurnRecord], Awaitable[T]]) -> T:
        """Run ``body`` (a resumed run's decided calls) in one transcript turn, stored as one write."""
        before = self.head
        staging = self.transcript.turn(refresh=False)
        turn = await self.io(staging.__enter__)
        try:
            outcome = await body(turn)
        except BaseException as exc:
            self.head = before  # nothing of the unfinished turn is stored
            await self._io.settled(functools.partial(staging.__exit__, type(exc), exc, exc.__traceback__))
            raise
        try:
            await self._io.settled(lambda: _write_turn(self, staging, turn))
        except BaseException:
            if not turn.stored:
                self.head = before
                raise
            self._stored(turn)  # cancelled while writing, but the write went through
            raise
        self._stored(turn)
        if self.on_event is not None:
            from . import run_events  # built only for a listener: loaded on first use

            await self.emit(
                run_events.TurnCommitted(
                    turn=self.turns, head=self.head, commit_hashes=tuple(c.hash for c in turn.commits)
                )
            )
        return outcome

    async def _drop_ahead(
        self, staging: contextlib.AbstractContextManager[TurnRecord], error: BaseException
    ) -> None:
        """Close a turn opened ahead that will not be used: nothing of it is stored."""
        await self._io.settled(functools.partial(staging.__exit__, type(error), error, error.__traceback__))

    def _stored(self, turn: TurnRecord) -> None:
        if turn.moved:  # another writer appended meanwhile: the turn was stored after it, rehashed
            self.system_commit = None
        self.head = turn.head or self.head
        self.keep_state()

    async def _call_model(self, request: ModelRequest, turn: TurnRecord) -> AssistantTurn:
        if self.trace is not None:
            reply, usage = await self._traced_model_call(self.trace, request, turn)
            await self._usage_reported(usage)
            return reply
        emit = self.emit if self.on_event is not None else None
        reply = await model_reply(self.adapter, request, turn=self.turns + 1, emit=emit)
        # Staged in memory (the turn is written when it ends): no trip to the worker thread.
        reply, usage = self._record_reply(reply, turn)
        await self._usage_reported(usage)
        return reply

    async def _usage_reported(self, usage: Usage) -> None:
        if self.on_event is not None:
            from . import run_events  # built only for a listener: loaded on first use

            await self.emit(run_events.UsageReported(turn=self.turns, usage=usage, total=self.usage))

    async def _traced_model_call(
        self, trace: RunSpan, request: ModelRequest, turn: TurnRecord
    ) -> tuple[AssistantTurn, Usage]:
        span = trace.model_call(request)
        try:
            with span.activated(), model_call_scope(span):
                reply = await model_reply(self.adapter, request, turn=self.turns + 1, emit=self.emit)
            ids = span.ids()
            reply, usage = self._record_reply(reply, turn, trace_ids=ids)  # staged in memory
        except BaseException as exc:
            span.fail(exc)
            raise
        span.finish(reply, usage)
        return reply, usage

    def _request(self, choice: ToolChoice) -> ModelRequest:
        if self.rendered.tools_changed():  # a live toolset (an MCP server) changed its tools
            rendered = self.prompt.render(self.session)
            self._adopt(self.prompt, rendered)
            self._commit_system(rendered.text)
        rendered = self.rendered
        context = self.outputs.compile(self.transcript)
        tools = rendered.tools + self.outputs.offered_tools(rendered.tool_names, context, choice)
        self._link_tools(tools)
        return ModelRequest(
            context=context,
            tools=tools,
            tool_choice=choice,
            output_schema=rendered.output_schema,
            output_name=rendered.output_name,
            max_output_tokens=self.max_output_tokens,
            output_mode=rendered.output_mode,
            deadline=self.deadline,
            dispatcher=self.session.dispatcher,
        )

    def _record_reply(
        self, reply: AssistantTurn, turn: TurnRecord, *, trace_ids: JSONObject | None = None
    ) -> tuple[AssistantTurn, Usage]:
        if reply.tool_calls:  # arguments a transcript cannot store are kept as text the dispatcher refuses
            calls = tuple(call.storable() for call in reply.tool_calls)
            if any(new is not old for new, old in zip(calls, reply.tool_calls, strict=True)):
                reply = attrs.evolve(reply, tool_calls=calls)
        self.turns += 1
        usage = reply.usage
        if usage.model_calls == 0:  # the loop knows one call was made even if the adapter did not say
            usage = usage + _ONE_CALL
        self.usage = self.usage + usage
        if self.tracker is not None:
            self.tracker.record(usage)
        commit = self.transcript.assistant(
            reply.text,
            tool_calls=reply.tool_calls,
            usage=usage,
            metadata={**reply.metadata, **({} if trace_ids is None else {TRACE_KEY: trace_ids})} or None,
        )
        self.head = commit.hash
        if not self.session.dispatcher.wants(ModelTurnCompleted):
            return reply, usage
        event = ModelTurnCompleted(
            prompt_name=self.name,
            adapter=self.adapter_name,
            model=self.adapter.model,
            turn=self.turns,
            text=reply.text,
            tool_calls=reply.tool_calls,
            usage=usage,
            finish_reason=reply.finish_reason,
            commit_hash=commit.hash,
            session_id=self.session.session_id,
            created_at=self.session.clock.now(),
        )
        self._publish_when_stored(turn, event, commit.hash)
        return reply, usage

    async def _run_tools(self, calls: tuple[ToolCall, ...], turn: TurnRecord) -> None:
        """Run the reply's calls: in call-order groups, concurrently within a group (``specs/TOOLS.md``).

        A group is a maximal run of consecutive calls none of which must run
        alone; a call that must (a ``sequential`` tool) is a group of its
        own. Groups are formed one at a time, after the previous one is
        settled, so an expansion of the prompt is seen by the calls after it.
        """
        index = 0
        while index < len(calls):
            end = index + 1
            if self.concurrent_tools and not self.dispatcher.runs_alone(calls[index]):
                while end < len(calls) and not self.dispatcher.runs_alone(calls[end]):
                    end += 1
            group = calls[index:end]
            if len(group) == 1 and not self._awaits_handler(group[0]):
                await self._run_with_store_work(group[0], turn)
                index = end
                continue
            if len(group) == 1:
                outcomes: list[ToolExecution | VisibilityExpansionRequired | ToolCallPending] = []
                try:
                    outcomes.append(await self.dispatcher.execute_async(group[0]))
                except (VisibilityExpansionRequired, ToolCallPending) as request:
                    outcomes.append(request)
            else:
                outcomes = await self.dispatcher.execute_concurrently(group)
            for call, outcome in zip(group, outcomes, strict=True):
                if isinstance(outcome, ToolCallPending):
                    await _hold(self, outcome, turn)
                    continue
                await self._take_result(call, outcome, turn)
            index = end

    def _awaits_handler(self, call: ToolCall) -> bool:
        """Whether ``call``'s handler is awaited on the loop (an async one); a sync one runs off it."""
        known = self.async_handlers.get(call.name)
        if known is None:
            tool = self.dispatcher.tools.get(call.name)
            known = self.async_handlers[call.name] = tool is not None and is_async_handler(tool.handler)
        return known

    async def _run_with_store_work(self, call: ToolCall, turn: TurnRecord) -> None:
        """A call that runs alone with a sync handler: the handler and its result's staging in one step.

        Both are blocking work, so they take one trip off the event loop
        instead of two (a thread of the loop's default executor, never a
        shared store lane, since a handler may take its time; inline on a
        loop the run has to itself, see ``_store_work``). A cancellation
        meanwhile waits for the handler to return, so the rollback that
        follows sees all it changed.
        """

        def work() -> tuple[str, bool] | ToolCallPending:
            try:
                outcome: ToolExecution | VisibilityExpansionRequired = self.dispatcher.execute(call)
            except VisibilityExpansionRequired as request:
                outcome = request
            except ToolCallPending as pending:  # waits for a decision: nothing to stage
                return pending
            return self._stage_result(call, outcome, turn)

        done = await self._io.settled(work, may_block=True)
        if isinstance(done, ToolCallPending):
            await _hold(self, done, turn)
            return
        await self._result_ready(call, *done)

    async def _take_result(
        self,
        call: ToolCall,
        outcome: ToolExecution | VisibilityExpansionRequired,
        turn: TurnRecord,
        provenance: JSONObject | None = None,
    ) -> None:
        """Stage a call's result in ``turn`` off the loop, then report it.

        Not on a shared lane when it runs user code or handles a large output, which may take
        their time (a ``tool_result`` hook asking a model for a summary, say).
        """
        staged = functools.partial(self._stage_result, call, outcome, turn, provenance)
        content, failed = await self._io(staged, may_block=self._staging_may_block(outcome))
        await self._result_ready(call, content, failed)

    def _staging_may_block(self, outcome: ToolExecution | VisibilityExpansionRequired) -> bool:
        """Whether staging ``outcome`` runs user code (a hook, custom summaries) or a large output."""
        return (
            self.transcript.hooks.handler("tool_result") is not None
            or self.outputs.settings.summaries is not None
            or (isinstance(outcome, ToolExecution) and len(outcome.message) > _QUICK_STAGING_CHARS)
        )

    def _stage_result(
        self,
        call: ToolCall,
        outcome: ToolExecution | VisibilityExpansionRequired,
        turn: TurnRecord,
        provenance: JSONObject | None = None,
    ) -> tuple[str, bool]:
        """Stage a call's result in ``turn`` (through the output pipeline); the text and failure flag.

        A traced call's span stays current meanwhile, so summaries of the result nest under it.
        """
        span = self.open_tools.pop(id(call), None) if self.trace is not None else None
        if span is None:
            return self._stage_plain(call, outcome, turn, provenance, None)
        try:
            with span.activated():
                content, failed = self._stage_plain(call, outcome, turn, provenance, span)
        except BaseException as exc:
            span.fail(exc)
            raise
        span.finish(content, is_error=failed)
        return content, failed

    def _stage_plain(
        self,
        call: ToolCall,
        outcome: ToolExecution | VisibilityExpansionRequired,
        turn: TurnRecord,
        provenance: JSONObject | None,
        span: ToolSpan | None,
    ) -> tuple[str, bool]:
        ids = None if span is None else span.ids()
        trace_meta: JSONObject = {} if ids is None else {TRACE_KEY: ids}
        if isinstance(outcome, VisibilityExpansionRequired):
            text, refused = self._expand(outcome)
            return self._commit_result(call, text, refused, turn=turn, metadata=trace_meta or None)
        self.executions.append(outcome)
        failed = not outcome.result.success
        processed = self.outputs.process(call, outcome.message, is_error=failed, turn=turn)
        if span is not None and processed.oversize_reason is not None:
            _report_handle(span, processed.metadata, processed.oversize_reason)
        metadata = {**processed.metadata, **_extraction_metadata(outcome.result.value), **trace_meta}
        if provenance is not None:  # how a person decided this call (specs/APPROVAL.md)
            from .pause_records import APPROVAL_KEY

            metadata[APPROVAL_KEY] = provenance
        return self._commit_result(call, processed.content, failed, turn=turn, metadata=metadata)

    async def _result_ready(self, call: ToolCall, content: str, failed: bool) -> None:
        if self.on_event is not None:
            from . import run_events  # built only for a listener: loaded on first use

            await self.emit(
                run_events.ToolResultReady(turn=self.turns, call=call, content=content, is_error=failed)
            )

    def _commit_result(
        self,
        call: ToolCall,
        content: str,
        failed: bool,
        *,
        turn: TurnRecord,
        metadata: JSONObject | None = None,
    ) -> tuple[str, bool]:
        # Here, not at the top: the transcript package is loaded with the store, when an evaluation runs.
        from ..transcript.hooks import ToolResultRejected

        try:
            commit = self.transcript.tool_result(
                call.id, call.name, content, is_error=failed, metadata=metadata
            )
        except ToolResultRejected as rejection:  # a hook refused it; the call still needs an answer
            from ..transcript.hook_run import commit_withheld

            commit = commit_withheld(self.transcript, rejection)
        self.head = commit.hash
        if not self.session.dispatcher.wants(ToolResultCommitted):
            return commit.content.content, commit.content.is_error
        event = ToolResultCommitted(
            prompt_name=self.name,
            turn=self.turns,
            call=call,
            content=commit.content.content,  # hooks may have changed it
            is_error=commit.content.is_error,
            commit_hash=commit.hash,
            session_id=self.session.session_id,
            created_at=self.session.clock.now(),
        )
        self._publish_when_stored(turn, event, commit.hash)
        return commit.content.content, commit.content.is_error

    def _publish_when_stored(
        self, turn: TurnRecord, event: ModelTurnCompleted | ToolResultCommitted, staged: str
    ) -> None:
        """Publish ``event`` once ``turn`` is stored (never, if it is not), naming the stored commit."""
        turn.attach(_PublishWhenStored(self, turn, event, staged))

    def _reject_output(self, text: str, error: OutputParseError, *, turns_left: bool) -> None:
        """Give the model a corrective turn, or re-raise when none is allowed."""
        retrying = turns_left and self.retries_used < self.output_retries
        self._publish(
            OutputRejected(
                prompt_name=self.name,
                turn=self.turns,
                text=text,
                errors=str(error),
                retrying=retrying,
                session_id=self.session.session_id,
                created_at=self.session.clock.now(),
            )
        )
        if not retrying:
            if self.retries_used:
                error.add_note(f"the model already had {self.retries_used} corrective turn(s)")
            elif not turns_left:
                error.add_note("no model call was left under max_turns for a corrective turn")
            raise error
        self.retries_used += 1
        correction = loop_messages.output_correction(
            str(error), self.rendered.output_name, self.rendered.output_schema
        )
        self.head = self.transcript.user(correction).hash

    # -- progressive disclosure -----------------------------------------------------------------

    def _expand(self, request: VisibilityExpansionRequired) -> tuple[str, bool]:
        """Re-render with the requested sections open; returns the tool result text and failure flag."""
        if len(self.expanded) >= self.max_expansions:
            return loop_messages.expansion_limit(self.max_expansions), True
        try:
            prompt = self.prompt.with_expanded(request.section_keys)
            rendered = prompt.render(self.session)
        except PromptRenderError as exc:
            return loop_messages.expansion_refused(str(exc)), True
        self._adopt(prompt, rendered)
        self._commit_system(rendered.text)
        self.expanded.extend(request.section_keys)
        self._publish(
            SectionsExpanded(
                prompt_name=self.name,
                section_keys=request.section_keys,
                reason=request.reason,
                tool_names=rendered.tool_names,
                session_id=self.session.session_id,
                created_at=self.session.clock.now(),
            )
        )
        return loop_messages.sections_opened(request.section_keys, rendered.tool_names), False

    # -- helpers --------------------------------------------------------------------------------

    def _adopt(self, prompt: Prompt[OutputT], rendered: RenderedPrompt[OutputT]) -> None:
        """Make ``rendered`` the current render: event, dispatcher, active tool set."""
        self.prompt = prompt
        self.rendered = rendered
        self.async_handlers = {}
        tools = rendered.tools + self.outputs.extra_tools(rendered.tool_names)
        if self.tool_wrapper is not None:
            tools = tuple(self.tool_wrapper(tool) for tool in tools)
        self.dispatcher = ToolDispatcher(
            tools,
            session=self.session,
            prompt=prompt,
            rendered_prompt=rendered,
            adapter=self.adapter,
            deadline=self.deadline,
            budget_tracker=self.tracker,
            resources=self.resources,
            redact=self.redact,
            prompt_name=self.name,
            tool_spans=None if self.trace is None else self._tool_span,
        )
        self.offered = rendered.tool_names
        self.transcript.set_tools(rendered.tool_schemas)
        self._publish(
            PromptRendered(
                prompt_ns=rendered.ns,
                prompt_key=rendered.key,
                prompt_name=prompt.template.name,
                text=rendered.text,
                tool_names=rendered.tool_names,
                tool_hashes=rendered.tool_hashes,
                session_id=self.session.session_id,
                created_at=self.session.clock.now(),
            )
        )

    def _link_tools(self, tools: tuple[AnyTool, ...]) -> None:
        """Link the tools offered on this turn (the prompt's plus any pipeline tools) to later commits."""
        names = tuple(t.name for t in tools)
        if names != self.offered:
            extra = tuple(t.spec() for t in tools[len(self.rendered.tools) :])
            self.transcript.set_tools(self.rendered.tool_schemas + extra)
            self.offered = names

    def _commit_system(self, text: str) -> None:
        """Put ``text`` first in the conversation: append it, or edit the existing system message."""
        target = self.system_commit
        if target is None and not self.empty_transcript:
            context = self.transcript.compile()
            if context.messages and context.messages[0].role == "system":
                target = context.commit_hashes[0]
                if context.messages[0].content == text:
                    self.system_commit = target
                    return
        commit = self.transcript.system(text, edit=target, metadata={PROMPT_KEY: self.name})
        self.empty_transcript = False
        self.system_commit = commit.edit_target or commit.hash
        self.head = commit.hash

    def add_usage(self, usage: Usage) -> None:
        """Count model calls made on the evaluation's behalf (tool-result summaries)."""
        self.usage = self.usage + usage

    def _publish(self, event: object) -> None:
        publish(self.session.dispatcher, event, logger=logger, about=f"during evaluation of {self.name!r}")

    async def _finish(self, reply: AssistantTurn, output: OutputT) -> PromptResponse[OutputT]:
        response = self._response(reply, output)
        await self._run_finished(response)
        return response

    async def _finish_paused(self, reply: AssistantTurn | None) -> PromptResponse[OutputT]:
        """End the run on its pause: no output (``paused`` says why), no ``PromptExecuted``."""
        response = self._response(reply or AssistantTurn(), cast("OutputT", None), executed=False)
        await self._run_finished(response)
        return response

    async def _run_finished(self, response: PromptResponse[OutputT]) -> None:
        if self.on_event is not None:
            from . import run_events  # built only for a listener: loaded on first use

            await self.emit(run_events.RunFinished(response))

    def _response(
        self, reply: AssistantTurn, output: OutputT, *, executed: bool = True
    ) -> PromptResponse[OutputT]:
        self.usage = self.usage + self.outputs.side_usage
        if executed:
            self._publish(
                PromptExecuted(
                    prompt_name=self.name,
                    adapter=self.adapter_name,
                    text=reply.text,
                    output=output if output is not None else reply.text,
                    usage=self.usage,
                    turns=self.turns,
                    session_id=self.session.session_id,
                    created_at=self.session.clock.now(),
                )
            )
        return PromptResponse(
            text=reply.text,
            output=output,
            usage=self.usage,
            turns=self.turns,
            head=self.head,
            session_id=self.session.session_id,
            transcript_id=self.transcript.session_id,
            tool_executions=tuple(self.executions),
            rendered=self.rendered,
            finish_reason=reply.finish_reason,
            expanded_sections=tuple(self.expanded),
            output_retries_used=self.retries_used,
            paused=None if executed else self.paused,
        )


def _journal(evaluation: _Evaluation[Any], reply: AssistantTurn) -> None:
    from . import _run_pause

    _run_pause.write_journal(evaluation, reply)


async def _resuming(evaluation: _Evaluation[Any], turn: TurnRecord) -> None:
    from . import _run_pause

    await _run_pause.resume_steps(evaluation, turn)


async def _decide_inline(evaluation: _Evaluation[Any]) -> None:
    from . import _run_pause

    await _run_pause.decide_inline(evaluation)


async def _hold(evaluation: _Evaluation[Any], pending: ToolCallPending, turn: TurnRecord) -> None:
    """Keep a call waiting for a decision; the turn will end in a pause (or an inline decision)."""
    from . import _run_pause

    await _run_pause.hold(evaluation, pending, turn)


def _open_turn(
    evaluation: _Evaluation[Any],
    staging: contextlib.AbstractContextManager[TurnRecord],
    entered: list[TurnRecord],
    choice: ToolChoice,
) -> ModelRequest:
    """Enter the turn's staging block and compile its request (one trip off the loop)."""
    entered.append(staging.__enter__())
    return evaluation._request(choice)  # pyright: ignore[reportPrivateUsage]


def _write_and_open_next(
    evaluation: _Evaluation[Any],
    staging: contextlib.AbstractContextManager[TurnRecord],
    turn: TurnRecord,
    following: contextlib.AbstractContextManager[TurnRecord] | None,
    opened: list[TurnRecord],
) -> ModelRequest | None:
    """Store the turn, then open the next one and compile its request, if there is one."""
    _write_turn(evaluation, staging, turn)
    if following is None:
        return None
    opened.append(following.__enter__())
    return evaluation._request("auto")  # pyright: ignore[reportPrivateUsage]


def _write_turn(
    evaluation: _Evaluation[Any], staging: contextlib.AbstractContextManager[TurnRecord], turn: TurnRecord
) -> None:
    """Store the staged turn, with the run state it ends in (a pause, the journal), in one transaction."""
    try:
        _attach_run_state(evaluation, turn)
    except BaseException as exc:
        staging.__exit__(type(exc), exc, exc.__traceback__)
        raise
    staging.__exit__(None, None, None)


def _attach_run_state(evaluation: _Evaluation[Any], turn: TurnRecord) -> None:
    from . import _run_pause

    _run_pause.attach_run_state(evaluation, turn)


_ONE_CALL = Usage(model_calls=1)


def _extraction_metadata(value: object) -> JSONObject:
    """A ``tool_output`` reply's commit keeps how its extraction went (strategy, fallback reason)."""
    from .results.extraction import ExtractionResult

    return value.commit_metadata() if isinstance(value, ExtractionResult) else {}


TRACE_KEY = "trace"
"""The commit metadata key of a traced turn's step: ``{"trace_id": ..., "span_id": ...}``."""


def _report_handle(span: ToolSpan, metadata: JSONObject, reason: str) -> None:
    from ..transcript.lazy import STORED_OUTPUT_KEY  # loaded with the store, when an evaluation runs

    stored = cast("JSONObject", metadata[STORED_OUTPUT_KEY])  # an oversized result is always stored
    size = stored.get("size_bytes")
    span.handle(str(stored["handle"]), reason, size if isinstance(size, int) else None)


class _PublishWhenStored:
    """A turn write with no rows: publishes a loop event once the turn is stored, with its stored hash.

    One small object instead of a closure (a function, its cells) and the
    wrapper ``on_stored`` would add: two per model turn of every running
    session stay alive while the model answers.
    """

    __slots__ = ("evaluation", "event", "staged", "turn")

    def __init__(
        self,
        evaluation: _Evaluation[Any],
        turn: TurnRecord,
        event: ModelTurnCompleted | ToolResultCommitted,
        staged: str,
    ) -> None:
        self.evaluation = evaluation
        self.turn = turn
        self.event = event
        self.staged = staged

    def write(self, conn: Connection) -> None:
        return None

    def plan(self) -> Callable[[Connection], None]:
        return self.write  # it writes nothing, and reads nothing

    def committed(self) -> None:
        event, stored = self.event, self.turn.stored_hash(self.staged)
        self.evaluation._publish(  # pyright: ignore[reportPrivateUsage]
            event if stored == self.staged else attrs.evolve(event, commit_hash=stored)
        )


class _OpenTurn:
    """A transcript turn already opened (its staging block entered) and the request compiled on it."""

    __slots__ = ("record", "request", "staging")

    def __init__(
        self,
        staging: contextlib.AbstractContextManager[TurnRecord],
        record: TurnRecord,
        request: ModelRequest,
    ) -> None:
        self.staging = staging
        self.record = record
        self.request = request
