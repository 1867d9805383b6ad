"""The compiled view of a transcript: exactly what is sent to a model."""

from __future__ import annotations

import attrs

from ..jsontypes import JSONObject
from ..messages import Message

__all__ = ["CompiledContext"]


@attrs.frozen
class CompiledContext:
    """Messages in order (edits applied) plus the tool set active for them.

    ``tools`` holds provider-neutral schemas ``{"name", "description",
    "parameters"}`` (or whatever shape the user linked), never messages.
    """

    messages: tuple[Message, ...]
    tools: tuple[JSONObject, ...] = ()
    token_count: int = 0
    commit_hashes: tuple[str, ...] = ()
