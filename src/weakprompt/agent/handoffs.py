"""Handoffs: an agent passes the conversation to another agent (``specs/HANDOFFS.md``).

``Agent(..., handoffs=[other])`` offers the model one transfer tool per
target (``transfer_to_<key>``). A call of it ends the agent's run with the
turn that made it (the tool is ``ends_run``), and the run goes on with the
target agent, in the same session: its prompt (the system message is
edited to it, the edit recording the handoff), its tools, its output
type. The handing-off agent may filter what the target sees of the
conversation before the handoff (``input_filter``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

import attrs

from ..errors import ConfigurationError
from ..events import RunFinished
from ..runtime.handoff_runs import HistoryFilter
from ..runtime.verdict import RunVerdict
from ..safetext import type_name
from ..tools import Tool, ToolContext, ToolResult

if TYPE_CHECKING:
    from ..jsontypes import JSONObject
    from ..runtime import PromptResponse, RunSettings
    from ..runtime.dispatcher import ToolExecution
    from ..tools import AnyTool
    from .agent import Agent

__all__ = [
    "Handoff",
    "TransferParams",
    "handed_to",
    "handoff_provenance",
    "joined",
    "joining",
    "one_finish",
    "transfer_name",
]

OutputT = TypeVar("OutputT")
T = TypeVar("T")


@dataclass(frozen=True)
class TransferParams:
    """The transfer tool's arguments."""

    reason: str = field(default="", metadata={"description": "why the conversation is handed over"})


def transfer_name(agent: Agent[OutputT]) -> str:
    """The transfer tool's name for ``agent``: ``transfer_to_`` and its template key, made a tool name."""
    return "transfer_to_" + re.sub(r"[^A-Za-z0-9_]", "_", agent.template.key)[:48]


def _transfer_tool(handoff: Handoff[OutputT]) -> AnyTool:
    _check_agent(handoff.agent)  # made first (attrs validates after every field is set)
    target = handoff.agent.template.display_name

    def transfer(params: TransferParams, *, context: ToolContext) -> ToolResult[None]:
        return ToolResult.ok(None, message=f"Transferred to {target}.")

    description = handoff.description or f"Hand the conversation to the {target} agent, which continues it."
    return Tool(
        name=handoff.name or transfer_name(handoff.agent),
        description=description,
        handler=transfer,
        params_type=TransferParams,
        result_type=None,
        sequential=True,
        ends_run=True,
    )


def _check_agent(value: object) -> None:
    from .agent import Agent  # a runtime check of a caller's value

    if not isinstance(value, Agent):
        raise ConfigurationError(f"Handoff: agent must be an Agent, not {type_name(value)}")


@attrs.frozen
class Handoff(Generic[OutputT]):
    """A target of a handoff: the ``agent`` that takes over, and how.

    ``name`` and ``description`` are the transfer tool's (by default
    ``transfer_to_<key>`` and a sentence naming the agent); ``input_filter``
    chooses what of the conversation before the handoff the target sees
    (the messages kept, in order; ``without_tool_calls`` is one).
    """

    agent: Agent[OutputT]
    name: str | None = attrs.field(default=None, kw_only=True)
    description: str | None = attrs.field(default=None, kw_only=True)
    input_filter: HistoryFilter | None = attrs.field(default=None, kw_only=True)
    tool: AnyTool = attrs.field(
        init=False, eq=False, repr=False, default=attrs.Factory(_transfer_tool, takes_self=True)
    )
    """The transfer tool the handing-off agent offers."""


def handoffs_of(targets: Iterable[object], output: type[OutputT] | None) -> tuple[Handoff[OutputT], ...]:
    """The handoffs of ``Agent(handoffs=...)``, each checked to answer with ``output`` (the agent's type)."""
    from .agent import Agent

    made: list[Handoff[OutputT]] = []
    for index, target in enumerate(targets):
        given = cast("Agent[OutputT] | Handoff[OutputT] | object", target)
        if isinstance(given, Agent):
            handoff = Handoff(cast("Agent[OutputT]", given))
        elif isinstance(given, Handoff):
            handoff = cast("Handoff[OutputT]", given)
        else:
            raise ConfigurationError(
                f"Agent: handoffs[{index}] is a {type_name(given)}, not an Agent or a Handoff"
            )
        theirs = handoff.agent.template.output_type
        if theirs is not output:
            raise ConfigurationError(
                f"Agent: handoffs[{index}] ({handoff.agent.template.display_name}) answers with "
                f"{_type_text(theirs)}, and this agent with {_type_text(output)}: a run's output type is the "
                "last agent's, so the agents a conversation passes between share one (or call the other "
                "agent as a tool)"
            )
        made.append(handoff)
    return tuple(made)


def _type_text(output: object) -> str:
    return "text" if output is None else getattr(output, "__qualname__", repr(output))


def handed_to(
    handoffs: tuple[Handoff[OutputT], ...], response: PromptResponse[OutputT]
) -> tuple[Handoff[OutputT], ToolExecution] | None:
    """The handoff that ended ``response``'s run (its last turn's first transfer call), if one did."""
    if not handoffs or response.paused is not None or not response.tool_executions:
        return None
    last = next((m for m in reversed(response.messages) if m.role == "assistant"), None)
    if last is None or not last.tool_calls:  # the run ended on an answer, not on a transfer
        return None
    ids = {call.id for call in last.tool_calls}
    by_name = {handoff.tool.name: handoff for handoff in handoffs}
    for execution in response.tool_executions:
        handoff = by_name.get(execution.event.name)
        if handoff is not None and execution.success and execution.event.call_id in ids:
            return handoff, execution
    return None


def handoff_provenance(
    source: Agent[OutputT], handoff: Handoff[OutputT], execution: ToolExecution, head: str | None
) -> JSONObject:
    """What the target's system commit records: who handed to whom, by which call, at which commit."""
    return {
        "from": source.template.display_name,
        "to": handoff.agent.template.display_name,
        "call_id": execution.event.call_id,
        "at": head,
    }


def joined(before: PromptResponse[T], after: PromptResponse[T]) -> PromptResponse[T]:
    """The response of a conversation handed over: the last agent's, counting every agent's work."""
    return attrs.evolve(
        after,
        usage=before.usage + after.usage,
        turns=before.turns + after.turns,
        tool_executions=before.tool_executions + after.tool_executions,
        new_messages=before.new_messages + after.new_messages,
        output_retries_used=before.output_retries_used + after.output_retries_used,
        verdict=_joined_verdicts(before.verdict, after.verdict, after.tool_executions),
    )


def joining(before: PromptResponse[T] | None) -> Callable[[PromptResponse[T]], PromptResponse[T]]:
    """Joins one run's response to ``before`` (the runs before it); asked again, the same object."""
    made: list[PromptResponse[T]] = []

    def join(response: PromptResponse[T]) -> PromptResponse[T]:
        if before is None:
            return response
        if not made:  # the listener's RunFinished and the run's return share the one joined response
            made.append(joined(before, response))
        return made[0]

    return join


def one_finish(
    handoffs: tuple[Handoff[T], ...],
    join: Callable[[PromptResponse[T]], PromptResponse[T]],
    settings: RunSettings,
) -> RunSettings:
    """``settings`` whose listener hears one ``RunFinished`` for a whole chain of handoffs, the last.

    A run that ends on a handoff keeps its ``RunFinished`` back (the target's
    run goes on in the same stream); the last run's carries ``join`` of its
    response: every run's work, the very response ``run`` returns.
    """
    listener = settings.on_event
    if listener is None:
        return settings

    def heard(event: object) -> object:
        if isinstance(event, RunFinished):
            response = cast("PromptResponse[T]", cast("RunFinished[object]", event).response)
            if handed_to(handoffs, response) is not None:
                return None  # the target's run goes on: the chain has not finished
            event = RunFinished(join(response))
        return listener(cast("Any", event))

    return attrs.evolve(settings, on_event=heard)


def _joined_verdicts(before: RunVerdict, after: RunVerdict, later: tuple[ToolExecution, ...]) -> RunVerdict:
    """Both runs' verdicts as one: a failure of the first run stands unless the second retried it."""
    if not before.required:
        return after
    recovered = {e.event.name for e in later if e.success} | {failed.tool for failed in after.failed}
    failed = tuple(f for f in before.failed if f.tool not in recovered) + after.failed
    required = tuple(sorted({*before.required, *after.required}))
    uncalled = tuple(
        name
        for name in required
        if (name in before.uncalled or name not in before.required)
        and (name in after.uncalled or name not in after.required)
    )
    return RunVerdict(ok=not failed, failed=failed, required=required, uncalled=uncalled)
