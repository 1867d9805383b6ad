"""The planning section inside the real evaluation loop: scripted and on the local model."""

from __future__ import annotations

import pytest

from weakprompt.adapters.testing import ScriptedAdapter, text_turn, tool_call, tool_call_turn
from weakprompt.contrib.planning import Plan, PlanningStrategy, PlanningToolsSection, PlanStep
from weakprompt.prompt import MarkdownSection, Prompt, PromptTemplate
from weakprompt.runtime import ForceTool, evaluate
from weakprompt.session import Session


def _prompt(session: Session, strategy: PlanningStrategy = PlanningStrategy.REACT) -> Prompt[object]:
    template: PromptTemplate[object] = PromptTemplate(
        ns="tests/planning",
        key="evaluate",
        sections=[
            MarkdownSection(
                title="Task",
                key="task",
                template="You organise small chores. Always start by setting up a plan.",
            ),
            PlanningToolsSection(session=session, strategy=strategy),
        ],
    )
    return Prompt(template)


def test_several_calls_in_one_turn_apply_in_order_and_failures_stay_local() -> None:
    session = Session()
    adapter = ScriptedAdapter(
        [
            tool_call_turn(
                tool_call(
                    "planning_setup_plan", {"objective": "Bake bread", "initial_steps": ["Mix", "Knead"]}
                ),
                tool_call("planning_update_step", {"step_id": 1, "status": "in_progress"}),
                tool_call("planning_update_step", {"step_id": 5, "status": "done"}),
                tool_call("planning_add_step", {"steps": ["  ", "Bake"]}),
                tool_call("planning_add_step", {"steps": ["Bake"]}),
            ),
            tool_call_turn(tool_call("planning_read_plan")),
            text_turn("The plan is ready."),
        ]
    )
    response = evaluate(_prompt(session), adapter=adapter, session=session, input="Plan the baking.")
    assert response.text == "The plan is ready."
    assert [execution.success for execution in response.tool_executions] == [
        True,
        True,
        False,
        False,
        True,
        True,
    ]
    assert "valid step ids are 1, 2" in response.tool_executions[2].message
    assert response.tool_executions[3].message.startswith("steps[0] ")
    expected = Plan(
        objective="Bake bread",
        status="active",
        steps=(
            PlanStep(step_id=1, title="Mix", status="in_progress"),
            PlanStep(step_id=2, title="Knead", status="pending"),
            PlanStep(step_id=3, title="Bake", status="pending"),
        ),
    )
    assert session[Plan].latest() == expected
    assert response.tool_executions[-1].result.value == expected
    # The model saw the plan in the read result, rendered as text (the plan view follows it).
    second_request = adapter.requests[2]
    assert "3. [pending] Bake" in str(second_request.context.messages[-2].content)


@pytest.mark.real_model
def test_local_model_forced_to_set_up_a_plan() -> None:
    from weakprompt.adapters.local import LocalAdapter

    session = Session()
    adapter = LocalAdapter(progress=False, max_tokens=160)
    response = evaluate(
        _prompt(session),
        adapter=adapter,
        session=session,
        input="Plan how to clean the kitchen: wash the dishes, wipe the counters, take out the trash.",
        tool_choice=ForceTool("planning_setup_plan"),
        max_turns=4,
    )
    first = response.tool_executions[0]
    assert first.event.name == "planning_setup_plan"
    assert first.success, first.message
    plan = session[Plan].latest()
    assert isinstance(plan, Plan)
    assert plan.objective
    assert first.result.value == plan or any(
        execution.result.value == plan for execution in response.tool_executions
    )
