"""The four planning tools: thin handlers over the pure rules in ``logic``.

Each handler reads the session, asks ``logic`` for the next state, and only
then publishes it, so a rejected call changes nothing. Every result carries
the resulting :class:`Plan` as its value; the model reads a one-line summary
followed by the plan.
"""

from __future__ import annotations

from ...tools import AnyTool, Tool, ToolContext, ToolExample, ToolResult
from .logic import PlanChange, PlanningError, add_steps, require_plan, setup_plan, update_step
from .model import Plan, PlanStep
from .names import ADD_STEP_TOOL, READ_PLAN_TOOL, SETUP_PLAN_TOOL, UPDATE_STEP_TOOL
from .params import AddStep, ReadPlan, SetupPlan, UpdateStep
from .state import apply_change, current_plan, register_planning_state, step_counter

__all__ = [
    "add_step_handler",
    "planning_tools",
    "read_plan_handler",
    "setup_plan_handler",
    "update_step_handler",
]


def _plan_result(summary: str, plan: Plan) -> ToolResult[Plan]:
    # The model sees the summary and the rendered plan; orchestrators get the typed Plan.
    return ToolResult(message=f"{summary}\n\n{plan.render()}", value=plan, exclude_value_from_context=True)


def _ids(steps: tuple[PlanStep, ...]) -> str:
    return ", ".join(str(step.step_id) for step in steps)


def _status_note(before: Plan | None, after: Plan) -> str:
    if before is not None and before.status != after.status:
        return f" The plan is now {after.status}."
    return ""


def setup_plan_handler(params: SetupPlan, *, context: ToolContext) -> ToolResult[Plan]:
    """Create the plan, or replace the current one."""
    session = context.session
    register_planning_state(session)
    previous = current_plan(session)
    try:
        change = setup_plan(params, step_counter(session))
    except PlanningError as error:
        return ToolResult.error(str(error))
    plan = apply_change(session, change)
    verb = "created" if previous is None else "replaced"
    added = f" with steps {_ids(plan.steps)}" if plan.steps else " with no steps yet"
    return _plan_result(f"Plan {verb}{added}.", plan)


def add_step_handler(params: AddStep, *, context: ToolContext) -> ToolResult[Plan]:
    """Append steps to the current plan."""
    session = context.session
    register_planning_state(session)
    previous = current_plan(session)
    try:
        change = add_steps(previous, params, step_counter(session))
    except PlanningError as error:
        return ToolResult.error(str(error))
    plan = apply_change(session, change)
    new_steps = plan.steps[len(plan.steps) - len(params.steps) :]
    noun = "step" if len(new_steps) == 1 else "steps"
    return _plan_result(f"Added {noun} {_ids(new_steps)}.{_status_note(previous, plan)}", plan)


def update_step_handler(params: UpdateStep, *, context: ToolContext) -> ToolResult[Plan]:
    """Change one step's title and/or status."""
    session = context.session
    register_planning_state(session)
    previous = current_plan(session)
    try:
        updated = update_step(previous, params)
    except PlanningError as error:
        return ToolResult.error(str(error))
    plan = apply_change(session, PlanChange(updated, step_counter(session)))
    return _plan_result(f"Updated step {params.step_id}.{_status_note(previous, plan)}", plan)


def read_plan_handler(params: ReadPlan, *, context: ToolContext) -> ToolResult[Plan]:
    """Return the current plan unchanged."""
    del params
    try:
        plan = require_plan(current_plan(context.session))
    except PlanningError as error:
        return ToolResult.error(str(error))
    return _plan_result("Current plan:", plan)


_EXAMPLE_PLAN = Plan(
    objective="Summarise the open support tickets",
    status="active",
    steps=(
        PlanStep(step_id=1, title="List the open tickets", status="pending"),
        PlanStep(step_id=2, title="Group them by product", status="pending"),
    ),
)
_EXAMPLE_GROWN = Plan(
    objective=_EXAMPLE_PLAN.objective,
    status="active",
    steps=(*_EXAMPLE_PLAN.steps, PlanStep(step_id=3, title="Draft the summary", status="pending")),
)
_EXAMPLE_DONE = Plan(
    objective=_EXAMPLE_PLAN.objective,
    status="active",
    steps=(PlanStep(step_id=1, title="List the open tickets", status="done"), *_EXAMPLE_GROWN.steps[1:]),
)


def planning_tools(*, accepts_overrides: bool = False) -> tuple[AnyTool, ...]:
    """Fresh definitions of the four planning tools, in the order the copy lists them."""
    return (
        Tool(
            name=SETUP_PLAN_TOOL,
            description=(
                "Create the plan for this task, or replace the current one, from an objective "
                "and optional first steps."
            ),
            handler=setup_plan_handler,
            examples=(
                ToolExample(
                    description="Start a plan with two steps",
                    input=SetupPlan(
                        objective=_EXAMPLE_PLAN.objective,
                        initial_steps=tuple(step.title for step in _EXAMPLE_PLAN.steps),
                    ),
                    output=_EXAMPLE_PLAN,
                ),
            ),
            accepts_overrides=accepts_overrides,
            sequential=True,  # each call reads the plan the previous call left
        ),
        Tool(
            name=ADD_STEP_TOOL,
            description="Append one or more steps to the end of the current plan.",
            handler=add_step_handler,
            examples=(
                ToolExample(
                    description="Add a step after the existing ones",
                    input=AddStep(steps=("Draft the summary",)),
                    output=_EXAMPLE_GROWN,
                ),
            ),
            accepts_overrides=accepts_overrides,
            sequential=True,  # each call reads the plan the previous call left
        ),
        Tool(
            name=UPDATE_STEP_TOOL,
            description="Give one plan step, chosen by step_id, a new title, a new status, or both.",
            handler=update_step_handler,
            examples=(
                ToolExample(
                    description="Mark step 1 as done",
                    input=UpdateStep(step_id=1, status="done"),
                    output=_EXAMPLE_DONE,
                ),
            ),
            accepts_overrides=accepts_overrides,
            sequential=True,  # each call reads the plan the previous call left
        ),
        Tool(
            name=READ_PLAN_TOOL,
            description="Show the current plan: its objective, its status and every step with id and status.",
            handler=read_plan_handler,
            examples=(ToolExample(description="Read the plan back", input=ReadPlan(), output=_EXAMPLE_DONE),),
            accepts_overrides=accepts_overrides,
            sequential=True,  # each call reads the plan the previous call left
        ),
    )
