"""Provider wire formats: neutral messages and tool schemas in each provider's request shape.

Pure data conversions with no SDK import. The adapters call them, and so
does :class:`~weakprompt.model.CompiledContext` for its ``to_*`` methods.
``openai_chunks`` reads the other way: streamed Chat Completions chunks
into neutral stream events.
"""

from __future__ import annotations

from .anthropic import anthropic_conversation, anthropic_params
from .arguments import RAW_ARGUMENTS_KEY
from .openai import openai_messages, openai_params
from .openai_chunks import ChatChunkReader, chat_usage

__all__ = [
    "RAW_ARGUMENTS_KEY",
    "ChatChunkReader",
    "anthropic_conversation",
    "anthropic_params",
    "chat_usage",
    "openai_messages",
    "openai_params",
]
