"""Metadata keys that record how a committed tool result came to differ from the tool's output.

Shared by the ``tool_result`` hook and ``compress_tool_calls()`` so both
leave the same trail:

- ``triggered_by``: the hook or operation that handled the result;
- ``summarized_from`` / ``edited_from``: content hash of the message as it
  was before (``Transcript.get_blob(hash)`` returns it);
- ``summarizer``: ``provider:model`` that wrote the summary;
- ``summarization_error``: why a requested summary was not used;
- ``summary_usage``: tokens and calls the summarizer spent;
- ``hook_error``: the handler raised, so the result was committed unchanged.

One more key comes from the evaluation's output pipeline, not from these:
``redacted_from``, the hash of the tool's unredacted output, present only
when the evaluation was asked to keep it (``ToolOutputSettings(
keep_raw_original=True)``) and the redaction hook changed the text. It
describes the tool's output, not one version of the result, so it is not a
provenance key: an edit of the result keeps it.
"""

from __future__ import annotations

from datetime import datetime

from ..events import ToolResultSummarized
from ..jsontypes import JSONObject
from ..messages import Usage
from ..tokens import TokenCounter
from .records import CommitInfo, usage_metadata
from .summarize import SummaryAttempt

__all__ = [
    "EDITED_FROM",
    "HOOK_ERROR",
    "PROVENANCE_KEYS",
    "REDACTED_FROM",
    "SUMMARIZATION_ERROR",
    "SUMMARIZED_FROM",
    "SUMMARIZER",
    "SUMMARY_USAGE",
    "TRIGGERED_BY",
    "summary_events",
    "usage_entry",
]

TRIGGERED_BY = "triggered_by"
SUMMARIZED_FROM = "summarized_from"
EDITED_FROM = "edited_from"
SUMMARIZER = "summarizer"
SUMMARIZATION_ERROR = "summarization_error"
SUMMARY_USAGE = "summary_usage"
HOOK_ERROR = "hook_error"
REDACTED_FROM = "redacted_from"

PROVENANCE_KEYS = (
    TRIGGERED_BY,
    SUMMARIZED_FROM,
    EDITED_FROM,
    SUMMARIZER,
    SUMMARIZATION_ERROR,
    SUMMARY_USAGE,
    HOOK_ERROR,
)


def usage_entry(attempts: tuple[SummaryAttempt, ...]) -> JSONObject | None:
    """The summed usage of ``attempts`` as metadata, or None when nothing was spent."""
    total = sum((a.usage for a in attempts), Usage())
    return None if total == Usage() else usage_metadata(total)


def summary_events(
    commit: CommitInfo,
    attempts: tuple[SummaryAttempt, ...],
    *,
    original_tokens: int,
    summarized_from: str,
    triggered_by: str,
    created_at: datetime,
    token_counter: TokenCounter,
) -> list[ToolResultSummarized]:
    """One event per summary attempt, all pointing at the commit that holds the result."""
    return [
        ToolResultSummarized(
            session_id=commit.session_id,
            tool_call_id=commit.content.tool_call_id or "",
            tool_name=commit.content.name or "",
            triggered_by=triggered_by,
            summarizer=attempt.summarizer,
            original_tokens=original_tokens,
            summary_tokens=original_tokens if attempt.text is None else token_counter.count(attempt.text),
            summarized_from=summarized_from,
            commit_hash=commit.hash,
            usage=attempt.usage,
            error=attempt.error,
            created_at=created_at,
        )
        for attempt in attempts
    ]
