"""The one record of a stored tool output: everything known about one stored call but its payload.

The output store's SQL reads and writes it, the tool-result pipeline hands
it out, and the transcript commit of a result keeps a slim view of it
(:class:`~weakprompt.transcript.lazy.StoredOutputRef`). It lives here, in
the lowest layer that handles it, so every layer above shares one type.
"""

from __future__ import annotations

from datetime import datetime

import attrs

from ..lazy import lazy_exports

__all__ = ["OutputFacts", "ToolResultMetadata"]


@attrs.frozen(kw_only=True)
class OutputFacts:
    """What is known of one tool output before its row is written: the fields every stored call has.

    ``arguments`` is the call's arguments as the model sent them (verbatim
    JSON text). ``handle`` is the same for every call of the session that
    returned the same bytes; ``stored_hash`` is the sha256 of those bytes.
    ``oversized`` says the model was shown the handle message instead of
    the output.
    """

    session_id: str
    tool_call_id: str
    tool_name: str
    arguments: str
    handle: str
    stored_hash: str
    size_bytes: int
    lines: int
    tokens: int
    is_error: bool
    oversized: bool
    summary: str
    preview: str
    created_at: datetime

    def numbered(self, seq: int, *, deduplicated: bool = False) -> ToolResultMetadata:
        """The record of this output stored as call number ``seq`` of its session."""
        facts = {field.name: getattr(self, field.name) for field in attrs.fields(OutputFacts)}
        return ToolResultMetadata(seq=seq, deduplicated=deduplicated, **facts)


@attrs.frozen(kw_only=True)
class ToolResultMetadata(OutputFacts):
    """One stored tool call, without its payload.

    ``seq`` orders the calls of a session. ``deduplicated`` is only ever
    true on what ``store_result`` returns: the payload bytes were already
    stored, so only the small per-call row was written (or nothing at all,
    when the same call was stored before with the same output).
    """

    seq: int
    deduplicated: bool = False


# ``ToolResultReference`` was a second name of this record; it warns for one release.
__getattr__, __dir__ = lazy_exports(
    __name__, {}, __all__, renamed={"ToolResultReference": "ToolResultMetadata"}
)
