"""A session-scoped todo list for agents: four tools and the section that offers them.

Typical use::

    session = Session()
    section = PlanningToolsSection(session=session, strategy=PlanningStrategy.PLAN_ACT_REFLECT)
    template = PromptTemplate(ns="agents", key="worker", sections=[..., section])
    ...  # evaluate; the model calls planning_setup_plan and friends
    plan = session[Plan].latest()

See ``specs/PLANNING.md``.
"""

from __future__ import annotations

from .logic import PlanChange, PlanningError, add_steps, clean_text, plan_status, setup_plan, update_step
from .model import MAX_TEXT_LENGTH, Plan, PlanStatus, PlanStep, StepIdCounter, StepStatus
from .names import ADD_STEP_TOOL, PLANNING_TOOL_NAMES, READ_PLAN_TOOL, SETUP_PLAN_TOOL, UPDATE_STEP_TOOL
from .params import AddStep, ReadPlan, SetupPlan, UpdateStep
from .section import PLAN_VIEW_KEY, PlanningToolsSection, PlanViewSection, plan_view_section
from .state import current_plan, register_planning_state, step_counter
from .strategies import PlanningStrategy, StrategyCopy, render_planning_copy, strategy_copy
from .tools import planning_tools

__all__ = [
    "ADD_STEP_TOOL",
    "MAX_TEXT_LENGTH",
    "PLAN_VIEW_KEY",
    "PLANNING_TOOL_NAMES",
    "READ_PLAN_TOOL",
    "SETUP_PLAN_TOOL",
    "UPDATE_STEP_TOOL",
    "AddStep",
    "Plan",
    "PlanChange",
    "PlanStatus",
    "PlanViewSection",
    "PlanStep",
    "PlanningError",
    "PlanningStrategy",
    "PlanningToolsSection",
    "ReadPlan",
    "SetupPlan",
    "StepIdCounter",
    "StepStatus",
    "StrategyCopy",
    "UpdateStep",
    "add_steps",
    "clean_text",
    "current_plan",
    "plan_status",
    "plan_view_section",
    "planning_tools",
    "register_planning_state",
    "render_planning_copy",
    "setup_plan",
    "step_counter",
    "strategy_copy",
    "update_step",
]
