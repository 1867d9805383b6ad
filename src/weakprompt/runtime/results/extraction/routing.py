"""Which strategy ``auto`` picks for an output."""

from __future__ import annotations

from .config import ExtractionConfig, StrategyName
from .source import DocumentStats

__all__ = ["choose_strategy"]


def choose_strategy(stats: DocumentStats, chunks: int | None, config: ExtractionConfig) -> StrategyName:
    """``full-chunked`` or ``read-grep`` for ``auto``.

    ``chunks`` is how many chunks full-chunked would need (``None`` when the
    model leaves no room for any). Outputs that fit in
    ``config.max_chunks_for_full`` chunks are read whole. So are outputs with
    long lines (JSON on one line, minified data): line-oriented searching
    has nothing to hold on to there. Everything else is searched with
    read-grep, which only ever looks at the lines it needs.
    """
    if chunks is not None and chunks <= config.max_chunks_for_full:
        return "full-chunked"
    if stats.avg_line_bytes > config.long_line_bytes:
        return "full-chunked"
    return "read-grep"
