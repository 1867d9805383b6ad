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
        if not text:
            return 0
        size = len(text.encode("utf-8", "surrogatepass"))  # a lone surrogate counts, never raises
        return max(1, math.ceil(size / self._ratio))


DEFAULT_TOKEN_COUNTER: TokenCounter = ByteEstimateCounter()
