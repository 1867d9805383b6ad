"""Recording in the open turn: a model reply's commit, and the events that wait for the turn's write.

The loop publishes ``ModelTurnCompleted`` and each result's
``ToolResultStored`` only once the turn holding their commits is stored,
naming the hashes as stored (:func:`publish_when_stored`,
:func:`report_when_stored`); a turn that is dropped publishes nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs

from ..events import ToolResultStored
from ..messages import AssistantTurn, ToolCall, Usage
from ..model import TURN_CONTEXT_KEY
from .loop_events import ModelTurnCompleted

if TYPE_CHECKING:
    from sqlalchemy import Connection

    from ..jsontypes import JSONObject
    from ..model import ModelSettings
    from ..prompt import RenderedPrompt
    from ..transcript.turns import TurnRecord
    from .evaluation import Evaluation
    from .results.pipeline import ProcessedResult

__all__ = [
    "OUTPUT_SCHEMA_KEY",
    "SECTIONS_KEY",
    "SETTINGS_KEY",
    "TRACE_KEY",
    "publish_when_stored",
    "record_reply",
    "report_when_stored",
    "section_hashes",
]

TRACE_KEY = "trace"
"""The commit metadata key of a traced turn's step: ``{"trace_id": ..., "span_id": ...}``."""
SETTINGS_KEY = "model_settings"
"""Assistant-commit metadata key of the model settings a reply was asked with (when any was set)."""
SECTIONS_KEY = "sections"
"""System-commit metadata key: ``{section path: hash of its own text}`` of the render it holds.

With it a replay names the section whose text changed, by path and both hashes."""
OUTPUT_SCHEMA_KEY = "output_schema"
"""Assistant-commit metadata key: the content hash of the output schema the reply was asked with (if any)."""

_ONE_CALL = Usage(model_calls=1)


def record_reply(
    evaluation: Evaluation[Any],
    reply: AssistantTurn,
    turn: TurnRecord,
    *,
    trace_ids: JSONObject | None = None,
    rejected: JSONObject | None = None,
) -> tuple[AssistantTurn, Usage]:
    """Stage the reply's commit in ``turn`` (in memory), count its usage; the reply as stored, its usage.

    ``rejected``: why a final answer was rejected (``runtime.output_checks``), kept in the commit's metadata.
    """
    if reply.tool_calls:  # arguments a transcript cannot store are kept as text the dispatcher refuses
        calls = tuple(call.storable() for call in reply.tool_calls)
        if any(new is not old for new, old in zip(calls, reply.tool_calls, strict=True)):
            reply = attrs.evolve(reply, tool_calls=calls)
    evaluation.turns += 1
    usage = reply.usage
    if usage.model_calls == 0:  # the loop knows one call was made even if the adapter did not say
        usage = usage + _ONE_CALL
    evaluation.usage = evaluation.usage + usage
    if evaluation.tracker is not None:
        evaluation.tracker.record(usage)
    prefix, busted = evaluation.prefix_watch.sent()
    metadata = _metadata(
        reply.metadata,
        evaluation.model_settings_used,
        trace_ids,
        rejected,
        output_schema=evaluation.output_schema_hash,
        turn_context=evaluation.turn_context,
    )
    commit = evaluation.transcript.assistant(
        reply.text,
        tool_calls=reply.tool_calls,
        usage=usage,
        parts=reply.parts,
        metadata={**(metadata or {}), **prefix} or None,
    )
    evaluation.head = commit.hash
    if busted is not None:
        evaluation.publish(busted)
    if not evaluation.session.bus.wants(ModelTurnCompleted):
        return reply, usage
    event = ModelTurnCompleted(
        prompt_name=evaluation.name,
        adapter=evaluation.adapter_name,
        model=evaluation.adapter.model,
        turn=evaluation.turns,
        text=reply.text,
        tool_calls=reply.tool_calls,
        usage=usage,
        finish_reason=reply.finish_reason,
        commit_hash=commit.hash,
        session_id=evaluation.session.session_id,
        created_at=evaluation.session.clock.now(),
    )
    publish_when_stored(evaluation, turn, event, commit.hash)
    return reply, usage


def section_hashes(rendered: RenderedPrompt[Any]) -> tuple[tuple[str, str], ...]:
    """Each section of a render, in order: its path and the hash of its own text."""
    return tuple((section.path_text, section.text_hash) for section in rendered.sections)


def publish_when_stored(
    evaluation: Evaluation[Any],
    turn: TurnRecord,
    event: ModelTurnCompleted,
    staged: str,
) -> None:
    """Publish ``event`` once ``turn`` is stored (never, if it is not), naming the stored commit."""
    turn.attach(_PublishWhenStored(evaluation, turn, event, staged))


class _PublishWhenStored:
    """A turn write with no rows: publishes a loop event once the turn is stored, with its stored hash.

    One small object instead of a closure (a function, its cells) and the
    wrapper ``on_stored`` would add: two per model turn of every running
    session stay alive while the model answers.
    """

    __slots__ = ("evaluation", "event", "staged", "turn")

    def __init__(
        self,
        evaluation: Evaluation[Any],
        turn: TurnRecord,
        event: ModelTurnCompleted,
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
        self.evaluation.publish(event if stored == self.staged else attrs.evolve(event, commit_hash=stored))


def _metadata(
    reply: JSONObject,
    settings: ModelSettings,
    trace_ids: JSONObject | None,
    rejected: JSONObject | None,
    *,
    output_schema: str | None,
    turn_context: str = "",
) -> JSONObject | None:
    """The assistant commit's metadata: the reply's, the model settings used, the output schema's hash,
    the trace ids, a rejection.

    ``turn_context``: the turn sections' text the request ended with (never a commit of its own).
    """
    used = settings.to_json()
    extra: JSONObject = {
        **({SETTINGS_KEY: used} if used else {}),
        **({} if output_schema is None else {OUTPUT_SCHEMA_KEY: output_schema}),
        **({TURN_CONTEXT_KEY: turn_context} if turn_context else {}),
        **({} if trace_ids is None else {TRACE_KEY: trace_ids}),
        **(rejected or {}),
    }
    return {**reply, **extra} or None


def report_when_stored(
    evaluation: Evaluation[Any],
    turn: TurnRecord,
    call: ToolCall,
    *,
    content: str,
    is_error: bool,
    staged: str,
    processed: ProcessedResult | None = None,
) -> None:
    """Report a result's storage once ``turn`` is stored: one ``ToolResultStored`` (bus and stream).

    ``staged`` is the result commit's staged hash, ``content`` its text as
    committed (after hooks); ``processed`` is what the output pipeline made
    of it, whose stored output (if any) is known once the turn's
    transaction has committed. Built only when the bus or a run listener
    wants it.
    """
    if evaluation.on_event is None and not evaluation.session.bus.wants(ToolResultStored):
        return
    turn.attach(
        _ReportWhenStored(
            evaluation, turn, call, content=content, is_error=is_error, staged=staged, processed=processed
        )
    )


class _ReportWhenStored:
    """A turn write with no rows: a result's ``ToolResultStored``, built once the turn is stored."""

    __slots__ = ("call", "content", "evaluation", "is_error", "processed", "staged", "turn", "turn_number")

    def __init__(
        self,
        evaluation: Evaluation[Any],
        turn: TurnRecord,
        call: ToolCall,
        *,
        content: str,
        is_error: bool,
        staged: str,
        processed: ProcessedResult | None,
    ) -> None:
        self.evaluation = evaluation
        self.turn = turn
        self.turn_number = evaluation.turns
        self.call = call
        self.content = content
        self.is_error = is_error
        self.staged = staged
        self.processed = processed

    def write(self, conn: Connection) -> None:
        return None

    def plan(self) -> Callable[[Connection], None]:
        return self.write  # it writes nothing, and reads nothing

    def committed(self) -> None:
        evaluation = self.evaluation
        output = None
        if self.processed is not None:  # an output staged with the turn is known now it is stored
            staged = self.processed.staged
            output = self.processed.reference if staged is None else staged.reference
        event = ToolResultStored(
            session_id=evaluation.session.session_id,
            call=self.call,
            prompt_name=evaluation.name,
            turn=self.turn_number,
            content=self.content,
            is_error=self.is_error,
            commit_hash=self.turn.stored_hash(self.staged),
            handle=None if output is None else output.handle,
            size_bytes=None if output is None else output.size_bytes,
            oversized=False if output is None else output.oversized,
            deduplicated=False if output is None else output.deduplicated,
            created_at=evaluation.session.clock.now(),
        )
        evaluation.publish(event)
        if evaluation.on_event is not None:  # the stream gets the same event once the loop is back
            evaluation.stored_results.append(event)
