"""Typed tools: definitions, results, the handler context and examples."""

from __future__ import annotations

from .approval import ApprovalPolicy, CallDeferred, needs_approval
from .arguments import ToolArguments
from .context import ToolContext
from .decorator import ToolDecorator, tool
from .definition import AnyTool, Tool
from .example import ToolExample
from .handler import NoParams, ToolHandler, ToolReturn, is_async_handler
from .result import RenderableResult, ToolResult

__all__ = [
    "AnyTool",
    "ApprovalPolicy",
    "CallDeferred",
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
    "needs_approval",
    "tool",
]
