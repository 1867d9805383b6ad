"""How often a section's text changes, which decides where it goes in a request.

Provider prompt caches only reuse a byte-identical prefix, so text that
changes often must come after text that does not (``specs/CACHING.md``).
"""

from __future__ import annotations

from typing import Literal, TypeAlias

__all__ = ["Volatility"]

Volatility: TypeAlias = Literal["stable", "session", "turn"]
"""``"stable"``: changes only with the template; ``"session"``: fixed for one session;
``"turn"``: may change on every turn."""
