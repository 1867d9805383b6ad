"""The runtime layer: the one evaluation loop, the one tool dispatcher, the tool-result pipeline.

The model contract (``ProviderAdapter``, ``ModelRequest``, ...) lives in
``weakprompt.model`` and is re-exported here for convenience. Importing this
package loads neither the transcript nor the store, nor the pause records,
decisions and streaming, which a plain run never uses: their names resolve
on first access.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from ..model import ForceTool, ModelRequest, ProviderAdapter, ToolChoice
from .dispatcher import ToolDispatcher, ToolExecution
from .loop import (
    DEFAULT_MAX_EXPANSIONS,
    DEFAULT_MAX_TURNS,
    EventCallback,
    ToolWrapper,
    evaluate,
    run,
)
from .loop_events import ModelTurnCompleted, OutputRejected, SectionsExpanded, ToolResultCommitted
from .pause_errors import ResumeError, ToolCallPending
from .redaction import Redactor, default_redact
from .response import PromptResponse
from .resume import paused_run, paused_runs, resume, resume_async
from .run_events import (
    RunEvent,
    RunFinished,
    TextDelta,
    ToolCallArgumentsDelta,
    ToolCallCompleted,
    ToolCallStarted,
    ToolResultReady,
    TurnCommitted,
    UsageReported,
)

if TYPE_CHECKING:
    from .approval import (
        Approve,
        Approver,
        Decision,
        Deny,
        PausedRun,
        PendingCall,
        Supply,
        approval_token,
    )
    from .pause_events import RunPaused, RunResumed, ToolCallDecided
    from .streaming import stream, stream_sync

# Pause records, decisions and streaming: loaded on first access (name -> the module of this package that
# defines it), so that importing the loop does not build the classes of what a plain run never uses.
_LAZY: dict[str, str] = {
    "Approve": ".approval",
    "Approver": ".approval",
    "Decision": ".approval",
    "Deny": ".approval",
    "PausedRun": ".approval",
    "PendingCall": ".approval",
    "Supply": ".approval",
    "approval_token": ".approval",
    "RunPaused": ".pause_events",
    "RunResumed": ".pause_events",
    "ToolCallDecided": ".pause_events",
    "stream": ".streaming",
    "stream_sync": ".streaming",
}

__all__ = [
    "Approve",
    "Approver",
    "Decision",
    "Deny",
    "PausedRun",
    "PendingCall",
    "ResumeError",
    "RunPaused",
    "RunResumed",
    "Supply",
    "ToolCallDecided",
    "ToolCallPending",
    "approval_token",
    "paused_run",
    "paused_runs",
    "resume",
    "resume_async",
    "ForceTool",
    "ModelRequest",
    "ProviderAdapter",
    "Redactor",
    "ToolChoice",
    "ToolDispatcher",
    "ToolExecution",
    "ToolWrapper",
    "default_redact",
    "DEFAULT_MAX_EXPANSIONS",
    "DEFAULT_MAX_TURNS",
    "ModelTurnCompleted",
    "OutputRejected",
    "PromptResponse",
    "SectionsExpanded",
    "ToolResultCommitted",
    "EventCallback",
    "RunEvent",
    "RunFinished",
    "TextDelta",
    "ToolCallArgumentsDelta",
    "ToolCallCompleted",
    "ToolCallStarted",
    "ToolResultReady",
    "TurnCommitted",
    "UsageReported",
    "evaluate",
    "run",
    "stream",
    "stream_sync",
]


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value: object = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
