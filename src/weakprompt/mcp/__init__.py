"""MCP: mount any MCP server's tools into a section, and serve a prompt's tools as an MCP server.

Needs the extra ``weakprompt[mcp]``. Importing this package loads no SDK
code; connecting to a server does. See ``specs/MCP.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports
from ._callbacks import (
    ElicitationAnswer,
    ElicitationCallback,
    ElicitationRequest,
    McpProgress,
    ProgressCallback,
)
from ._http_guard import HttpGuard, is_loopback
from ._info import McpToolInfo, ToolFilter
from ._mount import with_toolsets
from ._server import McpServer
from ._tool import McpArguments, McpLimits, McpTool
from ._toolset import (
    Concurrency,
    McpCallFilter,
    McpCallRequest,
    McpConnectionError,
    McpPromptInfo,
    McpResourceInfo,
    McpToolset,
    PauseFor,
    Reconnect,
    ResourceSectionOptions,
    SectionOptions,
    mounted,
)

__all__ = [
    "Concurrency",
    "ElicitationAnswer",
    "ElicitationCallback",
    "ElicitationRequest",
    "HttpGuard",
    "McpArguments",
    "McpCallFilter",
    "McpCallRequest",
    "McpConnectionError",
    "McpLimits",
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
    "ResourceSectionOptions",
    "SectionOptions",
    "ToolFilter",
    "mounted",
    "is_loopback",
    "with_toolsets",
]

# ``ApprovalPolicy`` was the inline filter's name until it was told apart from
# ``tools.ApprovalPolicy`` (which pauses a run); the old name warns for one release.
if TYPE_CHECKING:
    from ._serve import PromptServer

# The serving side (it opens transcripts on a store, which loads SQLAlchemy) loads on first access.
_LAZY: dict[str, str] = {"PromptServer": "._serve"}

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__, renamed={"ApprovalPolicy": "McpCallFilter"})
