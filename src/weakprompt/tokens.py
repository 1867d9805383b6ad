"""Token counting through a pluggable counter.

Exact counts need the model's own tokenizer, which only some adapters have;
everything else uses an estimate that is stable and cheap. Images are
counted by each provider's documented rule from their pixel size
(:func:`openai_image_tokens`, :func:`anthropic_image_tokens`, :func:`image_size`).
"""

from __future__ import annotations

import math
import struct
from typing import Protocol, runtime_checkable

__all__ = [
    "DEFAULT_TOKEN_COUNTER",
    "ByteEstimateCounter",
    "TokenCounter",
    "anthropic_image_tokens",
    "image_size",
    "openai_image_tokens",
]


@runtime_checkable
class TokenCounter(Protocol):
    """Counts tokens in a piece of text."""

    @property
    def exact(self) -> bool:
        """True when counts come from the real tokenizer of the target model."""
        ...

    def count(self, text: str) -> int: ...


class ByteEstimateCounter:
    """About four UTF-8 bytes per token, rounded up; never zero for non-empty text."""

    def __init__(self, bytes_per_token: float = 4.0) -> None:
        self._ratio = bytes_per_token

    @property
    def exact(self) -> bool:
        return False

    def count(self, text: str) -> int:
        # surrogatepass: a lone surrogate counts, never raises
        return self.count_size(len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass")))

    def count_size(self, utf8_bytes: int) -> int:
        """The estimate for a text of ``utf8_bytes`` UTF-8 bytes: the text itself is not needed."""
        if utf8_bytes <= 0:
            return 0
        return max(1, math.ceil(utf8_bytes / self._ratio))


DEFAULT_TOKEN_COUNTER: TokenCounter = ByteEstimateCounter()


# -- images -------------------------------------------------------------------------------------
#
# What an image costs, by each provider's documented rule, from its pixel size read from the
# image's own header (PNG, JPEG, GIF, WebP: a few bytes, no imaging library). When the size
# cannot be read (an image given as a URL, another format) the local estimate is 0 and the usage
# the provider reports is what counts.
#
# - OpenAI (detail high or auto): scaled to fit 2048x2048, then its short side to 768; 85 tokens
#   plus 170 per 512-pixel tile. detail="low" is a flat 85.
# - Anthropic: scaled so the long side is at most 1568 pixels; about width * height / 750.


def _png(data: bytes) -> tuple[int, int] | None:
    if data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR" and len(data) >= 24:
        width, height = struct.unpack(">II", data[16:24])
        return int(width), int(height)
    return None


def _gif(data: bytes) -> tuple[int, int] | None:
    if data[:6] in (b"GIF87a", b"GIF89a") and len(data) >= 10:
        width, height = struct.unpack("<HH", data[6:10])
        return int(width), int(height)
    return None


def _webp(data: bytes) -> tuple[int, int] | None:
    if data[:4] != b"RIFF" or data[8:12] != b"WEBP" or len(data) < 25:
        return None
    chunk = data[12:16]
    if chunk == b"VP8X" and len(data) >= 30:
        width = int.from_bytes(data[24:27], "little") + 1
        height = int.from_bytes(data[27:30], "little") + 1
        return width, height
    if chunk == b"VP8L" and data[20] == 0x2F:
        bits = int.from_bytes(data[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8 " and data[23:26] == b"\x9d\x01\x2a" and len(data) >= 30:
        width, height = struct.unpack("<HH", data[26:30])
        return int(width) & 0x3FFF, int(height) & 0x3FFF
    return None


_SOF = frozenset({0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF})


def _jpeg(data: bytes) -> tuple[int, int] | None:
    if data[:2] != b"\xff\xd8":
        return None
    at = 2
    while at + 4 <= len(data):
        if data[at] != 0xFF:
            return None
        marker = data[at + 1]
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:  # markers without a length
            at += 2
            continue
        length = int.from_bytes(data[at + 2 : at + 4], "big")
        if marker in _SOF and at + 9 <= len(data):
            height, width = struct.unpack(">HH", data[at + 5 : at + 9])
            return int(width), int(height)
        at += 2 + length
    return None


def image_size(data: bytes) -> tuple[int, int] | None:
    """``(width, height)`` in pixels from a PNG, JPEG, GIF or WebP header; ``None`` for anything else."""
    for reader in (_png, _jpeg, _gif, _webp):
        size = reader(data)
        if size is not None:
            return size if size[0] > 0 and size[1] > 0 else None
    return None


def openai_image_tokens(width: int, height: int, *, detail: str = "auto") -> int:
    """OpenAI's rule: 85 + 170 per 512-pixel tile after scaling (85 flat for ``detail="low"``)."""
    if detail == "low":
        return 85
    scale = min(1.0, 2048 / max(width, height))
    scaled_width, scaled_height = width * scale, height * scale
    scale = min(1.0, 768 / min(scaled_width, scaled_height))
    tiles = math.ceil(scaled_width * scale / 512) * math.ceil(scaled_height * scale / 512)
    return 85 + 170 * tiles


def anthropic_image_tokens(width: int, height: int) -> int:
    """Anthropic's rule: ``width * height / 750`` after scaling the long side to at most 1568 pixels."""
    scale = min(1.0, 1568 / max(width, height))
    return math.ceil(width * scale * (height * scale) / 750)
