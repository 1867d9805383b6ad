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
from .guardrails import Guardrail, GuardrailCheck, GuardrailPoint, Rewrite, Trip
from .loop import (
    DEFAULT_MAX_EXPANSIONS,
    DEFAULT_MAX_TURNS,
    RunSettings,
    ToolWrapper,
    evaluate,
    run,
    run_sync,
    run_with,
    run_with_sync,
)
from .loop_events import ModelTurnCompleted, OutputRejected, SectionsExpanded
from .pause_errors import ResumeError, ToolCallPending
from .redaction import Redactor, default_redact
from .response import PromptResponse
from .resume import (
    check_decisions_for,
    paused_run,
    paused_runs,
    resume,
    resume_async,
    resume_sync,
    resume_with,
    resume_with_sync,
)
from .verdict import FailedCall, RequiredToolFailed, RunVerdict

if TYPE_CHECKING:
    from .approval import (
        Approve,
        Decision,
        Deny,
        InlineApprover,
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
        ReasoningDelta,
        RunEvent,
        RunFinished,
        TextDelta,
        ToolCallDelta,
        ToolCallReady,
        ToolCallStarted,
        ToolInvoked,
        ToolResultStored,
        TurnCommitted,
        UsageReported,
    )
    from .streaming import stream, stream_runs, stream_runs_sync, stream_sync, stream_sync_with, stream_with

# Pause records, decisions, run events and streaming load on first access (name -> the module of
# this package that defines it): importing the loop builds no class that a plain run never uses.
_LAZY: dict[str, str] = {
    "Approve": ".approval",
    "Decision": ".approval",
    "Deny": ".approval",
    "InlineApprover": ".approval",
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
    "ReasoningDelta": ".run_events",
    "RunEvent": ".run_events",
    "RunFinished": ".run_events",
    "TextDelta": ".run_events",
    "ToolCallDelta": ".run_events",
    "ToolCallReady": ".run_events",
    "ToolCallStarted": ".run_events",
    "ToolInvoked": ".run_events",
    "ToolResultStored": ".run_events",
    "TurnCommitted": ".run_events",
    "UsageReported": ".run_events",
    "stream": ".streaming",
    "stream_runs": ".streaming",
    "stream_runs_sync": ".streaming",
    "stream_sync": ".streaming",
    "stream_sync_with": ".streaming",
    "stream_with": ".streaming",
}

__all__ = [
    "FailedCall",
    "RequiredToolFailed",
    "RunVerdict",
    "APPROVAL_KEY",
    "ApprovalNote",
    "Approve",
    "CallDecision",
    "DEFAULT_MAX_EXPANSIONS",
    "DEFAULT_MAX_TURNS",
    "Decision",
    "Deny",
    "EventCallback",
    "ForceTool",
    "Guardrail",
    "GuardrailCheck",
    "GuardrailPoint",
    "InlineApprover",
    "ModelRequest",
    "ModelTurnCompleted",
    "OutputRejected",
    "PauseRecord",
    "PausedRun",
    "PendingCall",
    "PromptResponse",
    "ProviderAdapter",
    "Redactor",
    "ResumeError",
    "Rewrite",
    "ReasoningDelta",
    "RunEvent",
    "RunFinished",
    "RunPaused",
    "RunResumed",
    "RunSettings",
    "SectionsExpanded",
    "Supply",
    "TextDelta",
    "ToolCallDecided",
    "ToolCallDelta",
    "ToolCallPending",
    "ToolCallReady",
    "ToolCallStarted",
    "ToolChoice",
    "ToolDispatcher",
    "ToolExecution",
    "ToolInvoked",
    "ToolResultStored",
    "ToolWrapper",
    "Trip",
    "TurnCommitted",
    "UsageReported",
    "approval_note",
    "approval_token",
    "check_decisions_for",
    "decision_records",
    "default_redact",
    "evaluate",
    "paused_run",
    "paused_runs",
    "read_pauses",
    "resume",
    "resume_async",
    "resume_sync",
    "resume_with",
    "resume_with_sync",
    "run",
    "run_sync",
    "run_with",
    "run_with_sync",
    "stored_pauses",
    "stream",
    "stream_runs",
    "stream_runs_sync",
    "stream_sync",
    "stream_sync_with",
    "stream_with",
]


# Renamed (one name per concept); the old names warn for one release. ``resume`` and ``resume_async``
# are functions that warn when called (``runtime.resume``): ``resume`` changes meaning next release.
# The run's copies of events, and the commit event that said what the storage event says, are one
# vocabulary now, in weakprompt.events (the run streams those very classes).
_RENAMED: dict[str, str] = {
    "Approver": "InlineApprover",
    "ToolCallArgumentsDelta": "weakprompt.events.ToolCallDelta",
    "ToolCallCompleted": "weakprompt.events.ToolCallReady",
    "ToolResultCommitted": "weakprompt.events.ToolResultStored",
    "ToolResultReady": "weakprompt.events.ToolResultStored",
}

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__, renamed=_RENAMED)
