"""One run's scope: what is opened for it, and how it ends (stored, rolled back, traced).

:func:`run_in_scope` opens the run's transcript (on the store given, or a
private in-memory one), its output store, the session's lease in the store
and the ``tool_result`` hooks' lending, arms the deadline, builds the
:class:`~weakprompt.runtime.evaluation.Evaluation` and drives it
(``runtime.turns``); then closes all of it on the run's store work.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Awaitable
from typing import TYPE_CHECKING, TypeVar

from ..budget import Budget, BudgetTracker
from ..clock import SystemClock
from ..errors import ConfigurationError, DeadlineExceededError
from ..store import Store
from ..store.run_leases import take_session_lease
from ..transcript.transcript import Transcript
from .child_runs import entered, frame_of
from .evaluation import Evaluation
from .results import EvaluationOutputs
from .turns import drive

if TYPE_CHECKING:
    from ..deadlines import Deadline
    from ..prompt import Prompt
    from ._store_work import StoreWork
    from .response import PromptResponse
    from .results import RunSubAgent
    from .resumption import Resumption
    from .run_settings import RunSettings
    from .tracing import RunSpan

__all__ = ["run_in_scope", "store_in_memory", "traced"]

OutputT = TypeVar("OutputT")


def store_in_memory(store: Store | None, transcript: Transcript | None) -> bool:
    """Whether the run's store is in memory: the private default, or one the caller opened so."""
    if transcript is not None:
        return transcript.store.in_memory
    return store is None or store.in_memory


async def run_in_scope(
    io: StoreWork,
    prompt: Prompt[OutputT],
    settings: RunSettings,
    *,
    trace: RunSpan | None,
    resumption: Resumption | None,
    run_agent: RunSubAgent,
) -> PromptResponse[OutputT]:
    """Open the run (its transcript, output store, session lease, hooks, deadline) and drive it.

    A failure or cancellation puts the session and snapshotable resources
    back as of the last stored turn, ends the trace's open spans, and notes
    on the error how far the run got.
    """
    adapter, session, store, transcript = (
        settings.adapter,
        settings.session,
        settings.store,
        settings.transcript,
    )
    budget, redact, deadline = settings.budget, settings.redact, settings.deadline
    tracker = BudgetTracker(budget) if isinstance(budget, Budget) else budget

    def open_transcript() -> Transcript:
        if transcript is not None:
            if store is not None and transcript.store is not store:
                raise ConfigurationError(
                    "evaluate: the transcript given belongs to another store than store="
                )
            return transcript
        opened = store
        if opened is None:
            # Nothing outside this run can read it: its writes wait until something in the run does.
            opened = Store.open("sqlite://", clock=session.clock, deferred=True)
        # A store made here holds nothing, and nothing else can write to it.
        new = store is None
        return Transcript(opened, session.session_id, token_counter=adapter.token_counter, assume_new=new)

    scope = contextlib.ExitStack()
    held: list[Transcript] = []
    # A private store this run just made is empty: nothing there needs reading to be known.
    empty = store is None and transcript is None

    def prepare() -> Evaluation[OutputT]:
        """Open the transcript, build the evaluation, take what the run holds: one trip off the loop."""
        record = open_transcript()
        held.append(record)

        outputs = EvaluationOutputs(
            transcript=record,
            empty=empty,
            session=session,
            adapter=adapter,
            tracker=tracker,
            settings=settings.tool_outputs,
            load_tool_results=settings.load_tool_results,
            retention=settings.retention,
            run_agent=run_agent,  # read-grep extraction runs its sub-agent on this loop
            redact=redact,
            traced_extraction=None
            if trace is None
            else functools.partial(trace.traced_adapter, purpose="extraction"),
        )
        evaluation = Evaluation(
            prompt,
            settings,
            transcript=record,
            tracker=tracker,
            outputs=outputs,
            io=io,
            trace=trace,
            resumption=resumption,
            empty_transcript=empty,
        )
        # Many small transactions follow one another: run them on one held connection (SQLite).
        scope.enter_context(record.store.hold_connection())
        if not empty:  # a store this run made itself: no other run can reach it
            # One run per session of a store, across Session objects and processes (store/run_leases).
            scope.callback(take_session_lease(record.store, record.session_id).release)
        outputs.open()
        scope.callback(outputs.close)
        # tool_result hooks summarize with this evaluation's adapter (unless they have their
        # own summarizer) and charge its budget and usage
        scope.enter_context(
            record.hooks.evaluation(
                adapter=adapter if trace is None else trace.traced_adapter(adapter, "summarization"),
                budget_tracker=tracker,
                dispatcher=session.bus,
                on_usage=evaluation.add_usage,
            )
        )
        # The run's last turn closes all of this in the trip that writes it (runtime.turns).
        evaluation.closing = close
        return evaluation

    def close() -> None:
        """Close what the run opened (once: the last turn's write, or the end of the run, does it)."""
        record = held.pop()
        if empty:
            _close_private(scope, record)
        else:
            scope.close()

    try:
        evaluation = await io.settled(prepare)
        # What the agents this run calls as tools need of it (runtime.child_runs, specs/SUBAGENTS.md).
        frame = frame_of(
            evaluation.transcript.store,
            session.session_id,
            evaluation.add_usage,
            evaluation.on_event,
            settings.approve,
            budget=evaluation.tracker,
        )
        try:
            with entered(frame):
                async with _deadline_scope(deadline):
                    return await drive(
                        evaluation,
                        settings.input,
                        max_turns=settings.max_turns,
                        first_choice=settings.tool_choice,
                    )
        except BaseException as exc:
            evaluation.roll_back()
            if trace is not None:
                trace.rolled_back()
                evaluation.abandon_tool_spans(exc)
            if isinstance(exc, Exception):
                record = evaluation.transcript
                exc.add_note(
                    f"weakprompt: evaluation of {evaluation.name!r} stopped after {evaluation.turns} "
                    f"model call(s); everything before is in transcript session {record.session_id!r} "
                    f"(head {evaluation.head or 'none'})"
                )
            raise
    finally:
        if held:  # not closed with the last turn (the run failed, paused, or ended otherwise)
            await io.settled(close)


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


async def traced(trace: RunSpan, work: Awaitable[PromptResponse[OutputT]]) -> PromptResponse[OutputT]:
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
