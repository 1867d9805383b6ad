"""The conversation record: provenance, tool tracking, compile to provider params.

``Transcript`` (and what comes with it) loads the store and so SQLAlchemy;
it is imported on first use, so that code needing only the compiled
context or the records (adapters, the runtime's types) stays light.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from .arguments import RAW_ARGUMENTS_KEY
from .compiled import CompiledContext
from .options import CompileOptions, CompileTransform, CompileView
from .queries import ToolTurn
from .records import CommitInfo, CommitOperation
from .tool_tracking import ToolSetChange, hash_tool_schema
from .turns import TurnRecord

if TYPE_CHECKING:
    from .transcript import ACTIVE_TOOLS, ToolsArgument, Transcript

_LOADED_ON_USE = {"ACTIVE_TOOLS": ".transcript", "ToolsArgument": ".transcript", "Transcript": ".transcript"}


def __getattr__(name: str) -> object:
    module = _LOADED_ON_USE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value: object = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


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
