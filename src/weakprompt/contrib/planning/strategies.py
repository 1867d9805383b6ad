"""The instructions the planning section renders, one mindset per strategy.

Every strategy shares the same markdown skeleton, tool list and rules; only
the mindset paragraphs change. That keeps prompts comparable across
strategies and means a model never sees a tool described two ways.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum
from types import MappingProxyType

import attrs

from .model import MAX_TEXT_LENGTH
from .names import ADD_STEP_TOOL, READ_PLAN_TOOL, SETUP_PLAN_TOOL, UPDATE_STEP_TOOL

__all__ = ["PlanningStrategy", "StrategyCopy", "render_planning_copy", "strategy_copy"]


class PlanningStrategy(Enum):
    """How the model is told to think while it plans."""

    REACT = "react"
    PLAN_ACT_REFLECT = "plan_act_reflect"
    GOAL_DECOMPOSE_ROUTE_SYNTHESISE = "goal_decompose_route_synthesise"


@attrs.frozen
class StrategyCopy:
    """The part of the section text that belongs to one strategy."""

    label: str
    mindset: tuple[str, ...]


_COPY: Mapping[PlanningStrategy, StrategyCopy] = MappingProxyType(
    {
        PlanningStrategy.REACT: StrategyCopy(
            label="ReAct: reason, act, observe",
            mindset=(
                "Work in short loops of thinking, acting and looking at what came back. Before each "
                "tool call, say in a sentence or two what you expect it to show or change; when the "
                "result arrives, hold it against that expectation before you pick the next move.",
                "Let evidence steer the plan. Add a step when a result reveals work you had not "
                "foreseen, rather than guessing the whole route at the start, and drop your assumptions "
                "as soon as an observation contradicts them.",
                f"Keep what you learn in the plan. When a result matters for later, fold the finding "
                f"into the title of the step it belongs to with `{UPDATE_STEP_TOOL}`, so it stays in "
                f"view after the raw output has scrolled out of sight.",
            ),
        ),
        PlanningStrategy.PLAN_ACT_REFLECT: StrategyCopy(
            label="Plan, act, reflect",
            mindset=(
                f"Think the whole job through before you touch anything. Pass every step you can "
                f"foresee to `{SETUP_PLAN_TOOL}` in the order you mean to take them, so the plan is a "
                f"complete route from where you are to the objective.",
                "Then carry the steps out one at a time. After each one, pause and review it: did the "
                "result deliver what the step promised, does a later step need rewording, is anything "
                "missing from the route?",
                "Write the verdict of each review into the plan before moving on, by retitling the "
                "finished step with a short lesson or by adding a corrective step. Change the route "
                "after a review, not halfway through a step.",
            ),
        ),
        PlanningStrategy.GOAL_DECOMPOSE_ROUTE_SYNTHESISE: StrategyCopy(
            label="Goal, decompose, route, synthesise",
            mindset=(
                "Start by restating the goal in your own words as the plan's objective, including what "
                "a finished answer has to contain. That objective is the yardstick for every later "
                "decision.",
                "Split the goal into sub-problems small enough that one tool call or one piece of "
                "reasoning can settle each, and make every sub-problem a step. Only once the split is "
                "written down, decide for each step which tool or source should handle it.",
                "When the parts are settled, combine them into one answer that meets the objective as a "
                "whole instead of listing the separate findings, and mark the last step done only once "
                "that combined answer is written.",
            ),
        ),
    }
)

_INTRO = (
    "Keep a short todo list for this task with the planning tools. The plan lives in the session "
    "and outlasts each model turn, so it is where you record what you intend to do and how far you "
    "have got."
)

_TOOLS = (
    f"- `{SETUP_PLAN_TOOL}`: start a plan with an objective and, optionally, its first steps. "
    "Calling it again replaces the whole plan.",
    f"- `{ADD_STEP_TOOL}`: append one or more steps to the end of the plan.",
    f"- `{UPDATE_STEP_TOOL}`: give a step, chosen by `step_id`, a new title or a new status "
    "(`pending`, `in_progress`, `done`).",
    f"- `{READ_PLAN_TOOL}`: show the current plan with every step and its status.",
)

_RULES = (
    "- Set a step to `in_progress` when you start on it and to `done` as soon as it is finished.",
    "- The plan becomes `completed` by itself once every step is done; adding a step or reopening "
    "one makes it `active` again.",
    f"- Titles and the objective are trimmed, must not be empty, and may hold at most "
    f"{MAX_TEXT_LENGTH} characters.",
    "- Step ids count up through the session and are never reused, even after the plan is "
    f"replaced; call `{READ_PLAN_TOOL}` when you are unsure of an id.",
)


def strategy_copy(strategy: PlanningStrategy) -> StrategyCopy:
    return _COPY[strategy]


def render_planning_copy(strategy: PlanningStrategy) -> str:
    """The full markdown body of the planning section for ``strategy``."""
    copy = strategy_copy(strategy)
    blocks = [
        _INTRO,
        f"**Approach: {copy.label}**",
        *copy.mindset,
        "**Tools**",
        "\n".join(_TOOLS),
        "**Rules**",
        "\n".join(_RULES),
    ]
    return "\n\n".join(blocks)
