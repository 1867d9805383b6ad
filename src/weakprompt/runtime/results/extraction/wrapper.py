"""The final-answer wrapper extraction models must write their answer in.

Each model call gets a fresh random nonce, and only a wrapper carrying that
nonce counts as an answer. The document being read cannot know the nonce,
so text inside it that imitates a wrapper is never mistaken for the answer.
The closing tag is optional because small models often stop without it.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable

__all__ = [
    "NO_RELEVANT_DATA",
    "WRAPPER_PREFIX",
    "FinalWrapper",
    "NonceFactory",
    "random_nonce",
]

WRAPPER_PREFIX = "wp"
"""Project prefix of the tag name: ``<wp-<NONCE>-FINAL format="text">``."""

NO_RELEVANT_DATA = "NO RELEVANT DATA FOUND"
"""What a model writes when the text holds nothing for the request: an answer, not a failure."""

NonceFactory = Callable[[], str]

_NONCE_PATTERN = re.compile(r"[A-Za-z0-9]{4,64}")


def random_nonce() -> str:
    """16 random hex digits."""
    return secrets.token_hex(8)


class FinalWrapper:
    """The tags for one nonce, and the lenient parser that finds the answer between them."""

    def __init__(self, nonce: str) -> None:
        if _NONCE_PATTERN.fullmatch(nonce) is None:
            raise ValueError(f"wrapper nonce must be 4-64 letters or digits, got {nonce!r}")
        self.nonce = nonce
        self.name = f"{WRAPPER_PREFIX}-{nonce}-FINAL"
        escaped = re.escape(self.name)
        self._open = re.compile(rf"<\s*{escaped}(?:\s[^>]*)?>", re.IGNORECASE)
        self._close = re.compile(rf"<\s*/\s*{escaped}\s*>", re.IGNORECASE)

    @property
    def opening(self) -> str:
        return f'<{self.name} format="text">'

    @property
    def closing(self) -> str:
        return f"</{self.name}>"

    def example(self, body: str = "...") -> str:
        """How a wrapped answer looks, for prompts."""
        return f"{self.opening}\n{body}\n{self.closing}"

    def parse(self, text: str) -> str | None:
        """The answer inside the last opening tag, or ``None`` when there is none.

        Text after the opening tag runs to the next closing tag, or to the
        end when the model left the closing tag out. Attributes on the
        opening tag, letter case and stray spaces inside the tags are
        tolerated. A wrapper with nothing but whitespace inside is no answer.
        """
        openings = list(self._open.finditer(text))
        if not openings:
            return None
        rest = text[openings[-1].end() :]
        closing = self._close.search(rest)
        body = (rest[: closing.start()] if closing is not None else rest).strip()
        return body or None
