"""Neutral messages and linked tool schemas -> OpenAI Chat Completions request parameters.

The output is plain dicts shaped like the SDK's ``ChatCompletionMessageParam``
and ``ChatCompletionToolParam`` TypedDicts, so the adapter can pass it
straight to ``client.chat.completions.create(**params, model=...)``.

Chat Completions takes no reasoning back (its replies carry none either), so
every reasoning part is another provider's here: dropped, or put before the
assistant's text as plain text with ``foreign_reasoning="text"``.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...jsontypes import JSONObject, JSONValue
from ...messages import Message
from ...model.tool_shapes import read_function_tool
from .media import chat_content, chat_tool_followup, chat_tool_text, has_media
from .reasoning import ForeignReasoning, split_reasoning

__all__ = ["PROVIDER", "openai_message", "openai_messages", "openai_params", "openai_tool", "openai_tools"]


PROVIDER = "openai-chat"
"""No issuer is this provider: Chat Completions replays no reasoning."""


def openai_message(message: Message, foreign: ForeignReasoning = "drop") -> JSONObject:
    """One neutral message as a Chat Completions message dict."""
    if message.role == "tool":
        text = chat_tool_text(message) if message.parts and has_media(message) else message.content
        return {"role": "tool", "tool_call_id": message.tool_call_id or "", "content": text}
    reasoning = split_reasoning(message, PROVIDER, foreign).foreign_text
    content = "\n\n".join(text for text in (reasoning, message.content) if text)
    out: JSONObject = {"role": message.role, "content": content}
    if message.role == "user" and message.parts and has_media(message):
        out["content"] = chat_content(message)
    if message.name:
        out["name"] = message.name
    if message.role == "assistant" and message.tool_calls:
        calls: list[JSONValue] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments_json()},
            }
            for call in message.tool_calls
        ]
        out["tool_calls"] = calls
    return out


def openai_messages(
    messages: Sequence[Message], *, foreign_reasoning: ForeignReasoning = "drop"
) -> list[JSONObject]:
    """The conversation as Chat Completions messages; images and documents of tool results follow them.

    A ``tool`` message takes text only, so a run of tool results whose
    parts hold images or documents is followed by one user message carrying
    them (``wire/media.py``).
    """
    out: list[JSONObject] = []
    results: list[Message] = []
    for message in messages:
        if message.role != "tool" and results:
            _follow(out, results)
        out.append(openai_message(message, foreign_reasoning))
        if message.role == "tool":
            results.append(message)
    if results:
        _follow(out, results)
    return out


def _follow(out: list[JSONObject], results: list[Message]) -> None:
    followup = chat_tool_followup(results) if any(m.parts for m in results) else None
    if followup is not None:
        out.append(followup)
    results.clear()


def openai_tool(schema: JSONObject, *, index: int = 0) -> JSONObject:
    """One linked schema as ``{"type": "function", "function": {...}}``.

    A schema already in that shape, or a non-function provider tool, is
    passed through as stored.
    """
    if schema.get("type") == "function" and isinstance(schema.get("function"), dict):
        return schema
    view = read_function_tool(schema, index=index)
    if view is None:
        return schema
    function: JSONObject = {"name": view.name}
    if view.description is not None:
        function["description"] = view.description
    function["parameters"] = view.parameters
    if view.strict is not None:
        function["strict"] = view.strict
    return {"type": "function", "function": function}


def openai_tools(tools: Sequence[JSONObject]) -> list[JSONObject]:
    return [openai_tool(t, index=i) for i, t in enumerate(tools)]


def openai_params(
    messages: Sequence[Message],
    tools: Sequence[JSONObject],
    *,
    foreign_reasoning: ForeignReasoning = "drop",
) -> JSONObject:
    """``{"messages": [...]}`` plus ``"tools"`` only when there are any."""
    wire = openai_messages(messages, foreign_reasoning=foreign_reasoning)
    params: JSONObject = {"messages": list[JSONValue](wire)}
    if tools:
        params["tools"] = list[JSONValue](openai_tools(tools))
    return params
