"""The conversation record: provenance, tool tracking, compile to provider params."""

from __future__ import annotations

from .arguments import RAW_ARGUMENTS_KEY
from .compiled import CompiledContext
from .options import CompileOptions, CompileTransform, CompileView
from .queries import ToolTurn
from .records import CommitInfo, CommitOperation
from .tool_tracking import ToolSetChange, hash_tool_schema
from .transcript import ACTIVE_TOOLS, ToolsArgument, Transcript
from .turns import TurnRecord

__all__ = [
    "ACTIVE_TOOLS",
    "RAW_ARGUMENTS_KEY",
    "CommitInfo",
    "CommitOperation",
    "CompileOptions",
    "CompileTransform",
    "CompileView",
    "CompiledContext",
    "ToolSetChange",
    "ToolTurn",
    "ToolsArgument",
    "Transcript",
    "TurnRecord",
    "hash_tool_schema",
]
