"""The model contract: what the loop sends a provider adapter and what it gets back.

Core layer: the transcript compiles a :class:`CompiledContext`, the loop
wraps it in a :class:`ModelRequest`, and any :class:`ProviderAdapter`
answers it, whole or as a stream of :data:`ModelEvent` values. Lower layers
that need a model receive a ``ProviderAdapter``; nothing here imports the
runtime or a provider SDK.
"""

from __future__ import annotations

from ..model_settings import ModelSettings, ReasoningEffort, SettingsAware, adapter_settings, check_supported
from .adapter import ProviderAdapter, WholeReplyAdapter
from .compaction_settings import CompactionSettings
from .context import CompiledContext
from .output_mode import CONCRETE_OUTPUT_MODES, OUTPUT_MODES, ConcreteOutputMode, OutputMode
from .request import TURN_CONTEXT_KEY, CacheHints, ForceTool, ModelRequest, ToolChoice
from .stream import (
    ModelEvent,
    ReasoningDelta,
    ReplyAssembler,
    ReplyCompleted,
    TextDelta,
    ToolCallDelta,
    ToolCallReady,
    ToolCallStarted,
    UsageReported,
    assemble,
    complete_async,
    drain,
    turn_events,
)

__all__ = [
    "adapter_settings",
    "check_supported",
    "CONCRETE_OUTPUT_MODES",
    "OUTPUT_MODES",
    "TURN_CONTEXT_KEY",
    "CacheHints",
    "CompactionSettings",
    "CompiledContext",
    "ConcreteOutputMode",
    "ForceTool",
    "ModelEvent",
    "ModelRequest",
    "ModelSettings",
    "OutputMode",
    "ProviderAdapter",
    "ReasoningDelta",
    "ReasoningEffort",
    "SettingsAware",
    "ReplyAssembler",
    "ReplyCompleted",
    "TextDelta",
    "ToolCallDelta",
    "ToolCallReady",
    "ToolCallStarted",
    "ToolChoice",
    "UsageReported",
    "WholeReplyAdapter",
    "assemble",
    "complete_async",
    "drain",
    "turn_events",
]
