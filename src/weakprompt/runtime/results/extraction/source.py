"""What extraction works on: one stored tool output, and its size in bytes, lines and tokens.

The output store converts its rows into :class:`ExtractionSource`; everything
in this package reads only that value, never the store itself.
"""

from __future__ import annotations

import codecs

import attrs

from ....tokens import ByteEstimateCounter, TokenCounter

__all__ = [
    "DocumentStats",
    "ExtractionSource",
    "count_lines",
    "decode_text",
    "decoded_size",
    "document_stats",
    "split_lines",
]


@attrs.frozen
class ExtractionSource:
    """One stored tool output, as the extraction module sees it.

    ``arguments`` is the call's arguments exactly as the model sent them (a
    JSON string), shown to the extraction model so it knows what produced
    the data. ``data`` is the raw output; it need not be valid UTF-8.
    """

    handle: str
    tool_name: str
    arguments: str
    data: bytes = attrs.field(repr=lambda data: f"<{len(data)} bytes>")
    session_id: str | None = None


@attrs.frozen
class DocumentStats:
    """Size figures used for routing, prompts and the handle message."""

    size_bytes: int
    lines: int
    tokens: int

    @property
    def avg_line_bytes(self) -> float:
        """Mean bytes per line (0.0 for an empty output)."""
        return self.size_bytes / self.lines if self.lines else 0.0


def decode_text(data: bytes) -> str:
    """The output as text for a model: invalid UTF-8 becomes U+FFFD, never an error."""
    return data.decode("utf-8", errors="replace")


def count_lines(data: bytes) -> int:
    """Lines as a reader counts them: a last line without a newline still counts."""
    if not data:
        return 0
    return data.count(b"\n") + (0 if data.endswith(b"\n") else 1)


def split_lines(text: str) -> list[str]:
    """The lines of ``text`` without their terminators (``\\n``, or ``\\r\\n``).

    Agrees with :func:`count_lines`: a final newline does not start an extra line.
    """
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


_PIECE = 1 << 20


def decoded_size(data: bytes) -> int:
    """The UTF-8 size of ``decode_text(data)``, decoding a piece at a time (never the whole at once)."""
    if data.isascii():
        return len(data)
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    view = memoryview(data)
    total = 0
    for start in range(0, len(view), _PIECE):
        text = decoder.decode(view[start : start + _PIECE])
        total += len(text) if text.isascii() else len(text.encode("utf-8"))
    return total + len(decoder.decode(b"", final=True).encode("utf-8"))


def document_stats(data: bytes, counter: TokenCounter, *, text: str | None = None) -> DocumentStats:
    """Bytes, lines and tokens of ``data``; pass ``text`` when it is already decoded.

    With the byte estimate (the default counter) and no ``text``, the
    tokens come from the size of the decoded text, measured a piece at a
    time: a large output is never decoded whole just to be counted.
    """
    if text is None and isinstance(counter, ByteEstimateCounter):
        tokens = counter.count_size(decoded_size(data))
    else:
        tokens = counter.count(decode_text(data) if text is None else text)
    return DocumentStats(size_bytes=len(data), lines=count_lines(data), tokens=tokens)
