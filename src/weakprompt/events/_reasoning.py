"""A reply's reasoning as it streams: the one stream event reasoning models add.

Reasoning is shown to a caller as it is written (like text) and must also be
kept whole, opaque state included, so the turn can send it back to the model
that wrote it. One event does both: ``text`` is the next piece of reasoning
part number ``index``; the other fields, when given, set that part's opaque
state (a signature, encrypted content, an id), which usually arrives once,
at the end of the part. The fold is :class:`weakprompt.model.ReplyAssembler`.
"""

from __future__ import annotations

import attrs

__all__ = ["ReasoningDelta"]


@attrs.frozen
class ReasoningDelta:
    """The next piece of the reply's reasoning part number ``index`` (counted among reasoning parts).

    ``text`` is appended to the part's text. ``issuer``, ``signature``,
    ``encrypted``, ``id`` and ``redacted``, when set, replace the part's
    value (a later delta's wins), so a part's text can stream while its
    signature comes last.
    """

    index: int
    text: str = ""
    issuer: str = attrs.field(default="", kw_only=True)
    signature: str | None = attrs.field(default=None, kw_only=True)
    encrypted: str | None = attrs.field(default=None, kw_only=True)
    id: str | None = attrs.field(default=None, kw_only=True)
    redacted: bool = attrs.field(default=False, kw_only=True)
    turn: int = attrs.field(default=0, kw_only=True)
    """The run's model call this piece belongs to (from 1); 0 straight from an adapter."""
