"""Typed tools: definitions, results, the handler context and examples."""

from __future__ import annotations

from .context import ToolContext
from .example import ToolExample
from .handler import NoParams, ToolHandler
from .result import RenderableResult, ToolResult
from .tool import AnyTool, Tool, tool

__all__ = [
    "AnyTool",
    "NoParams",
    "RenderableResult",
    "Tool",
    "ToolContext",
    "ToolExample",
    "ToolHandler",
    "ToolResult",
    "tool",
]
