"""The compiled view of a transcript: exactly what is sent to a model."""

from __future__ import annotations

import attrs

from ..jsontypes import JSONObject, JSONValue
from ..messages import Message
from .wire_anthropic import anthropic_messages, anthropic_params
from .wire_openai import openai_messages, openai_params

__all__ = ["CompiledContext"]


@attrs.frozen
class CompiledContext:
    """Messages in order (edits applied) plus the tool set active for them.

    ``tools`` holds the linked schemas exactly as stored (neutral
    ``{"name", "description", "parameters"}``, OpenAI- or Anthropic-shaped),
    never messages; the ``to_*`` methods convert them to each provider's
    shape. ``commit_hashes[i]`` is the commit whose content ``messages[i]``
    shows (the latest edit, when the message was edited).
    """

    messages: tuple[Message, ...]
    tools: tuple[JSONObject, ...] = ()
    token_count: int = 0
    commit_hashes: tuple[str, ...] = ()

    def to_openai(self) -> list[JSONObject]:
        """Chat Completions ``messages`` only (no tools): a plain list."""
        return openai_messages(self.messages)

    def to_openai_params(self) -> JSONObject:
        """``{"messages", "tools"?}`` ready for ``chat.completions.create(**params)``."""
        return openai_params(self.messages, self.tools)

    def to_anthropic(self) -> JSONObject:
        """``{"system"?, "messages"}`` without tools."""
        system, messages = anthropic_messages(self.messages)
        out: JSONObject = {}
        if system:
            out["system"] = system
        out["messages"] = list[JSONValue](messages)
        return out

    def to_anthropic_params(self) -> JSONObject:
        """``{"system"?, "messages", "tools"?}`` ready for ``messages.create(**params)``."""
        return anthropic_params(self.messages, self.tools)
