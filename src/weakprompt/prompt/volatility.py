"""How often a section's text changes, which decides where it goes in a request.

Provider prompt caches only reuse a byte-identical prefix, so text that
changes often must come after text that does not (``specs/CACHING.md``).
"""

from __future__ import annotations

from typing import Literal, TypeAlias

__all__ = ["VOLATILITY_RANK", "CacheLayoutWarning", "Volatility", "effective_volatility"]

Volatility: TypeAlias = Literal["stable", "session", "turn"]
"""``"stable"``: changes only with the template; ``"session"``: fixed for one session;
``"turn"``: may change on every turn."""

VOLATILITY_RANK: dict[Volatility, int] = {"stable": 0, "session": 1, "turn": 2}
"""Layout order: stable text first, then session text, then turn text."""


class CacheLayoutWarning(UserWarning):
    """A template whose declarations cannot keep the request prefix byte-identical (``specs/CACHING.md``)."""


def effective_volatility(declared: Volatility, parent: Volatility) -> Volatility:
    """A section changes at least as often as its parent: its text is placed with the parent's."""
    return declared if VOLATILITY_RANK[declared] >= VOLATILITY_RANK[parent] else parent
