"""MCP: mount any MCP server's tools into a section, and serve a prompt's tools as an MCP server.

Needs the extra ``weakprompt[mcp]``. Importing this package loads no SDK
code; connecting to a server does. See ``specs/MCP.md``.
"""

from __future__ import annotations

from ._callbacks import (
    ElicitationAnswer,
    ElicitationCallback,
    ElicitationRequest,
    McpProgress,
    ProgressCallback,
)
from ._info import McpToolInfo, ToolFilter
from ._mount import with_toolsets
from ._serve import PromptServer
from ._server import McpServer
from ._tool import McpArguments, McpTool
from ._toolset import (
    ApprovalPolicy,
    McpCallRequest,
    McpConnectionError,
    McpPromptInfo,
    McpResourceInfo,
    McpToolset,
    PauseFor,
    Reconnect,
    mounted,
)

__all__ = [
    "ApprovalPolicy",
    "ElicitationAnswer",
    "ElicitationCallback",
    "ElicitationRequest",
    "McpArguments",
    "McpCallRequest",
    "McpConnectionError",
    "McpProgress",
    "McpPromptInfo",
    "McpResourceInfo",
    "McpServer",
    "McpTool",
    "McpToolInfo",
    "McpToolset",
    "PauseFor",
    "ProgressCallback",
    "PromptServer",
    "Reconnect",
    "ToolFilter",
    "mounted",
    "with_toolsets",
]
