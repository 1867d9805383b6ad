"""The runtime layer: the one evaluation loop, the one tool dispatcher, the tool-result pipeline.

The model contract (``ProviderAdapter``, ``ModelRequest``, ...) lives in
``weakprompt.model`` and is re-exported here for convenience. Importing this
package loads neither the transcript nor the store.
"""

from __future__ import annotations

from ..model import ForceTool, ModelRequest, ProviderAdapter, ToolChoice
from .approval import (
    Approve,
    Decision,
    Deny,
    PausedRun,
    PendingCall,
    ResumeError,
    Supply,
    ToolCallPending,
    approval_token,
)
from .dispatcher import ToolDispatcher, ToolExecution
from .loop import (
    DEFAULT_MAX_EXPANSIONS,
    DEFAULT_MAX_TURNS,
    Approver,
    EventCallback,
    ToolWrapper,
    evaluate,
    run,
)
from .loop_events import ModelTurnCompleted, OutputRejected, SectionsExpanded, ToolResultCommitted
from .pause_events import RunPaused, RunResumed, ToolCallDecided
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
from .streaming import stream, stream_sync

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
