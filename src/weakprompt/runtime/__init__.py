"""The runtime layer: the one evaluation loop, the one tool dispatcher, the tool-result pipeline.

The model contract (``ProviderAdapter``, ``ModelRequest``, ...) lives in
``weakprompt.model`` and is re-exported here for convenience. Importing this
package loads neither the transcript nor the store.
"""

from __future__ import annotations

from ..model import ForceTool, ModelRequest, ProviderAdapter, ToolChoice
from .dispatcher import ToolDispatcher, ToolExecution
from .loop import DEFAULT_MAX_EXPANSIONS, DEFAULT_MAX_TURNS, evaluate
from .loop_events import ModelTurnCompleted, OutputRejected, SectionsExpanded, ToolResultCommitted
from .redaction import Redactor, default_redact
from .response import PromptResponse

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
    "evaluate",
]
