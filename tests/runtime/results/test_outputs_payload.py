"""Stored payloads: compressed a piece at a time or kept raw, read back byte-exact, hash as defined.

The sizes here are small; the pieces are shrunk (monkeypatched) so that
small payloads cross every piece boundary. ``benchmarks/output_store_bench.py``
measures 100 MB payloads (time and peak memory) in a subprocess.
"""

from __future__ import annotations

import hashlib
import os
import random
import zlib
from collections.abc import Generator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy import select

from weakprompt.errors import StoreError
from weakprompt.runtime.results import ToolOutputStore, payload_hash
from weakprompt.runtime.results.extraction import source
from weakprompt.runtime.results.extraction.source import decode_text, decoded_size, document_stats
from weakprompt.store import Store, output_payload, tables
from weakprompt.store.output_payload import RAW_ENCODING, ZLIB_ENCODING, encode_payload
from weakprompt.tokens import ByteEstimateCounter

LOG = b"".join(
    b"2026-01-01T00:00:%02d INFO worker-%d processed batch %06d ok\n" % (i % 60, i % 7, i) for i in range(400)
)


def _stored_row(outputs: ToolOutputStore, blob_hash: str) -> dict[str, object]:
    blobs = tables.tool_output_blobs
    with outputs.store.read() as conn:
        row = conn.execute(select(blobs).where(blobs.c.hash == blob_hash)).mappings().one()
    return dict(row)


@pytest.fixture
def small_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(output_payload, "_PIECE", 1024)
    monkeypatch.setattr(output_payload, "_STREAMED", 256)
    monkeypatch.setattr(source, "_PIECE", 7)


@pytest.fixture
def file_outputs(tmp_path: Path) -> Generator[ToolOutputStore]:
    with Store.open(tmp_path / "outputs.db") as store:
        yield ToolOutputStore(store, "s")


# -- encoding ---------------------------------------------------------------------------------------


def test_text_is_compressed_in_pieces_that_inflate_to_the_payload(small_pieces: None) -> None:
    encoded = encode_payload(LOG)
    assert encoded.encoding == ZLIB_ENCODING and len(LOG) > 10 * output_payload._PIECE
    assert encoded.stored_bytes == len(encoded.data) < len(LOG) / 5
    assert zlib.decompress(encoded.data) == LOG


def test_random_bytes_are_kept_raw_without_a_copy(small_pieces: None) -> None:
    data = random.Random(1).randbytes(5000)
    encoded = encode_payload(data)
    assert encoded.encoding == RAW_ENCODING and encoded.data is data


def test_compression_is_given_up_once_it_stops_paying(small_pieces: None) -> None:
    """Text first, then noise: the running ratio goes over the bar part way through."""
    data = LOG[:2000] + random.Random(2).randbytes(20000)
    assert encode_payload(data).encoding == RAW_ENCODING
    assert encode_payload(LOG + random.Random(3).randbytes(500)).encoding == ZLIB_ENCODING


@pytest.mark.parametrize("data", [b"", b"x", b"ok\n", b"payload", b"a" * 63])
def test_tiny_payloads_are_kept_raw(data: bytes) -> None:
    """Even a repetitive one: under 64 bytes compressing is not even tried."""
    encoded = encode_payload(data)
    assert encoded.encoding == RAW_ENCODING and encoded.data is data and encoded.size_bytes == len(data)


def test_a_repetitive_payload_just_past_the_tiny_size_is_compressed() -> None:
    data = b"a" * 64
    encoded = encode_payload(data)
    assert encoded.encoding == ZLIB_ENCODING and zlib.decompress(encoded.data) == data


@given(st.binary(max_size=3000))
def test_the_hash_is_sha256_of_the_bytes(data: bytes) -> None:
    assert payload_hash(data) == hashlib.sha256(data).hexdigest()


# -- round trips --------------------------------------------------------------------------------------


@given(
    st.one_of(
        st.binary(max_size=2000),
        st.lists(
            st.sampled_from([b"line ok\n", b"\xff\xfe", b"\xe2\x82", b"\xac", b"x" * 50]), max_size=80
        ).map(b"".join),
    )
)
def test_any_payload_comes_back_byte_exact(data: bytes) -> None:
    with Store.open("sqlite://") as store:
        outputs = ToolOutputStore(store, "s")
        ref = outputs.store_result("c1", "t", "{}", data)
        found = outputs.get_result("c1")
    assert found is not None and found.data == data
    assert ref.stored_hash == hashlib.sha256(data).hexdigest()


@pytest.mark.parametrize("kind", ["random", "text", "str"])
def test_a_big_payload_round_trips_through_a_file_byte_exact(
    file_outputs: ToolOutputStore, kind: str
) -> None:
    """Several MB (over the size read through blob I/O), each shape: raw, zlib, and text given as str."""
    data = os.urandom(3_000_000) if kind == "random" else LOG * 150
    result: str | bytes = data.decode() if kind == "str" else data
    ref = file_outputs.store_result("c1", "t", "{}", result)
    assert ref.stored_hash == hashlib.sha256(data).hexdigest() and ref.size_bytes == len(data)
    row = _stored_row(file_outputs, ref.stored_hash)
    assert row["encoding"] == (RAW_ENCODING if kind == "random" else ZLIB_ENCODING)
    assert row["stored_bytes"] == len(row["data"])  # type: ignore[arg-type]
    found = file_outputs.get_result("c1")
    assert found is not None and found.data == data
    by_handle = file_outputs.get_by_handle(ref.handle)
    assert by_handle is not None and by_handle.data == data


def test_damage_to_a_big_payload_is_caught(file_outputs: ToolOutputStore) -> None:
    data = os.urandom(200_000)
    ref = file_outputs.store_result("c1", "t", "{}", data)
    blobs = tables.tool_output_blobs
    with file_outputs.store.write() as conn:
        damaged = data[:1000] + bytes([data[1000] ^ 1]) + data[1001:]
        conn.execute(blobs.update().where(blobs.c.hash == ref.stored_hash).values(data=damaged))
    with pytest.raises(StoreError, match="does not match its content hash"):
        file_outputs.get_result("c1")


# -- counting without decoding the whole ---------------------------------------------------------------


@pytest.mark.usefixtures("small_pieces")
@given(
    st.lists(
        st.sampled_from(
            [b"abc", b"\n", b"\xc3\xa9", b"\xe2\x82\xac", b"\xf0\x9f\x98\x80", b"\xff", b"\xc3", b"\xe2\x82"]
        ),
        max_size=60,
    ).map(b"".join)
)
def test_the_decoded_size_is_measured_piece_by_piece_as_one_decode_would(data: bytes) -> None:
    assert decoded_size(data) == len(decode_text(data).encode("utf-8"))
    counter = ByteEstimateCounter()
    assert document_stats(data, counter).tokens == counter.count(decode_text(data))


def test_a_token_counter_of_the_model_gets_the_decoded_text() -> None:
    seen: list[str] = []

    class Exact:
        exact = True

        def count(self, text: str) -> int:
            seen.append(text)
            return 42

    assert document_stats(b"caf\xc3\xa9 \xff", Exact()).tokens == 42
    assert seen == ["café \ufffd"]


def test_a_payload_missing_from_the_store_is_reported() -> None:
    with Store.open("sqlite://") as store, store.read() as conn:
        with pytest.raises(StoreError, match="is missing its payload"):
            output_payload.fetch_blob(conn, "0" * 64)
