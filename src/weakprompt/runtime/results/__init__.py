"""The tool-result pipeline: everything between a tool's reply and what the model reads of it.

See ``specs/TOOL_RESULTS.md``. One result takes one path
(:class:`ToolResultPipeline`): redact, the transcript's ``tool_result``
hook, the size policy that puts a handle in place of an oversized text
(:class:`SizePolicy`), then stage: the output store keeps it once
(:class:`ToolOutputStore`) with the commit. ``tool_output`` extracts from
what is stored (:mod:`.extraction`), ``get_tool_result`` loads an earlier
result again, and :class:`ToolOutputSettings` is how an evaluation
configures it. The hooks and summaries themselves belong to the
transcript (``weakprompt.transcript``), which must run them without any
runtime; the lazy-loading compile transform is there too. This package
never imports the loop: the loop hands it what it needs (its own
``evaluate`` for the read-grep sub-agent).
"""

from __future__ import annotations

from ...lazy import lazy_exports
from ...store.output_record import OutputFacts, ToolResultMetadata
from ...transcript.shaped import GET_TOOL_RESULT_NAME, NEVER_STORED_TOOLS, TOOL_OUTPUT_NAME
from .extraction import (
    ExtractionConfig,
    ExtractionMode,
    ExtractionResult,
    ExtractionSource,
    Extractor,
    RunSubAgent,
    context_extractor,
    handle_message,
    make_tool_output_tool,
)
from .handles import handle_for, payload_hash
from .lazy_tool import GetToolResultParams, make_get_tool_result_tool
from .pipeline import ProcessedResult, ToolResultPipeline
from .policy import DEFAULT_MAX_BYTES, MIN_MAX_BYTES, OversizeReason, SizePolicy, handle_text
from .preview import PREVIEW_MAX_CHARS, make_preview
from .records import (
    PreparedOutput,
    StoredToolResult,
    ToolOutputStoreError,
    commit_metadata,
    output_stats,
    stored_output_ref,
)
from .store import OversizedDecision, StagedOutput, ToolOutputStore
from .summaries import (
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
    "GET_TOOL_RESULT_NAME",
    "MIN_MAX_BYTES",
    "NEVER_STORED_TOOLS",
    "PREVIEW_MAX_CHARS",
    "RETENTIONS",
    "SUMMARY_MAX_CHARS",
    "TOOL_OUTPUT_NAME",
    "EvaluationOutputs",
    "ExtractionConfig",
    "ExtractionMode",
    "ExtractionResult",
    "ExtractionSource",
    "Extractor",
    "GetToolResultParams",
    "OversizeReason",
    "OversizedDecision",
    "OutputFacts",
    "PreparedOutput",
    "ProcessedResult",
    "Retention",
    "RunSubAgent",
    "SizePolicy",
    "StagedOutput",
    "StoredToolResult",
    "SummaryFunction",
    "SummaryInput",
    "SummaryRegistry",
    "ToolOutputSettings",
    "ToolOutputStore",
    "ToolOutputStoreError",
    "ToolResultMetadata",
    "ToolResultPipeline",
    "context_extractor",
    "commit_metadata",
    "default_summary",
    "handle_for",
    "handle_message",
    "handle_text",
    "make_get_tool_result_tool",
    "make_tool_output_tool",
    "output_stats",
    "stored_output_ref",
    "make_preview",
    "payload_hash",
    "register_summary",
]

# ``ToolResultReference`` was a second name of ``ToolResultMetadata``; it warns for one release.
__getattr__, __dir__ = lazy_exports(
    __name__, {}, __all__, renamed={"ToolResultReference": "ToolResultMetadata"}
)
