"""The planning tools' names, shared by the tools, their copy and their errors."""

from __future__ import annotations

__all__ = ["ADD_STEP_TOOL", "PLANNING_TOOL_NAMES", "READ_PLAN_TOOL", "SETUP_PLAN_TOOL", "UPDATE_STEP_TOOL"]

SETUP_PLAN_TOOL = "planning_setup_plan"
ADD_STEP_TOOL = "planning_add_step"
UPDATE_STEP_TOOL = "planning_update_step"
READ_PLAN_TOOL = "planning_read_plan"
PLANNING_TOOL_NAMES = (SETUP_PLAN_TOOL, ADD_STEP_TOOL, UPDATE_STEP_TOOL, READ_PLAN_TOOL)
