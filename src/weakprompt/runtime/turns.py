"""The turn driver: the loop of model turns of one run, each stored as one transcript turn.

:func:`drive` runs an :class:`~weakprompt.runtime.evaluation.Evaluation`
until the model answers, a limit stops it, or calls wait for decisions.
Each model turn (:func:`model_turn`) opens a transcript turn, compiles the
request, asks the adapter for one reply, runs its tool calls
(``runtime.tool_calls``) and writes the turn, with the run state it ends in
(``runtime.pausing``), in one transaction. :func:`staged_turn` stores the
decided calls of a resumed run the same way.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar, cast

import attrs

from ..errors import MaxTurnsExceededError
from ..messages import AssistantTurn, Usage
from ._model_stream import model_reply
from .guardrails import (
    alongside,
    check_input,
    check_output,
    final_reply,
    raise_output_trip,
    recording_trips,
)
from .handoff_runs import ending_call
from .output_checks import judge, reject_output
from .recording import record_reply
from .tool_calls import run_tools
from .tracing import model_call_scope

if TYPE_CHECKING:
    from ..jsontypes import JSONObject
    from ..model import ModelRequest, ToolChoice
    from ..parts import Content
    from ..transcript.turns import TurnRecord
    from .evaluation import Evaluation
    from .response import PromptResponse
    from .tracing import RunSpan

__all__ = ["drive", "model_turn", "staged_turn"]

OutputT = TypeVar("OutputT")
T = TypeVar("T")


async def drive(
    evaluation: Evaluation[OutputT], input: Content | None, *, max_turns: int, first_choice: ToolChoice
) -> PromptResponse[OutputT]:
    choice: ToolChoice = first_choice
    ahead: _OpenTurn | None = None  # the next turn, opened with the write of the last one
    reply: AssistantTurn | None = None
    if evaluation.resumption is None:  # the run starts and its first turn opens in one trip
        input, trip = await check_input(evaluation, input)  # guardrails: before anything is stored
        ahead = await _start(evaluation, input, first_choice)
        if trip is not None:  # stored with the input, which is all the run stores
            await drop_ahead(evaluation, ahead.staging, trip)
            trip.recorded = True
            raise trip
    else:
        await evaluation.io(lambda: evaluation.start(input, first_choice))
        evaluation.turns_before = evaluation.resumption.context.turns
        await recording_trips(evaluation, staged_turn(evaluation, lambda turn: _resuming(evaluation, turn)))
    while True:
        if evaluation.pending:  # the last turn ended on calls waiting for decisions (none opened ahead)
            if evaluation.settings.approve is None:
                return await evaluation.finish_paused(reply)
            await _decide_inline(evaluation)
            continue
        try:
            if not evaluation.turns_left(max_turns):
                raise MaxTurnsExceededError(max_turns)
            if evaluation.deadline is not None:
                evaluation.deadline.check()
            if evaluation.tracker is not None:
                evaluation.tracker.check()
        except BaseException as exc:
            if evaluation.input_check is not None:  # the input's concurrent checks: not needed now
                evaluation.input_check.cancel()
            if ahead is not None:
                await drop_ahead(evaluation, ahead.staging, exc)
            raise
        reply, ahead = await recording_trips(
            evaluation, model_turn(evaluation, choice, ahead, max_turns=max_turns)
        )
        choice = "auto"
        if reply.tool_calls:
            if evaluation.ended_by is not None:  # a handoff: the run ends with the turn that made it
                return await evaluation.finish(reply, cast("OutputT", None))
            continue
        raise_output_trip(evaluation)  # the answer a guardrail stopped is stored: now the run stops
        verdict = evaluation.verdict
        if verdict is None:  # no output type: the prompt is a Prompt[None]
            return await evaluation.finish(final_reply(evaluation, reply), cast("OutputT", None))
        if verdict.rejection is not None:
            left = evaluation.turns_left(max_turns)
            await evaluation.io(
                functools.partial(reject_output, evaluation, reply.text, verdict, turns_left=left)
            )
            continue
        return await evaluation.finish(reply, cast("OutputT", verdict.output))


async def model_turn(
    evaluation: Evaluation[Any], choice: ToolChoice, ahead: _OpenTurn | None, *, max_turns: int
) -> tuple[AssistantTurn, _OpenTurn | None]:
    """One model call and the tool calls it asked for, stored together as one transcript turn.

    The turn is staged on the worker thread and written there in one
    transaction when it ends: the reply's commit, its results' commits
    and their stored outputs. A failure or cancellation before that
    drops it whole; one that arrives while it is being written waits
    for the write, so the turn is either stored or not, never half. The
    events that report it (``ModelTurnCompleted``, each result's
    ``ToolResultStored``) are published once it has committed, with the
    hashes as stored, and ``TurnCommitted`` after them.

    The turn is opened, and its request compiled, in one trip to the
    worker thread (``ahead``: already, in the trip that wrote the turn
    before). When the model asked for tools and a model call is left, the
    trip that writes this turn opens the next one too (and returns it),
    so a round trip costs one trip less; the loop drops it unopened if
    a limit stops the run first.
    """

    # No closures here: a variable a nested function uses becomes a cell object, and this
    # frame lives through the model call; partials of module functions instead.
    before = evaluation.head
    since = len(evaluation.executions)
    staging = ahead.staging if ahead is not None else evaluation.transcript.turn(refresh=False)
    entered: list[TurnRecord] = [ahead.record] if ahead is not None else []
    try:
        request = (
            ahead.request
            if ahead is not None
            else await evaluation.store_work.settled(
                functools.partial(_open_turn, evaluation, staging, entered, choice)
            )
        )
        turn = entered[0]
        reply = await alongside(evaluation, call_model(evaluation, request, turn))
        if evaluation.window is not None:
            evaluation.window.calibrate(reply.usage)
        if reply.tool_calls:
            if evaluation.tracker is not None:  # max_tool_calls: none of them runs past the limit
                evaluation.tracker.take_tool_calls(len(reply.tool_calls))
            # The journal is written before any call starts (with the first one, when it is a sync call).
            journal = functools.partial(_journal, evaluation, reply) if evaluation.journal else None
            await run_tools(evaluation, reply.tool_calls, turn, before=journal)
    except BaseException as exc:
        evaluation.head = before  # nothing of the unfinished turn is stored
        if entered:
            await evaluation.store_work.settled(
                functools.partial(staging.__exit__, type(exc), exc, exc.__traceback__)
            )
        raise
    # No turn ahead when calls wait for a decision (the run pauses or decides first), or when a
    # call of an ends_run tool (a handoff) ends the run with this turn.
    if reply.tool_calls and not evaluation.pending:
        evaluation.ended_by = ending_call(evaluation, since)
    following = (
        evaluation.transcript.turn(refresh=False)
        if reply.tool_calls
        and evaluation.turns_left(max_turns)
        and not evaluation.pending
        and evaluation.ended_by is None
        else None
    )
    opened: list[TurnRecord] = []
    # A text answer ends the run: what its scope holds is closed in the trip that writes it.
    closing = evaluation.closing if not reply.tool_calls and evaluation.rendered.output_type is None else None
    try:
        upcoming = await evaluation.store_work.settled(
            functools.partial(
                _write_and_open_next, evaluation, staging, turn, following, opened, closing=closing
            )
        )
    except BaseException as exc:
        if following is not None and opened:
            await drop_ahead(evaluation, following, exc)
        if not turn.stored:
            evaluation.head = before
            raise
        evaluation.stored(turn)  # cancelled while writing, but the write went through
        raise
    evaluation.stored(turn)
    await evaluation.emit_stored(turn)
    if following is None or upcoming is None:
        return reply, None
    return reply, _OpenTurn(following, opened[0], upcoming)


async def staged_turn(evaluation: Evaluation[Any], body: Callable[[TurnRecord], Awaitable[T]]) -> T:
    """Run ``body`` (a resumed run's decided calls) in one transcript turn, stored as one write."""
    before = evaluation.head
    staging = evaluation.transcript.turn(refresh=False)
    turn = await evaluation.io(staging.__enter__)
    try:
        outcome = await body(turn)
    except BaseException as exc:
        evaluation.head = before  # nothing of the unfinished turn is stored
        await evaluation.store_work.settled(
            functools.partial(staging.__exit__, type(exc), exc, exc.__traceback__)
        )
        raise
    try:
        await evaluation.store_work.settled(lambda: _write_turn(evaluation, staging, turn))
    except BaseException:
        if not turn.stored:
            evaluation.head = before
            raise
        evaluation.stored(turn)  # cancelled while writing, but the write went through
        raise
    evaluation.stored(turn)
    await evaluation.emit_stored(turn)
    return outcome


async def drop_ahead(
    evaluation: Evaluation[Any], staging: contextlib.AbstractContextManager[TurnRecord], error: BaseException
) -> None:
    """Close a turn opened ahead that will not be used: nothing of it is stored."""
    await evaluation.store_work.settled(
        functools.partial(staging.__exit__, type(error), error, error.__traceback__)
    )


async def call_model(evaluation: Evaluation[Any], request: ModelRequest, turn: TurnRecord) -> AssistantTurn:
    if evaluation.trace is not None:
        reply, usage = await traced_model_call(evaluation, evaluation.trace, request, turn)
        await usage_reported(evaluation, usage)
        return reply
    emit = evaluation.emit if evaluation.on_event is not None else None
    reply = await model_reply(evaluation.adapter, request, turn=evaluation.turns + 1, emit=emit)
    verdict = await _judged(evaluation, reply)
    # Staged in memory (the turn is written when it ends): no trip to the worker thread.
    reply, usage = record_reply(evaluation, reply, turn, rejected=verdict)
    await usage_reported(evaluation, usage)
    return reply


async def usage_reported(evaluation: Evaluation[Any], usage: Usage) -> None:
    if evaluation.on_event is not None:
        from . import run_events  # built only for a listener: loaded on first use

        await evaluation.emit(
            run_events.UsageReported(turn=evaluation.turns, usage=usage, total=evaluation.usage)
        )


async def traced_model_call(
    evaluation: Evaluation[Any], trace: RunSpan, request: ModelRequest, turn: TurnRecord
) -> tuple[AssistantTurn, Usage]:
    span = trace.model_call(request)
    if evaluation.prefix_watch.busted is not None:
        span.cache_busted(evaluation.prefix_watch.busted)
    try:
        with span.activated(), model_call_scope(span):
            reply = await model_reply(
                evaluation.adapter, request, turn=evaluation.turns + 1, emit=evaluation.emit
            )
        ids = span.ids()
        verdict = await _judged(evaluation, reply)
        reply, usage = record_reply(
            evaluation, reply, turn, trace_ids=ids, rejected=verdict
        )  # staged in memory
    except BaseException as exc:
        span.fail(exc)
        raise
    span.finish(reply, usage)
    return reply, usage


async def _judged(evaluation: Evaluation[Any], reply: AssistantTurn) -> JSONObject | None:
    """Judge a final answer before its commit is staged; what the commit records of a rejection.

    The verdict waits on ``evaluation.verdict`` for :func:`drive`.
    """
    evaluation.verdict = None
    if reply.tool_calls:
        return None
    guarded = bool(evaluation.settings.guardrails)
    if evaluation.rendered.output_type is None:
        if not guarded:
            return None
        text, noted = await check_output(evaluation, reply.text)  # guardrails on the answer's text
        evaluation.answer_text = text
        return noted or None
    evaluation.verdict = verdict = await judge(evaluation, reply.text)
    if verdict.rejection is None and guarded:  # guardrails on the parsed answer
        output, noted = await check_output(evaluation, verdict.output)
        evaluation.verdict = attrs.evolve(verdict, output=output)
        return noted or None
    return verdict.metadata()


def _journal(evaluation: Evaluation[Any], reply: AssistantTurn) -> None:
    from . import pausing  # the pausing module: loaded on first use, see runtime/pausing.py

    pausing.write_journal(evaluation, reply)


async def _resuming(evaluation: Evaluation[Any], turn: TurnRecord) -> None:
    from . import pausing

    await pausing.resume_steps(evaluation, turn)


async def _decide_inline(evaluation: Evaluation[Any]) -> None:
    from . import pausing

    await pausing.decide_inline(evaluation)


async def _start(evaluation: Evaluation[Any], input: Content | None, choice: ToolChoice) -> _OpenTurn:
    """Start the run (its system message and input, stored) and open its first turn: one trip.

    A cancellation meanwhile waits for the trip, then closes the turn it opened unused.
    """
    staging = evaluation.transcript.turn(refresh=False)
    entered: list[TurnRecord] = []
    try:
        request = await evaluation.store_work.settled(
            functools.partial(_start_and_open, evaluation, input, staging, entered, choice)
        )
    except BaseException as exc:
        if entered:
            await drop_ahead(evaluation, staging, exc)
        raise
    return _OpenTurn(staging, entered[0], request)


def _start_and_open(
    evaluation: Evaluation[Any],
    input: Content | None,
    staging: contextlib.AbstractContextManager[TurnRecord],
    entered: list[TurnRecord],
    choice: ToolChoice,
) -> ModelRequest:
    evaluation.start(input, choice)
    return _open_turn(evaluation, staging, entered, choice)


def _open_turn(
    evaluation: Evaluation[Any],
    staging: contextlib.AbstractContextManager[TurnRecord],
    entered: list[TurnRecord],
    choice: ToolChoice,
) -> ModelRequest:
    """Enter the turn's staging block and compile its request (one trip off the loop)."""
    entered.append(staging.__enter__())
    return evaluation.request(choice)


def _write_and_open_next(
    evaluation: Evaluation[Any],
    staging: contextlib.AbstractContextManager[TurnRecord],
    turn: TurnRecord,
    following: contextlib.AbstractContextManager[TurnRecord] | None,
    opened: list[TurnRecord],
    *,
    closing: Callable[[], None] | None,
) -> ModelRequest | None:
    """Store the turn, then open the next one and compile its request, if there is one.

    ``closing``: the run ends with this turn; close its scope once the turn is stored.
    """
    if following is None:  # the run may end with this turn: its conversation, compiled while staged
        evaluation.last_turn = (evaluation.transcript.compile(), turn)
    _write_turn(evaluation, staging, turn)
    if closing is not None:
        closing()
    if following is None:
        return None
    opened.append(following.__enter__())
    return evaluation.request("auto")


def _write_turn(
    evaluation: Evaluation[Any], staging: contextlib.AbstractContextManager[TurnRecord], turn: TurnRecord
) -> None:
    """Store the staged turn, with the run state it ends in (a pause, the journal), in one transaction."""
    try:
        _attach_run_state(evaluation, turn)
    except BaseException as exc:
        staging.__exit__(type(exc), exc, exc.__traceback__)
        raise
    staging.__exit__(None, None, None)


def _attach_run_state(evaluation: Evaluation[Any], turn: TurnRecord) -> None:
    from . import pausing

    pausing.attach_run_state(evaluation, turn)


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
