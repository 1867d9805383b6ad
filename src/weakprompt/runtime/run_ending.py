"""How a run ends: its conversation read back, ``PromptExecuted``, ``RunFinished`` and the response.

The ends of :class:`~weakprompt.runtime.evaluation.Evaluation`, which it
calls from its ``finish`` and ``finish_paused``; they use its public members.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar, cast

from ..events import PromptExecuted
from ..messages import AssistantTurn
from .history import Conversation
from .history import conversation as history_of
from .response import PromptResponse
from .verdict import RequiredToolFailed, verdict_of

if TYPE_CHECKING:
    from .evaluation import Evaluation

__all__ = ["announce_finished", "finish", "finish_paused", "respond"]

OutputT = TypeVar("OutputT")


async def finish(
    evaluation: Evaluation[OutputT], reply: AssistantTurn, output: OutputT
) -> PromptResponse[OutputT]:
    """End the run on its final answer: the conversation (read back unless the last turn kept it)."""
    last = evaluation.last_turn
    if last is not None and last[1].stored:  # compiled while the final turn was staged: no read
        conversation = history_of(last[0], evaluation.written, last[1].stored_hash)
    else:
        conversation = await evaluation.io(
            lambda: history_of(evaluation.transcript.compile(), evaluation.written)
        )
    response = respond(evaluation, reply, output, conversation)
    if evaluation.settings.strict_verdict and not response.verdict.ok:
        raise RequiredToolFailed(response)  # stored as it ended; the caller asked for an error instead
    await announce_finished(evaluation, response)
    return response


async def finish_paused(
    evaluation: Evaluation[OutputT], reply: AssistantTurn | None
) -> PromptResponse[OutputT]:
    """End the run on its pause: no output (``paused`` says why), no ``PromptExecuted``."""
    conversation = await evaluation.io(
        lambda: history_of(evaluation.transcript.compile(), evaluation.written)
    )
    response = respond(
        evaluation, reply or AssistantTurn(), cast("OutputT", None), conversation, executed=False
    )
    await announce_finished(evaluation, response)
    return response


async def announce_finished(evaluation: Evaluation[OutputT], response: PromptResponse[OutputT]) -> None:
    if evaluation.on_event is not None:
        from . import run_events  # built only for a listener: loaded on first use

        await evaluation.emit(run_events.RunFinished(response))


def respond(
    evaluation: Evaluation[OutputT],
    reply: AssistantTurn,
    output: OutputT,
    conversation: Conversation,
    *,
    executed: bool = True,
) -> PromptResponse[OutputT]:
    """The run's response; ``PromptExecuted`` first when the run answered (``executed``)."""
    evaluation.usage = evaluation.usage + evaluation.outputs.side_usage
    if executed:
        evaluation.publish(
            PromptExecuted(
                prompt_name=evaluation.name,
                adapter=evaluation.adapter_name,
                text=reply.text,
                output=output if output is not None else reply.text,
                usage=evaluation.usage,
                turns=evaluation.turns,
                session_id=evaluation.session.session_id,
                created_at=evaluation.session.clock.now(),
            )
        )
    return PromptResponse(
        text=reply.text,
        output=output,
        usage=evaluation.usage,
        turns=evaluation.turns,
        head=evaluation.head,
        session_id=evaluation.session.session_id,
        transcript_id=evaluation.transcript.session_id,
        tool_executions=tuple(evaluation.executions),
        rendered=evaluation.rendered,
        finish_reason=reply.finish_reason,
        expanded_sections=tuple(evaluation.expanded),
        output_retries_used=evaluation.retries_used,
        paused=None if executed else evaluation.paused,
        session=evaluation.session,
        messages=conversation[0],
        new_messages=conversation[1],
        verdict=verdict_of(evaluation.executions, evaluation.dispatcher.tools),
    )
