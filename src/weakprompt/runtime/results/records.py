"""What the tool-output store hands out: the stored-output record, its payload, and views of it.

The record itself (:class:`ToolResultMetadata`) is defined once, in the
store layer that reads and writes it. Here are the payload wrapper and the two views the
pipeline needs: the size figures for the policy and the slim reference a
transcript commit keeps.
"""

from __future__ import annotations

import attrs

from ...errors import StoreError
from ...jsontypes import JSONObject
from ...store.output_payload import EncodedPayload
from ...store.output_record import OutputFacts, StoredOutputRef, ToolResultMetadata
from ...transcript.lazy import STORED_OUTPUT_KEY
from .extraction import DocumentStats, ExtractionSource
from .extraction.source import decode_text

__all__ = [
    "PreparedOutput",
    "StoredToolResult",
    "ToolOutputStoreError",
    "commit_metadata",
    "output_stats",
    "stored_output_ref",
]


class ToolOutputStoreError(StoreError):
    """The tool-output store was asked for something it cannot do (bad id, a never-stored tool, ...)."""


@attrs.frozen(kw_only=True)
class PreparedOutput(OutputFacts):
    """A tool result ready to store: checked, measured, hashed, summarised, its row not yet written.

    Everything here is known before the database is touched, so it is what
    the transcript commit of the result records (:func:`commit_metadata`);
    the row's ``seq``, and whether the call or its payload was stored
    before, are settled when it is written (``ToolOutputStore.store_prepared``
    or a turn's transaction, see ``ToolOutputStore.stage``), which makes
    the record (:meth:`row`). ``encoded`` is the payload already encoded
    for storing, when that was cheaper than looking for a stored copy first.
    """

    data: bytes = attrs.field(repr=lambda data: f"<{len(data)} bytes>")
    encoded: EncodedPayload | None = attrs.field(default=None, repr=False)

    def row(self, seq: int, *, deduplicated: bool = False) -> ToolResultMetadata:
        """The record of this output stored as call number ``seq`` of its session."""
        return self.numbered(seq, deduplicated=deduplicated)


def output_stats(meta: OutputFacts) -> DocumentStats:
    """The stored output's size figures, as the size policy and the handle message read them."""
    return DocumentStats(size_bytes=meta.size_bytes, lines=meta.lines, tokens=meta.tokens)


def stored_output_ref(meta: OutputFacts) -> StoredOutputRef:
    """The slim reference kept in the transcript commit of this result (``meta.as_ref()``)."""
    return meta.as_ref()


def commit_metadata(meta: OutputFacts) -> JSONObject:
    """``{"stored_output": {...}}``: what the transcript commit of this result records."""
    return {STORED_OUTPUT_KEY: meta.to_json()}


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
