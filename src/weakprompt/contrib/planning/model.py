"""The plan the planning tools keep in the session.

A plan is a value: every change produces a new :class:`Plan`, so the session
can hold it as a slice, snapshot it and roll it back like any other state.
"""

from __future__ import annotations

from typing import Literal, TypeAlias

import attrs

__all__ = ["MAX_TEXT_LENGTH", "Plan", "PlanStatus", "PlanStep", "StepIdCounter", "StepStatus"]

StepStatus: TypeAlias = Literal["pending", "in_progress", "done"]
PlanStatus: TypeAlias = Literal["active", "completed"]

# Longest objective or step title the tools accept, counted after stripping.
MAX_TEXT_LENGTH = 500


@attrs.frozen
class PlanStep:
    """One entry of the todo list."""

    step_id: int = attrs.field(
        metadata={"description": "Number of the step; assigned by the tools, never reused in a session."}
    )
    title: str = attrs.field(metadata={"description": "What this step does, in a short sentence."})
    status: StepStatus = attrs.field(
        metadata={"description": "Progress of the step: pending, in_progress or done."}
    )


@attrs.frozen
class Plan:
    """The session's current plan: an objective and its ordered steps."""

    objective: str = attrs.field(metadata={"description": "The goal the plan works towards."})
    status: PlanStatus = attrs.field(
        metadata={"description": "completed once every step is done, otherwise active."}
    )
    steps: tuple[PlanStep, ...] = attrs.field(
        default=(), metadata={"description": "The steps in the order they were added."}
    )

    def step_ids(self) -> tuple[int, ...]:
        return tuple(step.step_id for step in self.steps)

    def render(self) -> str:
        """A compact text view for tool messages and logs."""
        lines = [f"Objective: {self.objective}", f"Status: {self.status}"]
        if not self.steps:
            lines.append("Steps: none yet")
        for step in self.steps:
            lines.append(f"{step.step_id}. [{step.status}] {step.title}")
        return "\n".join(lines)


@attrs.frozen
class StepIdCounter:
    """The last step id handed out in this session.

    Kept as its own session slice (not inside :class:`Plan`) so that replacing
    the plan never resets it, while a rolled-back tool call restores it.
    """

    last_step_id: int = attrs.field(
        default=0, metadata={"description": "Highest step id assigned so far (0 before any step)."}
    )
