"""Running the tool calls of one reply, and staging each result in the turn that will store it.

Calls run in call-order groups, concurrently within a group where the
concurrency rule allows (``specs/TOOLS.md``). Each result goes through the
tool-result pipeline (one call: redact, hook, size policy, stage) and is
staged as a commit of the open transcript turn; a call that waits for a
decision is handed to ``runtime.pausing``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from ..errors import VisibilityExpansionRequired
from ..events import ToolInvoked
from ..tools import is_async_handler
from ..transcript.lazy import STORED_OUTPUT_KEY
from .child_runs import child_link
from .dispatcher import ToolExecution
from .pause_errors import ToolCallPending
from .recording import TRACE_KEY, report_when_stored

if TYPE_CHECKING:
    from ..jsontypes import JSONObject
    from ..messages import ToolCall
    from ..transcript.records import CommitInfo
    from ..transcript.turns import TurnRecord
    from .evaluation import Evaluation
    from .results.pipeline import ProcessedResult
    from .tracing import ToolSpan

__all__ = ["run_tools", "take_result"]

_QUICK_STAGING_CHARS = 1 << 16
"""A result up to this size is measured, hashed and staged in well under a millisecond."""


async def run_tools(
    evaluation: Evaluation[Any],
    calls: tuple[ToolCall, ...],
    turn: TurnRecord,
    *,
    before: Callable[[], None] | None = None,
) -> None:
    """Run the reply's calls: in call-order groups, concurrently within a group (``specs/TOOLS.md``).

    A group is a maximal run of consecutive calls none of which must run
    alone; a call that must (a ``sequential`` tool) is a group of its
    own. Groups are formed one at a time, after the previous one is
    settled, so an expansion of the prompt is seen by the calls after it.
    ``before``: store work that must be done before any call starts (the
    journal), in the first call's trip off the loop when that is a sync call.
    """
    index = 0
    while index < len(calls):
        end = index + 1
        if evaluation.settings.concurrent_tools and not evaluation.dispatcher.runs_alone(calls[index]):
            while end < len(calls) and not evaluation.dispatcher.runs_alone(calls[end]):
                end += 1
        group = calls[index:end]
        if len(group) == 1 and not awaits_handler(evaluation, group[0]):
            await run_with_store_work(evaluation, group[0], turn, before=before)
            before, index = None, end
            continue
        if before is not None:
            await evaluation.io(before)
            before = None
        if len(group) == 1:
            outcomes: list[ToolExecution | VisibilityExpansionRequired | ToolCallPending] = []
            try:
                outcomes.append(await evaluation.dispatcher.execute_async(group[0]))
            except (VisibilityExpansionRequired, ToolCallPending) as request:
                outcomes.append(request)
        else:
            outcomes = await evaluation.dispatcher.execute_concurrently(group)
        for call, outcome in zip(group, outcomes, strict=True):
            if isinstance(outcome, ToolCallPending):
                await _hold(evaluation, outcome, turn)
                continue
            await take_result(evaluation, call, outcome, turn)
        index = end


def awaits_handler(evaluation: Evaluation[Any], call: ToolCall) -> bool:
    """Whether ``call``'s handler is awaited on the loop (an async one); a sync one runs off it."""
    known = evaluation.async_handlers.get(call.name)
    if known is None:
        tool = evaluation.dispatcher.tools.get(call.name)
        known = evaluation.async_handlers[call.name] = tool is not None and is_async_handler(tool.handler)
    return known


async def run_with_store_work(
    evaluation: Evaluation[Any], call: ToolCall, turn: TurnRecord, *, before: Callable[[], None] | None = None
) -> None:
    """A call that runs alone with a sync handler: the handler and its result's staging in one step.

    Both are blocking work, so they take one trip off the event loop
    instead of two (a thread of the loop's default executor, never a
    shared store lane, since a handler may take its time; inline on a
    loop the run has to itself, see ``_store_work``). ``before`` (the
    journal's write) runs first in the same trip, on a connection of its
    own. A cancellation meanwhile waits for the handler to return, so
    the rollback that follows sees all it changed.
    """

    def work() -> ToolExecution | VisibilityExpansionRequired | ToolCallPending:
        if before is not None:
            before()
        try:
            outcome: ToolExecution | VisibilityExpansionRequired = evaluation.dispatcher.execute(call)
        except VisibilityExpansionRequired as request:
            outcome = request
        except ToolCallPending as pending:  # waits for a decision: nothing to stage
            return pending
        stage_result(evaluation, call, outcome, turn)
        return outcome

    done = await evaluation.store_work.settled(work, may_block=True)
    if isinstance(done, ToolCallPending):
        await _hold(evaluation, done, turn)
        return
    await result_ready(evaluation, done)


async def take_result(
    evaluation: Evaluation[Any],
    call: ToolCall,
    outcome: ToolExecution | VisibilityExpansionRequired,
    turn: TurnRecord,
    provenance: JSONObject | None = None,
) -> None:
    """Stage a call's result in ``turn`` off the loop, then report it.

    Not on a shared lane when it runs user code or handles a large output, which may take
    their time (a ``tool_result`` hook asking a model for a summary, say).
    """
    staged = functools.partial(functools.partial(stage_result, evaluation), call, outcome, turn, provenance)
    await evaluation.store_work(staged, may_block=staging_may_block(evaluation, outcome))
    await result_ready(evaluation, outcome)


def staging_may_block(
    evaluation: Evaluation[Any], outcome: ToolExecution | VisibilityExpansionRequired
) -> bool:
    """Whether staging ``outcome`` runs user code (a hook, custom summaries) or a large output."""
    return (
        evaluation.transcript.hooks.handler("tool_result") is not None
        or evaluation.outputs.settings.summaries is not None
        or (isinstance(outcome, ToolExecution) and len(outcome.message) > _QUICK_STAGING_CHARS)
    )


def stage_result(
    evaluation: Evaluation[Any],
    call: ToolCall,
    outcome: ToolExecution | VisibilityExpansionRequired,
    turn: TurnRecord,
    provenance: JSONObject | None = None,
) -> tuple[str, bool]:
    """Stage a call's result in ``turn`` (through the output pipeline); the text and failure flag.

    A traced call's span stays current meanwhile, so summaries of the result nest under it.
    """
    span = evaluation.open_tools.pop(id(call), None) if evaluation.trace is not None else None
    if span is None:
        return stage_plain(evaluation, call, outcome, turn, provenance, span=None)
    try:
        with span.activated():
            content, failed = stage_plain(evaluation, call, outcome, turn, provenance, span=span)
    except BaseException as exc:
        span.fail(exc)
        raise
    span.finish(content, is_error=failed)
    return content, failed


def stage_plain(
    evaluation: Evaluation[Any],
    call: ToolCall,
    outcome: ToolExecution | VisibilityExpansionRequired,
    turn: TurnRecord,
    provenance: JSONObject | None,
    *,
    span: ToolSpan | None,
) -> tuple[str, bool]:
    """One call through the tool-result pipeline, committed in ``turn``; the text and failure flag."""
    ids = None if span is None else span.ids()
    metadata: JSONObject = {} if ids is None else {TRACE_KEY: ids}
    if isinstance(outcome, VisibilityExpansionRequired):
        text, failed = evaluation.expand(outcome)
        processed = evaluation.outputs.process(
            call, text, is_error=failed, turn=turn, metadata=metadata, framework_text=True
        )
    else:
        evaluation.executions.append(outcome)
        metadata.update(_extraction_metadata(outcome.result.value))
        metadata.update(child_link(call))  # the session of the agent this call ran (specs/SUBAGENTS.md)
        if provenance is not None:  # how a person decided this call (specs/APPROVAL.md)
            from .pause_records import APPROVAL_KEY  # loaded with the first decided call

            metadata[APPROVAL_KEY] = provenance
        failed = not outcome.result.success
        processed = evaluation.outputs.process(
            call, outcome.message, is_error=failed, turn=turn, metadata=metadata, parts=outcome.result.parts
        )
    if span is not None and processed.oversize_reason is not None:
        _report_handle(span, processed.metadata, processed.oversize_reason)
    commit = processed.commit
    assert commit is not None  # the pipeline commits every result it is given a transcript for
    return committed(evaluation, call, commit, turn, processed)


async def result_ready(
    evaluation: Evaluation[Any], outcome: ToolExecution | VisibilityExpansionRequired
) -> None:
    """Stream the call's ``ToolInvoked``: the one the dispatcher published on the bus, the same object."""
    if evaluation.on_event is None:
        return
    invoked = outcome.event if isinstance(outcome, ToolExecution) else outcome.invoked
    if isinstance(invoked, ToolInvoked):  # pragma: no branch - the dispatcher sets it on what it raises
        await evaluation.emit(invoked)


def committed(
    evaluation: Evaluation[Any],
    call: ToolCall,
    commit: CommitInfo,
    turn: TurnRecord,
    processed: ProcessedResult | None = None,
) -> tuple[str, bool]:
    """The result's commit is staged: the run's head moves, its ``ToolResultStored`` waits for the turn."""
    evaluation.head = commit.hash
    content, is_error = commit.content.content, commit.content.is_error  # hooks may have changed them
    report_when_stored(
        evaluation, turn, call, content=content, is_error=is_error, staged=commit.hash, processed=processed
    )
    return content, is_error


def _extraction_metadata(value: object) -> JSONObject:
    """A ``tool_output`` reply's commit keeps how its extraction went (strategy, fallback reason)."""
    from .results.extraction import ExtractionResult

    return value.commit_metadata() if isinstance(value, ExtractionResult) else {}


def _report_handle(span: ToolSpan, metadata: JSONObject, reason: str) -> None:
    stored = cast("JSONObject", metadata[STORED_OUTPUT_KEY])  # an oversized result is always stored
    size = stored.get("size_bytes")
    span.handle(str(stored["handle"]), reason, size if isinstance(size, int) else None)


async def _hold(evaluation: Evaluation[Any], pending: ToolCallPending, turn: TurnRecord) -> None:
    """Keep a call waiting for a decision; the turn will end in a pause (or an inline decision)."""
    from . import pausing  # loaded by the first call that waits: a plain run never needs it

    await pausing.hold(evaluation, pending, turn)
