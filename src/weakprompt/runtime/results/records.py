"""The values the tool-output store hands out: metadata, references and full results."""

from __future__ import annotations

from datetime import datetime

import attrs

from ...errors import StoreError
from ...jsontypes import JSONObject
from ...transcript.lazy import STORED_OUTPUT_KEY, StoredOutputRef
from .extraction import DocumentStats, ExtractionSource, decode_text

__all__ = [
    "StoredToolResult",
    "ToolOutputStoreError",
    "ToolResultMetadata",
    "ToolResultReference",
]


class ToolOutputStoreError(StoreError):
    """The tool-output store was asked for something it cannot do (bad id, a never-stored tool, ...)."""


@attrs.frozen(kw_only=True)
class ToolResultMetadata:
    """Everything known about one stored tool call except its payload.

    ``arguments`` is the call's arguments as the model sent them (verbatim
    JSON text). ``handle`` is the same for every call of the session that
    returned the same bytes; ``stored_hash`` is the sha256 of those bytes.
    ``oversized`` says the model was shown the handle message instead of
    the output. ``seq`` orders the calls of a session.
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
    seq: int

    @property
    def stats(self) -> DocumentStats:
        return DocumentStats(size_bytes=self.size_bytes, lines=self.lines, tokens=self.tokens)

    def reference(self) -> StoredOutputRef:
        """The slim reference kept in the transcript commit of this result."""
        return StoredOutputRef(
            tool_call_id=self.tool_call_id,
            tool_name=self.tool_name,
            handle=self.handle,
            stored_hash=self.stored_hash,
            summary=self.summary,
            preview=self.preview,
            size_bytes=self.size_bytes,
            lines=self.lines,
            tokens=self.tokens,
            is_error=self.is_error,
            oversized=self.oversized,
        )

    def commit_metadata(self) -> JSONObject:
        """``{"stored_output": {...}}``: what the transcript commit of this result records."""
        return {STORED_OUTPUT_KEY: self.reference().to_json()}


@attrs.frozen(kw_only=True)
class ToolResultReference(ToolResultMetadata):
    """What :meth:`ToolOutputStore.store_result` returns.

    ``deduplicated`` is true when the payload bytes were already stored, so
    only the small per-call row was written (or nothing at all, when the
    same call was stored before with the same output).
    """

    deduplicated: bool = False


@attrs.frozen(kw_only=True)
class StoredToolResult:
    """One stored tool call with its full payload, exactly as stored."""

    metadata: ToolResultMetadata
    data: bytes = attrs.field(repr=lambda data: f"<{len(data)} bytes>")

    @property
    def text(self) -> str:
        """The payload as text (invalid UTF-8 replaced by U+FFFD; valid text is unchanged)."""
        return decode_text(self.data)

    @property
    def tool_call_id(self) -> str:
        return self.metadata.tool_call_id

    @property
    def handle(self) -> str:
        return self.metadata.handle

    def extraction_source(self) -> ExtractionSource:
        """This output as the extraction module reads it."""
        meta = self.metadata
        return ExtractionSource(
            handle=meta.handle,
            tool_name=meta.tool_name,
            arguments=meta.arguments,
            data=self.data,
            session_id=meta.session_id,
        )
