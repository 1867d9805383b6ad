"""What the loop does for handoffs (``specs/HANDOFFS.md``): a run a tool ends, and a filtered history.

The ``Agent`` (``weakprompt.agent.handoffs``) builds the transfer tools and
follows a handoff; the loop knows only two general things: a successful
call of a tool marked ``ends_run`` ends the run once its turn is stored (no
further model call), and a run may be given a ``history_filter`` that
chooses what of the conversation before it the model sees.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

import attrs

from ..errors import ConfigurationError
from ..messages import Message

if TYPE_CHECKING:
    from ..model import CompiledContext
    from .dispatcher import ToolExecution
    from .evaluation import Evaluation

__all__ = ["HANDOFF_KEY", "HistoryFilter", "ending_call", "filtered_history", "without_tool_calls"]

HANDOFF_KEY = "handoff"
"""Metadata key of the system commit a handed-to run writes: ``{"from", "to", "call_id", "at"}``."""

HistoryFilter: TypeAlias = Callable[[Sequence[Message]], Sequence[Message]]
"""Given the conversation before the run (no system message), returns the messages to keep, in order."""


def ending_call(evaluation: Evaluation[Any], since: int) -> ToolExecution | None:
    """The first successful call of an ``ends_run`` tool from index ``since`` of the run's executions."""
    tools = evaluation.dispatcher.tools
    for execution in evaluation.executions[since:]:
        tool = tools.get(execution.event.name)
        if execution.success and tool is not None and tool.ends_run:
            return execution
    return None


def filtered_history(context: CompiledContext, keep: HistoryFilter, before: int) -> CompiledContext:
    """``context`` with the messages from before this run (its first ``before``) chosen by ``keep``.

    The system message and this run's own messages always stay. ``keep``
    must return a subsequence of what it was given (the same messages, in
    order); anything else is refused by name.
    """
    earlier = [index for index, message in enumerate(context.messages[:before]) if message.role != "system"]
    kept = list(keep(tuple(context.messages[index] for index in earlier)))
    dropped: set[int] = set()
    position = 0
    for index in earlier:
        if position < len(kept) and kept[position] == context.messages[index]:
            position += 1
        else:
            dropped.add(index)
    if position != len(kept):
        raise ConfigurationError(
            "history filter: it must return some of the messages it was given, in their order "
            f"(message {position} of what it returned is not one of them, or is out of order)"
        )
    if not dropped:
        return context
    hashes = context.commit_hashes
    return attrs.evolve(
        context,
        messages=tuple(m for index, m in enumerate(context.messages) if index not in dropped),
        commit_hashes=tuple(h for index, h in enumerate(hashes) if index not in dropped),
    )


def without_tool_calls(messages: Sequence[Message]) -> Sequence[Message]:
    """A history filter: the conversation without tool calls and their results (text stays)."""
    return [
        message
        for message in messages
        if message.role != "tool" and not (message.role == "assistant" and message.tool_calls)
    ]
