"""The compiled view of a transcript: exactly what is sent to a model."""

from __future__ import annotations

import attrs

from ..jsontypes import JSONObject
from ..messages import Message

__all__ = ["CompiledContext"]


def _wire():
    """The provider wire formats: the one upward import the layer contracts allow (see below)."""
    from ..adapters import wire

    return wire


@attrs.frozen
class CompiledContext:
    """Messages in order (edits applied) plus the tool set active for them.

    ``tools`` holds the linked schemas exactly as stored (neutral
    ``{"name", "description", "parameters"}``, OpenAI- or Anthropic-shaped),
    never messages; the ``to_*`` methods convert them to each provider's
    shape. ``commit_hashes[i]`` is the commit whose content ``messages[i]``
    shows (the latest edit, when the message was edited).

    The conversions live with the adapters (``weakprompt.adapters.wire``),
    which own every provider format. These methods reach them through a
    function-local import: the one upward import the layer contracts allow
    (``specs/LAYOUT.md``), so that a context converts itself, as callers
    expect, without the core layer loading provider code until asked.
    """

    messages: tuple[Message, ...]
    tools: tuple[JSONObject, ...] = ()
    token_count: int = 0
    commit_hashes: tuple[str, ...] = ()

    def to_openai(self) -> list[JSONObject]:
        """Chat Completions ``messages`` only (no tools): a plain list."""
        return _wire().openai_messages(self.messages)

    def to_openai_params(self) -> JSONObject:
        """``{"messages", "tools"?}`` ready for ``chat.completions.create(**params)``."""
        return _wire().openai_params(self.messages, self.tools)

    def to_anthropic(self) -> JSONObject:
        """``{"system"?, "messages"}`` without tools."""
        return _wire().anthropic_conversation(self.messages)

    def to_anthropic_params(self) -> JSONObject:
        """``{"system"?, "messages", "tools"?}`` ready for ``messages.create(**params)``."""
        return _wire().anthropic_params(self.messages, self.tools)
