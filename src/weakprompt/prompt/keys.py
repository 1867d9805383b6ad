"""Section keys: the stable names overrides, paths and `open_sections` refer to.

Keys are normalised (trimmed, lower-cased, inner whitespace turned into ``-``)
before validation so ``"Tool Usage"`` and ``"tool-usage"`` name the same thing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..errors import PromptValidationError

__all__ = ["KEY_PATTERN", "SectionPath", "format_path", "normalize_key", "validate_ns"]

KEY_PATTERN = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
_WHITESPACE = re.compile(r"\s+")

SectionPath = tuple[str, ...]
"""Keys from the root section down to one section."""


def normalize_key(raw: str, *, what: str = "section key") -> str:
    """Return the canonical form of ``raw`` or raise naming the bad key."""
    if not isinstance(raw, str):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise PromptValidationError(f"{what} must be a string, got {type(raw).__name__}")
    key = _WHITESPACE.sub("-", raw.strip().lower())
    if not KEY_PATTERN.match(key):
        raise PromptValidationError(
            f"{what} {raw!r} is invalid: after normalising it to {key!r} it must match "
            f"{KEY_PATTERN.pattern} (lowercase letters, digits, '.', '_', '-'; at most 64 chars)"
        )
    return key


def format_path(path: Sequence[str]) -> str:
    """``("a", "b")`` -> ``"a/b"``; keys never contain ``/`` so this is reversible."""
    return "/".join(path)


def validate_ns(ns: str) -> str:
    """A namespace is one or more ``/``-separated keys (``"examples/tooling"``)."""
    segments = ns.split("/")
    if not ns or not all(KEY_PATTERN.match(segment) for segment in segments):
        raise PromptValidationError(
            f"namespace {ns!r} is invalid: use '/'-separated segments matching {KEY_PATTERN.pattern}"
        )
    return ns
