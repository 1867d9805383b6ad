"""One model call as the loop asks for it: the context, the tools on offer, the tool choice."""

from __future__ import annotations

from typing import Literal, TypeAlias

import attrs

from ..jsontypes import JSONObject
from ..tools import AnyTool
from .context import CompiledContext

__all__ = ["ForceTool", "ModelRequest", "ToolChoice"]


@attrs.frozen
class ForceTool:
    """Force the model to call this one tool on this turn."""

    name: str


ToolChoice: TypeAlias = Literal["auto", "required", "none"] | ForceTool


@attrs.frozen
class ModelRequest:
    """Everything an adapter needs for one model call."""

    context: CompiledContext
    tools: tuple[AnyTool, ...] = ()
    tool_choice: ToolChoice = "auto"
    output_schema: JSONObject | None = None
    output_name: str | None = None
    max_output_tokens: int | None = None
