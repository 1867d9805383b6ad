"""Token counting through a pluggable counter.

Exact counts need the model's own tokenizer, which only some adapters have;
everything else uses an estimate that is stable and cheap.
"""

from __future__ import annotations

import math
from typing import Protocol, runtime_checkable

__all__ = ["ByteEstimateCounter", "TokenCounter", "DEFAULT_TOKEN_COUNTER"]


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
