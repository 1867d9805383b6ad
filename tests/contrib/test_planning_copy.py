"""The strategy copy: one skeleton and tool list, a different mindset per strategy."""

from __future__ import annotations

import itertools
import re

import pytest

from weakprompt.contrib.planning.names import PLANNING_TOOL_NAMES
from weakprompt.contrib.planning.strategies import PlanningStrategy, render_planning_copy, strategy_copy

ALL = list(PlanningStrategy)


def _skeleton(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("**")]


def _tool_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("- `planning_")]


def test_react_has_its_own_mindset_copy() -> None:
    """Regression: the ancestor's ReAct strategy rendered no mindset text at all."""
    copy = strategy_copy(PlanningStrategy.REACT)
    assert len(copy.mindset) >= 2
    assert all(len(paragraph) > 80 for paragraph in copy.mindset)
    rendered = render_planning_copy(PlanningStrategy.REACT)
    for paragraph in copy.mindset:
        assert paragraph in rendered


@pytest.mark.parametrize(("a", "b"), list(itertools.combinations(ALL, 2)))
def test_every_pair_of_strategies_differs_but_shares_structure(
    a: PlanningStrategy, b: PlanningStrategy
) -> None:
    text_a, text_b = render_planning_copy(a), render_planning_copy(b)
    assert text_a != text_b
    assert not set(strategy_copy(a).mindset) & set(strategy_copy(b).mindset)
    assert [line.split(":")[0] for line in _skeleton(text_a)] == [
        line.split(":")[0] for line in _skeleton(text_b)
    ]
    assert _tool_lines(text_a) == _tool_lines(text_b)


@pytest.mark.parametrize("strategy", ALL)
def test_copy_references_every_tool_and_the_limits(strategy: PlanningStrategy) -> None:
    text = render_planning_copy(strategy)
    listed = [re.match(r"- `([a-z_]+)`", line).group(1) for line in _tool_lines(text)]  # type: ignore[union-attr]
    assert listed == list(PLANNING_TOOL_NAMES)
    assert "500" in text
    assert "$" not in text  # the section template must not contain substitution markers


@pytest.mark.parametrize("strategy", ALL)
def test_only_mindset_paragraphs_vary(strategy: PlanningStrategy) -> None:
    reference = render_planning_copy(PlanningStrategy.REACT)
    text = render_planning_copy(strategy)
    for paragraph in strategy_copy(PlanningStrategy.REACT).mindset:
        reference = reference.replace(paragraph, "<mindset>")
    for paragraph in strategy_copy(strategy).mindset:
        text = text.replace(paragraph, "<mindset>")
    strip_label = re.compile(r"^\*\*Approach: .*\*\*$", re.MULTILINE)
    assert strip_label.sub("", reference) == strip_label.sub("", text)
