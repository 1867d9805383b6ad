"""The planning rules as pure functions: old state and arguments in, new state out.

Handlers call these before touching the session, so a rejected call leaves
nothing behind even without the dispatcher's rollback; tests call them
directly.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from ...errors import ToolValidationError
from .model import MAX_TEXT_LENGTH, Plan, PlanStatus, PlanStep, StepIdCounter
from .names import SETUP_PLAN_TOOL
from .params import AddStep, SetupPlan, UpdateStep

__all__ = [
    "PlanChange",
    "PlanningError",
    "add_steps",
    "clean_text",
    "plan_status",
    "require_plan",
    "setup_plan",
    "update_step",
]


class PlanningError(ToolValidationError):
    """A planning call the rules reject; its message is written for the model.

    ``field`` names the argument at fault (``"steps[2]"``, ``"step_id"``), or
    is ``None`` when the call itself is out of place (no plan yet).
    """

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


@attrs.frozen
class PlanChange:
    """The outcome of a planning call, published to the session as an event.

    ``session_id`` names the session it is meant for, so sessions sharing one
    event dispatcher ignore each other's changes.
    """

    plan: Plan
    counter: StepIdCounter
    session_id: str | None = None


def clean_text(raw: str, *, field: str) -> str:
    """Strip ``raw`` and check it is a usable title or objective."""
    text = raw.strip()
    if not text:
        raise PlanningError(f"{field} must not be empty or only whitespace.", field=field)
    if len(text) > MAX_TEXT_LENGTH:
        raise PlanningError(
            f"{field} is {len(text)} characters long; the limit is {MAX_TEXT_LENGTH}.", field=field
        )
    return text


def plan_status(steps: Sequence[PlanStep]) -> PlanStatus:
    """A plan is completed exactly when it has steps and all of them are done."""
    if steps and all(step.status == "done" for step in steps):
        return "completed"
    return "active"


def require_plan(plan: Plan | None) -> Plan:
    if plan is None:
        raise PlanningError(f"There is no plan yet: call {SETUP_PLAN_TOOL} first.")
    return plan


def _new_steps(
    titles: Sequence[str], *, field: str, counter: StepIdCounter
) -> tuple[tuple[PlanStep, ...], StepIdCounter]:
    cleaned = [clean_text(title, field=f"{field}[{index}]") for index, title in enumerate(titles)]
    first = counter.last_step_id + 1
    steps = tuple(
        PlanStep(step_id=first + offset, title=title, status="pending")
        for offset, title in enumerate(cleaned)
    )
    return steps, StepIdCounter(last_step_id=counter.last_step_id + len(steps))


def setup_plan(params: SetupPlan, counter: StepIdCounter) -> PlanChange:
    """A fresh plan; its steps get ids after every id used so far."""
    objective = clean_text(params.objective, field="objective")
    steps, counter = _new_steps(params.initial_steps, field="initial_steps", counter=counter)
    return PlanChange(Plan(objective=objective, status=plan_status(steps), steps=steps), counter)


def add_steps(plan: Plan | None, params: AddStep, counter: StepIdCounter) -> PlanChange:
    """Append pending steps; a completed plan becomes active again."""
    current = require_plan(plan)
    if not params.steps:
        raise PlanningError("steps must contain at least one step title.", field="steps")
    added, counter = _new_steps(params.steps, field="steps", counter=counter)
    steps = current.steps + added
    return PlanChange(attrs.evolve(current, steps=steps, status=plan_status(steps)), counter)


def _valid_ids(plan: Plan) -> str:
    if not plan.steps:
        return "the plan has no steps yet"
    return "valid step ids are " + ", ".join(str(step_id) for step_id in plan.step_ids())


def update_step(plan: Plan | None, params: UpdateStep) -> Plan:
    """Rename a step and/or move its status; the plan status follows."""
    current = require_plan(plan)
    if params.title is None and params.status is None:
        raise PlanningError("Nothing to update: give a new title, a new status, or both.")
    if params.step_id not in current.step_ids():
        raise PlanningError(
            f"step_id {params.step_id} does not exist; {_valid_ids(current)}.", field="step_id"
        )
    title = None if params.title is None else clean_text(params.title, field="title")
    steps = tuple(
        attrs.evolve(
            step,
            title=step.title if title is None else title,
            status=step.status if params.status is None else params.status,
        )
        if step.step_id == params.step_id
        else step
        for step in current.steps
    )
    return attrs.evolve(current, steps=steps, status=plan_status(steps))
