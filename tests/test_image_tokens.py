"""Image sizes read from headers, and each provider's documented token rule (weakprompt.tokens)."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from weakprompt import Store
from weakprompt.parts import DocumentPart, ImagePart
from weakprompt.tokens import anthropic_image_tokens, image_size, openai_image_tokens
from weakprompt.transcript import Transcript


def png(width: int, height: int) -> bytes:
    """A real (tiny, grey) PNG file of that size."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    rows = b"".join(b"\x00" + b"\x80" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def jpeg(width: int, height: int) -> bytes:
    app0 = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    restart = b"\xff\x01"
    frame = b"\xff\xc0" + struct.pack(">HBHHB", 11, 8, height, width, 1) + b"\x01\x11\x00"
    return b"\xff\xd8" + app0 + restart + frame + b"\xff\xd9"


def gif(width: int, height: int) -> bytes:
    return b"GIF89a" + struct.pack("<HH", width, height) + b"\x00\x00\x00;"


def webp(chunk: bytes) -> bytes:
    return b"RIFF" + struct.pack("<I", 4 + len(chunk)) + b"WEBP" + chunk


def webp_vp8x(width: int, height: int) -> bytes:
    body = b"\x00\x00\x00\x00" + (width - 1).to_bytes(3, "little") + (height - 1).to_bytes(3, "little")
    return webp(b"VP8X" + struct.pack("<I", len(body)) + body)


def webp_vp8l(width: int, height: int) -> bytes:
    bits = (width - 1) | ((height - 1) << 14)
    body = b"\x2f" + bits.to_bytes(4, "little") + b"\x00" * 4
    return webp(b"VP8L" + struct.pack("<I", len(body)) + body)


def webp_vp8(width: int, height: int) -> bytes:
    body = b"\x00\x00\x00\x9d\x01\x2a" + struct.pack("<HH", width, height) + b"\x00" * 4
    return webp(b"VP8 " + struct.pack("<I", len(body)) + body)


@given(st.integers(1, 5000), st.integers(1, 5000))
def test_sizes_are_read_from_every_supported_header(width: int, height: int) -> None:
    for encode in (jpeg, gif, webp_vp8x):
        assert image_size(encode(width, height)) == (width, height)
    if width <= 16384 and height <= 16384:
        assert image_size(webp_vp8l(width, height)) == (width, height)
    if width <= 0x3FFF and height <= 0x3FFF:
        assert image_size(webp_vp8(width, height)) == (width, height)


def test_a_real_png_and_what_is_no_image() -> None:
    assert image_size(png(3, 2)) == (3, 2)
    for data in (
        b"",
        b"%PDF-1.4",
        b"\xff\xd8\x00",
        b"\xff\xd8",
        b"RIFF\x00\x00\x00\x00WEBPVP8Z" + b"\x00" * 20,
        gif(0, 4),
    ):
        assert image_size(data) is None
    truncated = b"\xff\xd8\xff\xe0\x00\x10"  # a segment running past the end, no frame header
    assert image_size(truncated) is None
    assert image_size(webp_vp8x(5, 5)[:28]) is None and image_size(webp_vp8(5, 5)[:28]) is None
    assert image_size(png(2, 2)[:20]) is None and image_size(b"\xff\xd8\x00\x00\x00\x00") is None


@pytest.mark.parametrize(
    ("size", "detail", "tokens"),
    [
        ((1024, 1024), "auto", 765),
        ((2048, 4096), "high", 1105),
        ((4096, 8192), "auto", 1105),
        ((512, 512), "auto", 255),
        ((9999, 9999), "low", 85),
    ],
)
def test_openai_tiles_85_plus_170_per_512_pixel_tile(size: tuple[int, int], detail: str, tokens: int) -> None:
    assert openai_image_tokens(*size, detail=detail) == tokens


@pytest.mark.parametrize(("size", "tokens"), [((1000, 1000), 1334), ((200, 200), 54), ((3136, 3136), 3279)])
def test_anthropic_counts_width_times_height_over_750(size: tuple[int, int], tokens: int) -> None:
    assert anthropic_image_tokens(*size) == tokens


def test_the_transcript_counts_an_image_of_known_size_and_a_text_document(tmp_path: Path) -> None:
    transcript = Transcript(Store.open(tmp_path / "t.db"), "s")
    plain = transcript.user("look").token_count
    image = ImagePart(media_type="image/png", data=png(1000, 1000))
    with_image = transcript.user(["look", image]).token_count
    assert with_image - plain == max(openai_image_tokens(1000, 1000), anthropic_image_tokens(1000, 1000))
    unknown = ImagePart(media_type="image/png", url="https://example.test/a.png")
    assert transcript.user(["look", unknown]).token_count == plain  # the provider's usage counts it
    notes = DocumentPart(media_type="text/plain", data=b"one two three four five six seven eight")
    pdf = DocumentPart(media_type="application/pdf", data=b"%PDF-1.4")
    odd = ImagePart(media_type="image/x-icon", data=b"\x00\x00\x01\x00")
    assert transcript.user(["look", notes]).token_count > plain
    assert transcript.user(["look", pdf, odd]).token_count == plain
