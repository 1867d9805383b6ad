"""Events about a stored tool output read or condensed later: extraction answers and summaries.

Apart from the events every run publishes (``_types``) because only the
tool-output pipeline and the transcript's summaries publish them: the
package resolves them on first access.
"""

from __future__ import annotations

from datetime import datetime

import attrs

from ..messages import Usage
from ._types import new_event_id

__all__ = ["ToolOutputExtracted", "ToolResultSummarized"]


@attrs.frozen(kw_only=True)
class ToolOutputExtracted:
    """The ``tool_output`` tool answered a request about one stored output.

    ``strategy`` is the strategy whose text reached the model (``truncate``
    after a fallback); ``fallback_reason`` says why the chosen strategy
    failed, or is ``None`` when it worked. ``usage`` adds up the extraction's
    own model calls, so subscribers can count what extraction costs.
    """

    session_id: str | None
    handle: str
    tool_name: str
    strategy: str
    fallback_reason: str | None
    usage: Usage
    created_at: datetime
    event_id: str = attrs.field(factory=new_event_id)


@attrs.frozen(kw_only=True)
class ToolResultSummarized:
    """A tool result was condensed by a summarizer model before (or after) it was committed.

    ``summarized_from`` is the content hash of the stored original message,
    so the full text stays retrievable. ``error`` is set when the summarizer
    failed: the original was then kept and ``summary_tokens`` equals
    ``original_tokens``. ``usage`` is the summarizer's own model calls.
    ``triggered_by`` names the hook or operation that asked for the summary;
    ``commit_hash`` is the commit that now holds the result.
    """

    session_id: str | None
    tool_call_id: str
    tool_name: str
    triggered_by: str
    summarizer: str
    original_tokens: int
    summary_tokens: int
    summarized_from: str
    commit_hash: str
    usage: Usage
    error: str | None
    created_at: datetime
    event_id: str = attrs.field(factory=new_event_id)
