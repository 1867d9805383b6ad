"""PlanningToolsSection inside a real prompt: text, tools, session wiring."""

from __future__ import annotations

import itertools

import pytest

from weakprompt.contrib.planning import (
    PLANNING_TOOL_NAMES,
    Plan,
    PlanChange,
    PlanningStrategy,
    PlanningToolsSection,
    StepIdCounter,
    render_planning_copy,
    strategy_copy,
)
from weakprompt.prompt import MarkdownSection, Prompt, PromptTemplate, RenderedPrompt
from weakprompt.session import Session

ALL = list(PlanningStrategy)


def _render(strategy: PlanningStrategy, *, accepts_overrides: bool = False) -> RenderedPrompt[object]:
    session = Session()
    template: PromptTemplate[object] = PromptTemplate(
        ns="tests/planning",
        key="agent",
        sections=[
            MarkdownSection(title="Task", key="task", template="Tidy the repository."),
            PlanningToolsSection(session=session, strategy=strategy, accepts_overrides=accepts_overrides),
        ],
    )
    return Prompt(template).render(session)


def test_default_strategy_is_react_and_overrides_are_off() -> None:
    section = PlanningToolsSection(session=Session())
    assert section.strategy is PlanningStrategy.REACT
    assert section.accepts_overrides is False
    assert {tool.accepts_overrides for tool in section.tools} == {False}
    assert section.template == render_planning_copy(PlanningStrategy.REACT)
    assert (section.title, section.key) == ("Planning", "planning")


def test_accepts_overrides_applies_to_section_and_tools() -> None:
    section = PlanningToolsSection(session=Session(), accepts_overrides=True, title="Todo", key="todo")
    assert section.accepts_overrides is True
    assert {tool.accepts_overrides for tool in section.tools} == {True}
    assert (section.title, section.key) == ("Todo", "todo")


def test_building_the_section_registers_the_plan_slice() -> None:
    session = Session()
    section = PlanningToolsSection(session=session)
    assert section.session is session
    assert session[Plan].latest() is None
    plan = Plan(objective="o", status="active")
    session.dispatch(PlanChange(plan, StepIdCounter(0)))
    assert session[Plan].latest() == plan


def test_a_disabled_section_offers_neither_text_nor_tools() -> None:
    session = Session()
    template: PromptTemplate[object] = PromptTemplate(
        ns="tests/planning",
        key="off",
        sections=[
            MarkdownSection(title="Task", key="task", template="Do it."),
            PlanningToolsSection(session=session, enabled=False),
        ],
    )
    rendered = Prompt(template).render(session)
    assert rendered.tool_names == ()
    assert "planning_setup_plan" not in rendered.text


@pytest.mark.parametrize("strategy", ALL)
def test_rendered_prompt_has_heading_copy_tools_and_examples(strategy: PlanningStrategy) -> None:
    rendered = _render(strategy)
    assert rendered.tool_names == PLANNING_TOOL_NAMES
    assert "## 2. Planning" in rendered.text
    for paragraph in strategy_copy(strategy).mindset:
        assert paragraph in rendered.text
    for name in PLANNING_TOOL_NAMES:
        assert f"Examples for `{name}`" in rendered.text


@pytest.mark.parametrize(("a", "b"), list(itertools.combinations(ALL, 2)))
def test_strategies_differ_in_copy_but_offer_identical_tools(
    a: PlanningStrategy, b: PlanningStrategy
) -> None:
    first, second = _render(a), _render(b)
    assert first.text != second.text
    assert first.tool_names == second.tool_names
    assert first.tool_schemas == second.tool_schemas
    assert first.tool_hashes == second.tool_hashes


def test_react_section_renders_mindset_text_of_its_own() -> None:
    """Regression: the ancestor's ReAct strategy contributed no copy of its own."""
    paragraphs = {strategy: set(_render(strategy).text.split("\n\n")) for strategy in ALL}
    others = set[str]().union(*(paragraphs[s] for s in ALL if s is not PlanningStrategy.REACT))
    own = paragraphs[PlanningStrategy.REACT] - others
    # The approach label plus at least two mindset paragraphs exist only in the ReAct render.
    assert len(own) >= 3
    assert set(strategy_copy(PlanningStrategy.REACT).mindset) <= own
