"""Cutting an output into overlapping, equally sized pieces for the map step.

Everything here is pure arithmetic over byte offsets, so it can be checked
exhaustively by property tests: the pieces cover every byte, neighbours
overlap by the configured share, all pieces have the same size, and no
piece starts or ends inside a UTF-8 character.
"""

from __future__ import annotations

import math

__all__ = ["MIN_CHUNK_BYTES", "Span", "chunk_count", "chunk_spans", "snap_to_char_start"]

Span = tuple[int, int]
"""``(start, end)``: the bytes ``data[start:end]``."""

MIN_CHUNK_BYTES = 16
"""Smallest chunk size accepted: UTF-8 snapping moves an edge by up to 3 bytes."""

_MAX_SNAP = 3


def _check(size: int, max_chunk_bytes: int, overlap: float) -> None:
    if size < 0:
        raise ValueError(f"chunking: the data size must be >= 0, got {size}")
    if max_chunk_bytes < MIN_CHUNK_BYTES:
        raise ValueError(f"chunking: max_chunk_bytes must be >= {MIN_CHUNK_BYTES}, got {max_chunk_bytes}")
    if not 0.0 <= overlap < 0.5:
        raise ValueError(f"chunking: overlap must be in [0, 0.5), got {overlap}")


def _overlap_bytes(chunk: int, overlap: float) -> int:
    return math.floor(chunk * overlap)


def _step(chunk: int, overlap: float) -> int:
    """How far the start moves from one chunk to the next at this chunk size."""
    return chunk - _overlap_bytes(chunk, overlap)


def chunk_count(size: int, max_chunk_bytes: int, overlap: float, *, snapping: bool = False) -> int:
    """How many chunks of at most ``max_chunk_bytes`` cover ``size`` bytes with ``overlap``.

    This is the estimate made with the largest allowed chunk; the chunks
    themselves are then made smaller and equal (see :func:`chunk_spans`).
    ``snapping``: the edges may move onto UTF-8 character starts (data that
    is not all ASCII), so each chunk keeps 3 bytes of room for that.
    """
    _check(size, max_chunk_bytes, overlap)
    if size <= max_chunk_bytes:
        return 1
    budget = _budget(max_chunk_bytes, snapping)
    return 1 + math.ceil((size - budget) / _step(budget, overlap))


def _budget(max_chunk_bytes: int, snapping: bool) -> int:
    """The chunk size to plan with: a start moved back onto a character start makes a chunk longer."""
    return max_chunk_bytes - _MAX_SNAP if snapping else max_chunk_bytes


def _balanced_size(size: int, count: int, max_chunk_bytes: int, overlap: float) -> int:
    """The smallest chunk size with which ``count`` chunks still cover ``size`` bytes."""
    low, high = 1, max_chunk_bytes
    while low < high:
        middle = (low + high) // 2
        if middle + (count - 1) * _step(middle, overlap) >= size:
            high = middle
        else:
            low = middle + 1
    return low


def snap_to_char_start(data: bytes, position: int) -> int:
    """``position``, moved back (at most 3 bytes) onto the first byte of a UTF-8 character.

    Continuation bytes (``0b10xxxxxx``) never start a character. Where no
    character start is that close (the data is not UTF-8 there), the
    position stays: there is no character to split.
    """
    if position <= 0 or position >= len(data):
        return position
    for candidate in range(position, max(0, position - _MAX_SNAP) - 1, -1):
        if candidate == 0 or data[candidate] & 0xC0 != 0x80:
            return candidate
    return position


def chunk_spans(data: bytes, max_chunk_bytes: int, overlap: float = 0.1) -> tuple[Span, ...]:
    """Overlapping spans covering ``data``, each at most ``max_chunk_bytes`` long.

    The count comes from :func:`chunk_count`; then every chunk gets the
    same size (the smallest that still covers the data with at least
    ``floor(size * overlap)`` bytes shared by neighbours), so the last chunk
    is never a small leftover. Starts are spread evenly. Each edge is then
    moved back onto a UTF-8 character start, by at most 3 bytes: a start
    moved back lengthens its chunk, so data that is not all ASCII is planned
    with chunks 3 bytes under the limit. Moving is monotonic (an earlier
    position never lands after a later one), so neighbours still overlap or
    touch. Empty data gives one empty span.
    """
    size = len(data)
    snapping = not data.isascii()
    count = chunk_count(size, max_chunk_bytes, overlap, snapping=snapping)
    if count == 1:
        return ((0, size),)
    chunk = _balanced_size(size, count, _budget(max_chunk_bytes, snapping), overlap)
    spans: list[Span] = []
    for index in range(count):
        start = index * (size - chunk) // (count - 1)
        end = size if index == count - 1 else start + chunk
        spans.append((snap_to_char_start(data, start), snap_to_char_start(data, end)))
    return tuple(spans)
