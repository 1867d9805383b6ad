"""The one record of a stored tool output: everything known about one stored call but its payload.

Every field is declared once, in one line of classes that each add what
is known at a later point:

- :class:`StoredOutputRef`: what a transcript commit of the result
  remembers of it (JSON in the commit's metadata) and a slim reference
  shows; every record is one (``as_ref()`` gives that view alone);
- :class:`OutputFacts`: plus the session, the call's arguments and the
  time: all that is known before the row is written;
- :class:`ToolResultMetadata`: plus ``seq``, the stored row: *the* record
  the output store reads and writes and the pipeline hands out.

It lives at the bottom of the layers, below the store, so every layer above
(the transcript, the pipeline, the inspector) shares these types.
"""

from __future__ import annotations

from datetime import datetime

import attrs

from .jsontypes import JSONObject, JSONValue
from .lazy import lazy_exports

__all__ = ["OutputFacts", "StoredOutputRef", "ToolResultMetadata"]


@attrs.frozen(kw_only=True)
class StoredOutputRef:
    """What a transcript commit remembers about its stored output (kept in commit metadata as JSON).

    ``handle`` is the same for every call of the session that returned the
    same bytes; ``stored_hash`` is the sha256 of those bytes. ``oversized``
    says the model was shown the handle message instead of the output.
    """

    tool_call_id: str
    tool_name: str
    handle: str
    stored_hash: str
    summary: str
    preview: str
    size_bytes: int
    lines: int
    tokens: int
    is_error: bool = False
    oversized: bool = False

    def as_ref(self) -> StoredOutputRef:
        """This output as a commit remembers it: the fields of :class:`StoredOutputRef` alone."""
        if type(self) is StoredOutputRef:
            return self
        return StoredOutputRef(
            **{field.name: getattr(self, field.name) for field in attrs.fields(StoredOutputRef)}
        )

    def to_json(self) -> JSONObject:
        """The commit-metadata form (the :class:`StoredOutputRef` fields, whatever the record)."""
        return {field.name: getattr(self, field.name) for field in attrs.fields(StoredOutputRef)}

    @staticmethod
    def from_json(value: JSONValue | None) -> StoredOutputRef | None:
        """The reference in ``value``, or ``None`` when it is absent or not shaped like one."""
        if not isinstance(value, dict):
            return None
        texts = [
            _text(value, k)
            for k in ("tool_call_id", "tool_name", "handle", "stored_hash", "summary", "preview")
        ]
        counts = [_count(value, k) for k in ("size_bytes", "lines", "tokens")]
        if None in texts or None in counts:
            return None
        call_id, tool_name, handle, stored_hash, summary, preview = (t or "" for t in texts)
        size_bytes, lines, tokens = (c or 0 for c in counts)
        return StoredOutputRef(
            tool_call_id=call_id,
            tool_name=tool_name,
            handle=handle,
            stored_hash=stored_hash,
            summary=summary,
            preview=preview,
            size_bytes=size_bytes,
            lines=lines,
            tokens=tokens,
            is_error=value.get("is_error") is True,
            oversized=value.get("oversized") is True,
        )


def _text(value: JSONObject, key: str) -> str | None:
    item = value.get(key)
    return item if isinstance(item, str) else None


def _count(value: JSONObject, key: str) -> int | None:
    item = value.get(key)
    return item if isinstance(item, int) and not isinstance(item, bool) and item >= 0 else None


@attrs.frozen(kw_only=True)
class OutputFacts(StoredOutputRef):
    """What is known of one tool output before its row is written: the fields every stored call has.

    ``arguments`` is the call's arguments as the model sent them (verbatim
    JSON text).
    """

    session_id: str
    arguments: str
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
