"""Neutral messages -> OpenAI Responses API input items.

System and user messages become ``message`` items; an assistant message
becomes its text (``message``, when it has any) followed by one
``function_call`` item per call; a tool result becomes a
``function_call_output`` item keyed by the call id. The dicts have the shape
of the SDK's ``ResponseInputItemParam`` TypedDicts.

An assistant message's OpenAI reasoning parts go first, as ``reasoning``
items (id, summary, encrypted content), so each ``function_call`` follows
the reasoning that produced it, as the API requires; other providers'
reasoning is dropped, or sent as an assistant text message when asked
(:mod:`.reasoning`).
"""

from __future__ import annotations

from collections.abc import Sequence

from ...jsontypes import JSONObject, JSONValue
from ...messages import Message
from .media import has_media, responses_content
from .reasoning import ForeignReasoning, split_reasoning

__all__ = ["PROVIDER", "reasoning_items", "responses_input", "responses_items"]

PROVIDER = "openai"
"""The provider half of the issuer of the reasoning the Responses API writes and takes back."""


def reasoning_items(
    message: Message, foreign: ForeignReasoning = "drop", *, by_reference: bool = False
) -> list[JSONObject]:
    """An assistant message's replayed reasoning: its OpenAI reasoning items, then other
    providers' reasoning as one assistant text message when ``foreign="text"``.

    An item goes back with its encrypted content; one without it only when
    the server keeps items (``by_reference``, ``store=True``), where its id
    finds it. The summary is sent as one summary text.
    """
    split = split_reasoning(message, PROVIDER, foreign)
    items: list[JSONObject] = []
    for part in split.own:
        if part.id is None or (part.encrypted is None and not by_reference):
            continue
        summary: list[JSONValue] = [{"type": "summary_text", "text": part.text}] if part.text else []
        item: JSONObject = {"type": "reasoning", "id": part.id, "summary": summary}
        if part.encrypted is not None:
            item["encrypted_content"] = part.encrypted
        items.append(item)
    if split.foreign_text:
        items.append({"type": "message", "role": "assistant", "content": split.foreign_text})
    return items


def responses_items(
    message: Message, foreign: ForeignReasoning = "drop", *, by_reference: bool = False
) -> list[JSONObject]:
    """One neutral message as its Responses input items (none for an empty assistant message)."""
    media = bool(message.parts) and has_media(message)
    if message.role == "tool":
        output = responses_content(message) if media else message.content
        return [{"type": "function_call_output", "call_id": message.tool_call_id or "", "output": output}]
    items: list[JSONObject] = reasoning_items(message, foreign, by_reference=by_reference)
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


def responses_input(
    messages: Sequence[Message], *, foreign_reasoning: ForeignReasoning = "drop", by_reference: bool = False
) -> list[JSONObject]:
    """The conversation as one list of input items, in order."""
    return [
        item
        for message in messages
        for item in responses_items(message, foreign_reasoning, by_reference=by_reference)
    ]
