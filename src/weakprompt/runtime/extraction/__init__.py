"""Extraction from tool outputs too large for the context, and the ``tool_output`` tool.

See ``specs/TOOL_RESULTS.md`` ("Extraction and tool_output"). The output
store turns its rows into :class:`ExtractionSource`; :class:`Extractor`
answers a request about one source with the ``full-chunked``,
``read-grep`` or ``truncate`` strategy (``auto`` routes between the first
two, and truncate is the fallback); :func:`make_tool_output_tool` offers
it to the model with the fixed ``tool_output`` schema.
"""

from __future__ import annotations

from .chunking import MIN_CHUNK_BYTES, Span, chunk_count, chunk_spans, snap_to_char_start
from .config import EXTRACTION_MODES, ExtractionConfig, ExtractionMode, StrategyName
from .extractor import ExtractionResult, Extractor
from .failure import StrategyFailed
from .full_chunked import ChunkPlan, plan_chunks
from .metering import MeteredAdapter
from .regex_guard import MAX_PATTERN_CHARS, PatternError, compile_pattern, search_lines
from .replies import MAX_HANDLE_CHARS, failure_reply, handle_message, not_found_reply, success_reply
from .routing import choose_strategy
from .source import (
    DocumentStats,
    ExtractionSource,
    count_lines,
    decode_text,
    document_stats,
    split_lines,
)
from .stored_view import GrepParams, ReadParams, StoredOutputView, read_grep_tools
from .tool_output_tool import (
    NEVER_STORED_TOOLS,
    TOOL_OUTPUT_NAME,
    TOOL_OUTPUT_SCHEMA,
    FixedSchemaTool,
    SourceLookup,
    ToolOutputParams,
    context_extractor,
    make_tool_output_tool,
)
from .truncate import MIN_TRUNCATE_BYTES, truncate_text
from .wrapper import NO_RELEVANT_DATA, WRAPPER_PREFIX, FinalWrapper, random_nonce

__all__ = [
    "EXTRACTION_MODES",
    "MAX_HANDLE_CHARS",
    "MAX_PATTERN_CHARS",
    "MIN_CHUNK_BYTES",
    "MIN_TRUNCATE_BYTES",
    "NEVER_STORED_TOOLS",
    "NO_RELEVANT_DATA",
    "TOOL_OUTPUT_NAME",
    "TOOL_OUTPUT_SCHEMA",
    "WRAPPER_PREFIX",
    "ChunkPlan",
    "DocumentStats",
    "ExtractionConfig",
    "ExtractionMode",
    "ExtractionResult",
    "ExtractionSource",
    "Extractor",
    "FinalWrapper",
    "FixedSchemaTool",
    "GrepParams",
    "MeteredAdapter",
    "PatternError",
    "ReadParams",
    "SourceLookup",
    "Span",
    "StoredOutputView",
    "StrategyFailed",
    "StrategyName",
    "ToolOutputParams",
    "choose_strategy",
    "chunk_count",
    "chunk_spans",
    "compile_pattern",
    "context_extractor",
    "count_lines",
    "decode_text",
    "document_stats",
    "failure_reply",
    "handle_message",
    "make_tool_output_tool",
    "not_found_reply",
    "plan_chunks",
    "random_nonce",
    "read_grep_tools",
    "search_lines",
    "snap_to_char_start",
    "split_lines",
    "success_reply",
    "truncate_text",
]
