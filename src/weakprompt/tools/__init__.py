"""Typed tools: definitions, results, the handler context and examples."""

from __future__ import annotations

from .arguments import ToolArguments
from .context import ToolContext
from .decorator import ToolDecorator, tool
from .definition import AnyTool, Tool
from .example import ToolExample
from .handler import NoParams, ToolHandler, ToolReturn, is_async_handler
from .result import RenderableResult, ToolResult

__all__ = [
    "AnyTool",
    "NoParams",
    "RenderableResult",
    "Tool",
    "ToolArguments",
    "ToolContext",
    "ToolDecorator",
    "ToolExample",
    "ToolHandler",
    "ToolReturn",
    "ToolResult",
    "is_async_handler",
    "tool",
]
