"""The conversation record: the commit chain, tool tracking, queries, compile, and tool-result hooks.

Layer 2: it uses the store and the core (the model contract included: a
summary is asked of any ``ProviderAdapter`` it is handed) and never the
runtime. ``Transcript`` (and what comes with it) loads the store and so
SQLAlchemy; it is imported on first use, so that code needing only the
records or the hook types stays light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports
from ..model import CompiledContext
from .compaction import COMPACTION_KEY, RECALL_TOOL_NAME, CompactedView, CompactionSettings
from .compress import CompressedResult, SkippedResult, ToolCompression, compress_tool_calls
from .hooks import (
    HOOK_EVENTS,
    HookEvent,
    ToolResultHandler,
    ToolResultHookError,
    ToolResultHooks,
    ToolResultRejected,
)
from .options import CompileOptions, CompileTransform, CompileView
from .pending import PendingStatus, PendingToolResult
from .queries import ToolTurn
from .records import CommitInfo, CommitOperation
from .shaped import shaped_by_output_pipeline
from .summarization_config import ToolSummarizationConfig, ToolSummarizationHook, configure_tool_summarization
from .summarize import TOOL_SUMMARY_SYSTEM_PROMPT, SummaryAttempt
from .tool_tracking import ToolSetChange, hash_tool_schema
from .turns import PlannedWrite, TurnRecord, TurnWrite

if TYPE_CHECKING:
    from .forking import fork_session
    from .hook_run import WITHHELD, commit_withheld
    from .transcript import ACTIVE_TOOLS, ToolsArgument, Transcript

_LAZY = {
    "ACTIVE_TOOLS": ".transcript",
    "ToolsArgument": ".transcript",
    "Transcript": ".transcript",
    "WITHHELD": ".hook_run",
    "commit_withheld": ".hook_run",
    "fork_session": ".forking",
}


__all__ = [
    "ACTIVE_TOOLS",
    "COMPACTION_KEY",
    "RECALL_TOOL_NAME",
    "HOOK_EVENTS",
    "TOOL_SUMMARY_SYSTEM_PROMPT",
    "WITHHELD",
    "CommitInfo",
    "CommitOperation",
    "CompactedView",
    "CompactionSettings",
    "CompileOptions",
    "CompileTransform",
    "CompileView",
    "CompiledContext",
    "CompressedResult",
    "HookEvent",
    "PendingStatus",
    "PendingToolResult",
    "PlannedWrite",
    "SkippedResult",
    "SummaryAttempt",
    "ToolCompression",
    "ToolResultHandler",
    "ToolResultHookError",
    "ToolResultHooks",
    "ToolResultRejected",
    "ToolSetChange",
    "ToolSummarizationConfig",
    "ToolSummarizationHook",
    "ToolTurn",
    "ToolsArgument",
    "Transcript",
    "TurnRecord",
    "TurnWrite",
    "commit_withheld",
    "compress_tool_calls",
    "configure_tool_summarization",
    "fork_session",
    "hash_tool_schema",
    "shaped_by_output_pipeline",
]

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__)
