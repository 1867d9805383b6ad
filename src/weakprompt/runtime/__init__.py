"""The runtime layer: the one evaluation loop, the one tool dispatcher, the tool-result pipeline.

The model contract (``ProviderAdapter``, ``ModelRequest``, ...) lives in
``weakprompt.model`` and is re-exported here for convenience. Importing this
package loads neither the transcript nor the store, nor the pause records,
decisions, run events and streaming, which a plain run never uses (run
events are built only for a listener): their names resolve on first access.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports
from ..model import ForceTool, ModelRequest, ProviderAdapter, ToolChoice
from .dispatcher import ToolDispatcher, ToolExecution
from .loop import (
    DEFAULT_MAX_EXPANSIONS,
    DEFAULT_MAX_TURNS,
    ToolWrapper,
    evaluate,
    run,
)
from .loop_events import ModelTurnCompleted, OutputRejected, SectionsExpanded, ToolResultCommitted
from .pause_errors import ResumeError, ToolCallPending
from .redaction import Redactor, default_redact
from .response import PromptResponse
from .resume import check_decisions_for, paused_run, paused_runs, resume, resume_async

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
    from .pause_records import (
        APPROVAL_KEY,
        ApprovalNote,
        CallDecision,
        PauseRecord,
        approval_note,
        decision_records,
        read_pauses,
        stored_pauses,
    )
    from .run_events import (
        EventCallback,
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

# Pause records, decisions, run events and streaming load on first access (name -> the module of
# this package that defines it): importing the loop builds no class that a plain run never uses.
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
    "APPROVAL_KEY": ".pause_records",
    "ApprovalNote": ".pause_records",
    "CallDecision": ".pause_records",
    "PauseRecord": ".pause_records",
    "approval_note": ".pause_records",
    "decision_records": ".pause_records",
    "read_pauses": ".pause_records",
    "stored_pauses": ".pause_records",
    "EventCallback": ".run_events",
    "RunEvent": ".run_events",
    "RunFinished": ".run_events",
    "TextDelta": ".run_events",
    "ToolCallArgumentsDelta": ".run_events",
    "ToolCallCompleted": ".run_events",
    "ToolCallStarted": ".run_events",
    "ToolResultReady": ".run_events",
    "TurnCommitted": ".run_events",
    "UsageReported": ".run_events",
    "stream": ".streaming",
    "stream_sync": ".streaming",
}

__all__ = [
    "APPROVAL_KEY",
    "ApprovalNote",
    "Approve",
    "Approver",
    "CallDecision",
    "Decision",
    "Deny",
    "PauseRecord",
    "PausedRun",
    "PendingCall",
    "ResumeError",
    "RunPaused",
    "RunResumed",
    "Supply",
    "ToolCallDecided",
    "ToolCallPending",
    "approval_note",
    "approval_token",
    "check_decisions_for",
    "decision_records",
    "paused_run",
    "paused_runs",
    "read_pauses",
    "resume",
    "resume_async",
    "stored_pauses",
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


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__)
