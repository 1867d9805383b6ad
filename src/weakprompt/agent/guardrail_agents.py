"""An ``Agent`` as a guardrail: an LLM check at any point of another agent's run (``specs/GUARDRAILS.md``).

The checking agent answers a :class:`GuardrailAnswer` (its ``output_type``);
:func:`agent_guardrail` turns it into a :class:`~weakprompt.runtime.Guardrail`
whose check runs the agent on a description of what it is shown. Each check
is a run of its own (the checking agent's store and session, or a private
one); its model calls are the checked run's cost, so they count in the
checked run's usage and charge its budget, as an agent called as a tool does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

import attrs

from ..budget import Budget
from ..canonical import canonical_json
from ..errors import ConfigurationError
from ..runtime.child_runs import SubtreeTracker, current_frame
from ..runtime.guardrails import Guardrail, GuardrailCheck, GuardrailOutcome, GuardrailPoint, Rewrite, Trip
from ..safetext import type_name
from ..serde import dump

if TYPE_CHECKING:
    from .agent import Agent

__all__ = ["GuardrailAnswer", "agent_guardrail", "describe_check"]


@attrs.frozen
class GuardrailAnswer:
    """What a checking agent answers: ``trip`` to stop the run, saying ``reason``.

    ``rewrite``, at a point that checks text (the input, a text answer, a
    tool result), is the text to go on with instead.
    """

    trip: bool
    reason: str = ""
    rewrite: str | None = None


def describe_check(check: GuardrailCheck) -> str:
    """The checking agent's input: the point, the call (at a tool point) and the value, as text or JSON."""
    value = check.value
    shown = value if isinstance(value, str) else canonical_json(dump(value))
    if check.call is not None:
        return f"Point: {check.point}\nTool: {check.call.name}\nCall: {check.call.id}\n\n{shown}"
    return f"Point: {check.point}\n\n{shown}"


def agent_guardrail(
    agent: Agent[GuardrailAnswer],
    point: GuardrailPoint,
    *,
    name: str | None = None,
    describe: Callable[[GuardrailCheck], str] = describe_check,
    tools: Iterable[str] | None = None,
    concurrent: bool = False,
) -> Guardrail:
    """A guardrail at ``point`` that asks ``agent`` (whose ``output_type`` is :class:`GuardrailAnswer`).

    ``describe`` writes the agent's input from what the guardrail is shown.
    """
    if agent.template.output_type is not GuardrailAnswer:
        raise ConfigurationError(
            f"agent_guardrail: the checking agent must have output_type=GuardrailAnswer, not "
            f"{type_name(agent.template.output_type)}"
        )

    async def ask(check: GuardrailCheck) -> GuardrailOutcome:
        frame = current_frame()  # the checked run's (None only when called outside a run)
        # The check's model calls are the checked run's: they charge its budget (and every one above).
        own = agent.budget if isinstance(agent.budget, Budget) else None
        tracker = SubtreeTracker(own, None if frame is None else frame.budget)
        try:
            answer = (await agent.run(describe(check), budget=tracker)).output
        finally:
            if frame is not None:
                frame.add_usage(tracker.usage)  # and count in its usage, whatever came of the check
        if answer.trip:
            return Trip(answer.reason or "the checking agent said no")
        if answer.rewrite is not None:
            return Rewrite(answer.rewrite, reason=answer.reason)
        return None

    label = name if name is not None else f"agent:{agent.template.display_name}"
    return Guardrail(point, ask, name=label, tools=tools, concurrent=concurrent)
