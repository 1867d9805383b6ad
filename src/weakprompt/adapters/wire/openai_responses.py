"""Neutral messages -> OpenAI Responses API input items.

System and user messages become ``message`` items; an assistant message
becomes its text (``message``, when it has any) followed by one
``function_call`` item per call; a tool result becomes a
``function_call_output`` item keyed by the call id. The dicts have the shape
of the SDK's ``ResponseInputItemParam`` TypedDicts.

Reasoning items (encrypted when ``store=False``) are not carried between
turns yet: messages are text, and a reasoning item needs a part to live in.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...jsontypes import JSONObject
from ...messages import Message
from .media import has_media, responses_content

__all__ = ["responses_input", "responses_items"]


def responses_items(message: Message) -> list[JSONObject]:
    """One neutral message as its Responses input items (none for an empty assistant message)."""
    media = bool(message.parts) and has_media(message)
    if message.role == "tool":
        output = responses_content(message) if media else message.content
        return [{"type": "function_call_output", "call_id": message.tool_call_id or "", "output": output}]
    items: list[JSONObject] = []
    if media and message.role == "user":
        items.append({"type": "message", "role": "user", "content": responses_content(message)})
    elif message.content or message.role != "assistant":
        items.append({"type": "message", "role": message.role, "content": message.content})
    items.extend(
        {"type": "function_call", "call_id": call.id, "name": call.name, "arguments": call.arguments_json()}
        for call in message.tool_calls
        if message.role == "assistant"
    )
    return items


def responses_input(messages: Sequence[Message]) -> list[JSONObject]:
    """The conversation as one list of input items, in order."""
    return [item for message in messages for item in responses_items(message)]
