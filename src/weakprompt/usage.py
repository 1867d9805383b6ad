"""What model calls cost: tokens in and out, and how many calls.

A foundation type, below the messages that carry it, because the budget
tracker (also foundation) adds it up. ``weakprompt.messages`` re-exports it.
"""

from __future__ import annotations

import attrs

__all__ = ["Usage"]


@attrs.frozen
class Usage:
    """Token usage of one or more model calls; adds up with ``+``."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    model_calls: int = 0
    cache_write_tokens: int = 0
    """Input tokens the provider wrote to its prompt cache (Anthropic reports them; a part of
    ``input_tokens``)."""
    reasoning_tokens: int = 0
    """Output tokens spent on reasoning (a part of ``output_tokens``)."""

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cached_input_tokens=self.cached_input_tokens + other.cached_input_tokens,
            model_calls=self.model_calls + other.model_calls,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
        )
