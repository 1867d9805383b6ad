"""Arguments of the four planning tools, as the model sends them.

The descriptions travel into each tool's JSON schema, which is all the model
sees of these classes; write them for the model.
"""

from __future__ import annotations

import attrs

from .model import StepStatus

__all__ = ["AddStep", "ReadPlan", "SetupPlan", "UpdateStep"]


@attrs.frozen
class SetupPlan:
    """Create the plan, or replace the current one."""

    objective: str = attrs.field(
        metadata={"description": "The goal of the whole task in one sentence (at most 500 characters)."}
    )
    initial_steps: tuple[str, ...] = attrs.field(
        default=(),
        metadata={
            "description": "Titles of the first steps, in order (each non-empty, at most 500 characters)."
        },
    )


@attrs.frozen
class AddStep:
    """Append steps to the end of the current plan."""

    steps: tuple[str, ...] = attrs.field(
        metadata={"description": "Titles of the steps to append, in order (at least one)."}
    )


@attrs.frozen
class UpdateStep:
    """Rename a step, change its status, or both."""

    step_id: int = attrs.field(metadata={"description": "Id of the step to change, as shown in the plan."})
    title: str | None = attrs.field(
        default=None, metadata={"description": "New title for the step; omit to keep the current one."}
    )
    status: StepStatus | None = attrs.field(
        default=None,
        metadata={"description": "New status (pending, in_progress or done); omit to keep the current one."},
    )


@attrs.frozen
class ReadPlan:
    """No arguments: the tool returns the current plan."""
