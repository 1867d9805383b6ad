"""What a compiled parser is, apart from the compiler that builds one.

``parse`` needs only these at call time; the compiler (and the type model
under it) loads with the first type parsed, not with ``import weakprompt``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeAlias

__all__ = ["BAD", "Parser", "RawIssue"]


class _Bad:
    __slots__ = ()

    def __repr__(self) -> str:
        return "<invalid>"


BAD: object = _Bad()
# [reversed path steps, expected, received]; mutable so parents can add steps.
RawIssue: TypeAlias = tuple[list[str], str, str]
Parser: TypeAlias = Callable[[object, list[RawIssue]], object]
