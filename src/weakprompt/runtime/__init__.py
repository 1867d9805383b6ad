"""The runtime layer: the one evaluation loop, the one tool dispatcher, the tool-result pipeline.

The model contract (``ProviderAdapter``, ``ModelRequest``, ...) lives in
``weakprompt.model`` and is re-exported here for convenience. Importing this
package loads neither the transcript nor the store.
"""

from __future__ import annotations

from ..model import ForceTool, ModelRequest, ProviderAdapter, ToolChoice
from .dispatcher import ToolDispatcher, ToolExecution
from .loop import DEFAULT_MAX_EXPANSIONS, DEFAULT_MAX_TURNS, EventCallback, evaluate, run
from .loop_events import ModelTurnCompleted, OutputRejected, SectionsExpanded, ToolResultCommitted
from .redaction import Redactor, default_redact
from .response import PromptResponse
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
    "ForceTool",
    "ModelRequest",
    "ProviderAdapter",
    "Redactor",
    "ToolChoice",
    "ToolDispatcher",
    "ToolExecution",
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
