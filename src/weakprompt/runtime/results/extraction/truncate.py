"""The truncate strategy: the start and the end of the output, and a plain warning about the middle.

It needs no model, so it always works; that is why it is the fallback when
another strategy fails. The result never exceeds its byte cap, warning
lines included, and never cuts a UTF-8 character in two.
"""

from __future__ import annotations

from .chunking import snap_to_char_start
from .source import decode_text

__all__ = ["MIN_TRUNCATE_BYTES", "truncate_text"]

MIN_TRUNCATE_BYTES = 512
"""Smallest cap that always leaves room for the warning and the marker line."""

_MIN_SHOWN = 64
"""Bytes of output kept for the head and tail before the preface gets any room."""


def _warning(total: int, cut: int, cut_lines: int) -> str:
    return (
        f"WARNING: this is not the whole output. {cut} of its {total} bytes ({cut_lines} line breaks) "
        "were cut from the middle; only the start and the end are shown."
    )


def _marker(cut: int, cut_lines: int) -> str:
    return f"[... {cut} bytes and {cut_lines} line breaks cut here ...]"


def _head(encoded: bytes, budget: int) -> bytes:
    """At most ``budget`` bytes from the start, ending at a line end when one is near."""
    cut = snap_to_char_start(encoded, budget)
    piece = encoded[:cut]
    newline = piece.rfind(b"\n")
    if newline >= len(piece) // 2:
        return piece[: newline + 1]
    return piece


def _tail(encoded: bytes, budget: int) -> bytes:
    """At most ``budget`` bytes from the end, starting after a line end when one is near."""
    start = len(encoded) - budget
    while start < len(encoded) and encoded[start] & 0xC0 == 0x80:  # forward to a character start
        start += 1
    piece = encoded[start:]
    newline = piece.find(b"\n")
    if 0 <= newline < len(piece) // 2:
        return piece[newline + 1 :]
    return piece


def _fit(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` UTF-8 bytes (ending in a newline), or nothing."""
    encoded = text.encode("utf-8")
    if len(encoded) <= limit:
        return text
    if limit < 8:
        return ""
    return encoded[: snap_to_char_start(encoded, limit - 5)].decode("utf-8") + " ...\n"


def truncate_text(data: bytes, max_bytes: int, *, preface: str = "") -> str:
    """The output cut to fit ``max_bytes`` (UTF-8), ``preface`` and warning included.

    When the whole output fits after ``preface``, it is returned whole. The
    figures in the warning and the marker line count the bytes and newlines
    of the text as decoded (invalid UTF-8 shown as U+FFFD).
    """
    if max_bytes < MIN_TRUNCATE_BYTES:
        raise ValueError(f"truncate: max_bytes must be >= {MIN_TRUNCATE_BYTES}, got {max_bytes}")
    encoded = decode_text(data).encode("utf-8")
    total = len(encoded)
    widest = 10 ** len(str(total)) - 1
    framing = len(_warning(total, widest, widest)) + len(_marker(widest, widest)) + 3  # + newlines
    lead = _fit(f"{preface}\n", max_bytes - framing - _MIN_SHOWN) if preface else ""
    room = max_bytes - len(lead.encode("utf-8"))
    if total <= room:
        return lead + encoded.decode("utf-8")
    budget = max(0, room - framing)
    head = _head(encoded, budget // 2)
    tail = _tail(encoded, budget - budget // 2)
    middle = encoded[len(head) : total - len(tail)]
    cut, cut_lines = len(middle), middle.count(b"\n")
    head_text = head.decode("utf-8")
    if head_text and not head_text.endswith("\n"):
        head_text += "\n"
    warning, marker = _warning(total, cut, cut_lines), _marker(cut, cut_lines)
    return f"{lead}{warning}\n{head_text}{marker}\n{tail.decode('utf-8')}"
