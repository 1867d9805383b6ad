"""The conversation a run hands back, and the history a stateless run is given (``message_history``).

A run given ``message_history`` stores those messages after its system
message and before its input (each commit marked :data:`HISTORY_KEY`), so
the model sees them with no store kept between runs. Every run hands back
the conversation as stored (``PromptResponse.messages``) and the part of
it that it stored itself (``PromptResponse.new_messages``).
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import TYPE_CHECKING

from ..messages import Message

if TYPE_CHECKING:
    from ..model import CompiledContext

__all__ = ["HISTORY_KEY", "Conversation", "conversation", "stored_history"]

HISTORY_KEY = "message_history"
"""Metadata key (``True``) of each commit a run stored from its ``message_history``."""

Conversation = tuple[tuple[Message, ...], tuple[Message, ...]]
"""The messages as stored without system messages, and those of them a run stored."""


def stored_history(message: Message) -> Message:
    """A history message as stored: its calls made storable; its metadata is not kept.

    The metadata of a message handed back is its commit's (usage, trace,
    stored-output handles): facts of the run that made it, which would be
    counted or followed again in the new session.
    """
    calls = tuple(call.storable() for call in message.tool_calls)
    return Message(
        message.role,
        message.content,
        tool_calls=calls,
        tool_call_id=message.tool_call_id,
        name=message.name,
        is_error=message.is_error,
    )


def conversation(
    context: CompiledContext, written: Collection[str], stored: Callable[[str], str] | None = None
) -> Conversation:
    """The compiled messages without system ones, and those shown by a commit in ``written``.

    ``stored`` maps a commit hash of ``context`` to the hash it was stored
    under, for a context compiled while its last turn was still staged.
    """
    messages: list[Message] = []
    new: list[Message] = []
    for message, commit in zip(context.messages, context.commit_hashes, strict=True):
        if message.role == "system":
            continue
        messages.append(message)
        if (commit if stored is None else stored(commit)) in written:
            new.append(message)
    return tuple(messages), tuple(new)
