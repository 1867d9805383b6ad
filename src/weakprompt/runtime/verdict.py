"""A run's verdict: whether every tool call the run depended on succeeded (``specs/GUARDRAILS.md``).

A tool the run depends on is a ``required`` one (``@tool(required=True)``,
or any tool of a ``Section(required=True)`` and its children). The run's
verdict fails when the last call of a required tool failed: a later
successful call of the same tool is a retry that recovered; a failure with
no success after it is never hidden by the model's cheerful final answer.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, TypeVar, cast

import attrs

from ..errors import PromptEvaluationError

if TYPE_CHECKING:
    from ..tools import AnyTool
    from .dispatcher import ToolExecution
    from .response import PromptResponse

__all__ = ["FailedCall", "RequiredToolFailed", "RunVerdict", "verdict_of"]

OutputT = TypeVar("OutputT")


@attrs.frozen
class FailedCall:
    """A call of a required tool that failed and was not retried with success."""

    call_id: str
    tool: str
    message: str


@attrs.frozen
class RunVerdict:
    """Whether the run's required tool calls succeeded: ``ok``, else the ``failed`` ones.

    ``required`` names the required tools the run offered, ``uncalled`` those
    of them it never called (a required tool that is not called does not
    fail the verdict: force a call with ``tool_choice`` when one is needed).
    """

    ok: bool = True
    failed: tuple[FailedCall, ...] = ()
    required: tuple[str, ...] = ()
    uncalled: tuple[str, ...] = ()


OK = RunVerdict()
"""The verdict of a run that depends on no tool."""


def verdict_of(executions: Iterable[ToolExecution], tools: Mapping[str, AnyTool]) -> RunVerdict:
    """The verdict over ``executions`` (in call order), ``tools`` saying which are required."""
    required = tuple(sorted(name for name, tool in tools.items() if tool.required))
    if not required:
        return OK
    last: dict[str, ToolExecution] = {}
    for execution in executions:
        name = execution.event.name
        if name in required:
            last[name] = execution
    failed = tuple(
        FailedCall(call_id=execution.event.call_id, tool=name, message=execution.message)
        for name, execution in sorted(last.items())
        if not execution.success
    )
    uncalled = tuple(name for name in required if name not in last)
    return RunVerdict(ok=not failed, failed=failed, required=required, uncalled=uncalled)


class RequiredToolFailed(PromptEvaluationError):
    """The run ended with a failed verdict and was asked to raise on one (``strict_verdict=True``).

    ``response`` is the whole response (stored, as the run left it); ``verdict`` is its verdict.
    """

    def __init__(self, response: PromptResponse[OutputT]) -> None:
        verdict = response.verdict
        calls = ", ".join(f"{failed.tool} (call {failed.call_id!r})" for failed in verdict.failed)
        super().__init__(f"the run depended on tool calls that failed: {calls}")
        self.response = cast("PromptResponse[object]", response)
        self.verdict = verdict
