"""The planning section's plan view is a turn section: after the conversation, never in the system text."""

from __future__ import annotations

from weakprompt.adapters.testing import ScriptedAdapter, text_turn, tool_call, tool_call_turn
from weakprompt.contrib.planning import PLAN_VIEW_KEY, PlanningToolsSection
from weakprompt.model import TURN_CONTEXT_KEY
from weakprompt.prompt import MarkdownSection, Prompt, PromptTemplate
from weakprompt.runtime import evaluate
from weakprompt.session import Session


def _prompt(session: Session, *, plan_view: bool = True) -> Prompt[None]:
    return Prompt(
        PromptTemplate(
            ns="tests/planning",
            key="view",
            sections=[
                MarkdownSection(title="Task", key="task", template="Plan, then act."),
                PlanningToolsSection(session=session, plan_view=plan_view),
            ],
        )
    )


def test_plan_view_follows_the_conversation_and_leaves_the_system_message_alone() -> None:
    session = Session()
    adapter = ScriptedAdapter(
        [
            tool_call_turn(tool_call("planning_setup_plan", {"objective": "Bake", "initial_steps": ["Mix"]})),
            tool_call_turn(tool_call("planning_update_step", {"step_id": 1, "status": "done"})),
            text_turn("Done."),
        ]
    )
    evaluate(_prompt(session), adapter=adapter, session=session, input="Bake bread.")
    first, second, third = (request.context.messages for request in adapter.requests)
    assert not any(m.metadata.get(TURN_CONTEXT_KEY) for m in first)  # no plan yet: no plan view
    assert second[-1].metadata[TURN_CONTEXT_KEY] is True
    assert "1. [pending] Mix" in second[-1].content
    assert "1. [done] Mix" in third[-1].content
    assert first[0].content == second[0].content == third[0].content
    assert "[pending]" not in third[0].content
    # everything before the plan view is what the earlier request sent, plus the new turn
    assert third[: len(second) - 1] == second[:-1]


def test_plan_view_is_declared_turn_and_can_be_left_out() -> None:
    session = Session()
    section = PlanningToolsSection(session=session)
    assert [(child.key, child.volatility) for child in section.children] == [(PLAN_VIEW_KEY, "turn")]
    assert section.children[0].override_source == ""
    assert PlanningToolsSection(session=session, plan_view=False).children == ()
    assert _prompt(session).render(session).turn_text == ""
