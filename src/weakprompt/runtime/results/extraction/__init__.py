"""Extraction from tool outputs too large for the context, and the ``tool_output`` tool.

See ``specs/TOOL_RESULTS.md`` ("Extraction and tool_output"). The output
store turns its rows into :class:`ExtractionSource`; :class:`Extractor`
answers a request about one source with the ``full-chunked``,
``read-grep`` or ``truncate`` strategy (``auto`` routes between the first
two, and truncate is the fallback); :func:`make_tool_output_tool` offers
it to the model with the fixed ``tool_output`` schema. This package knows
neither the store nor the loop: sources come through a lookup and the
read-grep sub-agent through a :class:`RunSubAgent`, both passed in.
"""

from __future__ import annotations

from .chunking import chunk_spans
from .config import EXTRACTION_MODES, ExtractionConfig, ExtractionMode, StrategyName
from .extractor import EXTRACTION_KEY, ExtractionResult, Extractor
from .read_grep import RunSubAgent
from .replies import handle_message
from .source import DocumentStats, ExtractionSource, decode_text, document_stats
from .tool_output_tool import (
    TOOL_OUTPUT_SCHEMA,
    SourceLookup,
    ToolOutputParams,
    context_extractor,
    make_tool_output_tool,
)
from .truncate import truncate_text
from .wrapper import NO_RELEVANT_DATA

__all__ = [
    "EXTRACTION_KEY",
    "EXTRACTION_MODES",
    "NO_RELEVANT_DATA",
    "TOOL_OUTPUT_SCHEMA",
    "DocumentStats",
    "ExtractionConfig",
    "ExtractionMode",
    "ExtractionResult",
    "ExtractionSource",
    "Extractor",
    "RunSubAgent",
    "SourceLookup",
    "StrategyName",
    "ToolOutputParams",
    "chunk_spans",
    "context_extractor",
    "decode_text",
    "document_stats",
    "handle_message",
    "make_tool_output_tool",
    "truncate_text",
]
