"""How a strategy says it could not run, so the extractor falls back to truncate."""

from __future__ import annotations

__all__ = ["StrategyFailed", "reply_preview"]


class StrategyFailed(Exception):
    """The strategy could not produce an answer; ``reason`` is recorded with the fallback.

    "Nothing relevant found" is an answer, not a failure: only a strategy
    that cannot execute (a model call failed, no wrapped answer came back,
    the output cannot be cut into few enough chunks) raises this.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def reply_preview(text: str, limit: int = 80) -> str:
    """The start of a model reply, quoted on one line, for failure reasons."""
    flat = " ".join(text.split())
    if not flat:
        return "an empty reply"
    if len(flat) > limit:
        flat = flat[: limit - 3] + "..."
    return f"a reply beginning {flat!r}"
