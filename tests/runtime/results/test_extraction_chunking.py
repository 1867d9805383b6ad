"""Chunking: coverage, overlap, balance and UTF-8 safety, as examples and as properties."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from weakprompt.runtime.results.extraction import chunk_spans
from weakprompt.runtime.results.extraction.chunking import MIN_CHUNK_BYTES, chunk_count, snap_to_char_start


def test_data_that_fits_is_one_span() -> None:
    assert chunk_spans(b"x" * 100, 100) == ((0, 100),)
    assert chunk_spans(b"", 100) == ((0, 0),)
    assert chunk_count(100, 100, 0.1) == 1


def test_spans_are_equal_sized_and_overlap_by_ten_percent() -> None:
    spans = chunk_spans(b"a" * 1000, 300, 0.1)
    sizes = {end - start for start, end in spans}
    assert len(sizes) == 1
    assert len(spans) == chunk_count(1000, 300, 0.1) == 4
    size = sizes.pop()
    assert size <= 300
    assert spans[0][0] == 0 and spans[-1][1] == 1000
    for (_, end), (start, _) in itertools.pairwise(spans):
        assert end - start >= math.floor(size * 0.1)


def test_balancing_avoids_a_tiny_last_chunk() -> None:
    # With the max size, 4 chunks would leave a sliver; balanced chunks are all alike.
    spans = chunk_spans(b"a" * 1010, 300, 0.0)
    assert [end - start for start, end in spans] == [253, 253, 253, 253]  # 4 x 253 >= 1010
    assert spans[-1] == (1010 - 253, 1010)


def test_no_overlap_tiles_exactly_when_sizes_divide() -> None:
    assert chunk_spans(b"a" * 400, 100, 0.0) == ((0, 100), (100, 200), (200, 300), (300, 400))


def test_edges_move_back_onto_character_starts() -> None:
    data = "é".encode() * 100  # two bytes per character
    spans = chunk_spans(data, 51, 0.1)
    for start, end in spans:
        data[start:end].decode("utf-8")  # never raises


def test_snap_leaves_invalid_runs_alone() -> None:
    data = b"a" + b"\x80" * 10
    assert snap_to_char_start(data, 8) == 8  # no character start within 3 bytes
    assert snap_to_char_start(data, 3) == 0  # the 'a' is 3 bytes back
    assert snap_to_char_start("aé".encode(), 2) == 1
    assert snap_to_char_start(b"abc", 0) == 0
    assert snap_to_char_start(b"abc", 3) == 3


@pytest.mark.parametrize(
    ("size", "max_bytes", "overlap", "message"),
    [
        (-1, 100, 0.1, "data size"),
        (10, MIN_CHUNK_BYTES - 1, 0.1, "max_chunk_bytes"),
        (10, 100, 0.5, "overlap"),
        (10, 100, -0.1, "overlap"),
    ],
)
def test_bad_arguments_name_the_problem(size: int, max_bytes: int, overlap: float, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        chunk_count(size, max_bytes, overlap)


overlaps = st.sampled_from([0.0, 0.05, 0.1, 0.2, 0.33, 0.49])
max_sizes = st.integers(min_value=MIN_CHUNK_BYTES, max_value=400)


@given(data=st.binary(max_size=3000), max_bytes=max_sizes, overlap=overlaps)
@example(data=b"\x00" * 7 + b"\x80\x80" + b"\x00" * 14, max_bytes=16, overlap=0.49)  # a start moved back 2
@example(data="é".encode() * 40, max_bytes=16, overlap=0.0)
@example(data=("a" + "\U0001f600" * 30).encode(), max_bytes=16, overlap=0.0)
def test_spans_cover_every_byte_in_order_within_the_limit(
    data: bytes, max_bytes: int, overlap: float
) -> None:
    spans = chunk_spans(data, max_bytes, overlap)
    assert spans[0][0] == 0
    assert spans[-1][1] == len(data)
    assert len(spans) == chunk_count(len(data), max_bytes, overlap, snapping=not data.isascii())
    for start, end in spans:
        assert 0 <= start <= end <= len(data)
        assert end - start <= max_bytes
    for (start_a, end_a), (start_b, end_b) in itertools.pairwise(spans):
        assert start_a < start_b <= end_a < end_b  # progress, no gap


@given(size=st.integers(min_value=0, max_value=20_000), max_bytes=max_sizes, overlap=overlaps)
def test_ascii_spans_have_one_size_and_the_configured_overlap(
    size: int, max_bytes: int, overlap: float
) -> None:
    spans = chunk_spans(b"x" * size, max_bytes, overlap)
    sizes = [end - start for start, end in spans]
    assert max(sizes) - min(sizes) <= 1
    if len(spans) > 1:
        chunk = sizes[0]
        for (_, end), (start, _) in itertools.pairwise(spans):
            assert end - start >= math.floor(chunk * overlap)
        # as few chunks as possible: one fewer, even at the max size, would not cover the data
        step = max_bytes - math.floor(max_bytes * overlap)
        assert max_bytes + (len(spans) - 2) * step < size


@given(text=st.text(max_size=1500), max_bytes=max_sizes, overlap=overlaps)
def test_utf8_text_is_never_split_inside_a_character(text: str, max_bytes: int, overlap: float) -> None:
    data = text.encode("utf-8")
    spans = chunk_spans(data, max_bytes, overlap)
    pieces = [data[start:end].decode("utf-8") for start, end in spans]  # strict decode
    sizes = [end - start for start, end in spans]
    assert max(sizes) - min(sizes) <= 3 + 3  # equal before snapping; each edge moves back <= 3 bytes
    assert pieces[0].startswith(pieces[0][:1])
    joined_from_starts = "".join(
        piece if index == 0 else data[spans[index - 1][1] : spans[index][1]].decode("utf-8")
        for index, piece in enumerate(pieces)
    )
    assert joined_from_starts == text  # consecutive spans chain without gaps
