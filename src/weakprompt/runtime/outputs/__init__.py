"""Stored tool outputs: the output store, the size policy, lazy loading and the loop wiring.

See ``specs/TOOL_RESULTS.md`` ("Output store, size policy and lazy loading").
"""

from __future__ import annotations

from .handles import handle_for, payload_hash
from .lazy_tool import (
    GET_TOOL_RESULT_NAME,
    KNOWN_IDS_SHOWN,
    GetToolResultParams,
    make_get_tool_result_tool,
    not_found_text,
)
from .pipeline import ProcessedResult, ToolResultPipeline
from .policy import DEFAULT_MAX_BYTES, MIN_MAX_BYTES, OversizeReason, SizePolicy, handle_text
from .preview import EMPTY_PREVIEW, ERROR_PREFIX, PREVIEW_MAX_CHARS, make_preview, safe_text
from .records import StoredToolResult, ToolOutputStoreError, ToolResultMetadata, ToolResultReference
from .store import OversizedDecision, ToolOutputStore
from .summaries import (
    DEFAULT_SUMMARIES,
    SUMMARY_MAX_CHARS,
    SummaryFunction,
    SummaryInput,
    SummaryRegistry,
    default_summary,
    register_summary,
)
from .wiring import RETENTIONS, EvaluationOutputs, Retention, ToolOutputSettings

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_SUMMARIES",
    "EMPTY_PREVIEW",
    "ERROR_PREFIX",
    "GET_TOOL_RESULT_NAME",
    "KNOWN_IDS_SHOWN",
    "MIN_MAX_BYTES",
    "PREVIEW_MAX_CHARS",
    "RETENTIONS",
    "SUMMARY_MAX_CHARS",
    "EvaluationOutputs",
    "GetToolResultParams",
    "OversizeReason",
    "OversizedDecision",
    "ProcessedResult",
    "Retention",
    "SizePolicy",
    "StoredToolResult",
    "SummaryFunction",
    "SummaryInput",
    "SummaryRegistry",
    "ToolOutputSettings",
    "ToolOutputStore",
    "ToolOutputStoreError",
    "ToolResultMetadata",
    "ToolResultPipeline",
    "ToolResultReference",
    "default_summary",
    "handle_for",
    "handle_text",
    "make_get_tool_result_tool",
    "make_preview",
    "not_found_text",
    "payload_hash",
    "register_summary",
    "safe_text",
]
