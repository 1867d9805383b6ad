"""Neutral messages and linked tool schemas -> Anthropic Messages request parameters.

Anthropic's shape differs from the neutral one in four ways, all handled
here: system text is a separate ``system`` parameter; tool results are
``tool_result`` blocks inside a *user* message; assistant tool calls are
``tool_use`` blocks with parsed ``input``; and roles must alternate, so
consecutive messages of the same wire role are merged into one.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from ...jsontypes import JSONObject, JSONValue
from ...messages import Message
from ...model.tool_shapes import read_function_tool
from .arguments import arguments_object
from .media import anthropic_content, has_media

__all__ = [
    "SYSTEM_SEPARATOR",
    "anthropic_conversation",
    "anthropic_messages",
    "anthropic_params",
    "anthropic_tool",
    "anthropic_tools",
]

SYSTEM_SEPARATOR = "\n\n"
"""Every system message, wherever it sits, is joined with this into ``system``."""


@attrs.define
class _WireMessage:
    role: str
    blocks: list[JSONObject]


def _blocks(message: Message) -> list[JSONObject]:
    """Content blocks for one message; empty text is dropped (the API rejects it)."""
    media = bool(message.parts) and has_media(message)
    if message.role == "tool":
        block: JSONObject = {
            "type": "tool_result",
            "tool_use_id": message.tool_call_id or "",
            "content": list[JSONValue](anthropic_content(message)) if media else message.content,
        }
        if message.is_error:
            block["is_error"] = True
        return [block]
    if media and message.role == "user":
        return anthropic_content(message)
    blocks: list[JSONObject] = []
    if message.content:
        blocks.append({"type": "text", "text": message.content})
    if message.role == "assistant":
        blocks.extend(
            {"type": "tool_use", "id": call.id, "name": call.name, "input": arguments_object(call)}
            for call in message.tool_calls
        )
    return blocks


def _tool_results_first(blocks: list[JSONObject]) -> list[JSONObject]:
    """Anthropic wants a user turn's tool_result blocks before any other block."""
    results = [b for b in blocks if b.get("type") == "tool_result"]
    others = [b for b in blocks if b.get("type") != "tool_result"]
    return results + others


def _render(wire: _WireMessage) -> JSONObject:
    blocks = _tool_results_first(wire.blocks) if wire.role == "user" else wire.blocks
    if len(blocks) == 1 and blocks[0].get("type") == "text":
        return {"role": wire.role, "content": blocks[0]["text"]}
    return {"role": wire.role, "content": list[JSONValue](blocks)}


def anthropic_messages(messages: Sequence[Message]) -> tuple[str, list[JSONObject]]:
    """``(system_text, messages)``; system_text is "" when there is none.

    Messages left with no content blocks (empty text, no tool calls) are
    skipped before merging, so roles still alternate.
    """
    system_parts = [m.content for m in messages if m.role == "system" and m.content]
    merged: list[_WireMessage] = []
    for message in messages:
        if message.role == "system":
            continue
        blocks = _blocks(message)
        if not blocks:
            continue
        role = "assistant" if message.role == "assistant" else "user"
        if merged and merged[-1].role == role:
            merged[-1].blocks.extend(blocks)
        else:
            merged.append(_WireMessage(role, blocks))
    return SYSTEM_SEPARATOR.join(system_parts), [_render(w) for w in merged]


def anthropic_tool(schema: JSONObject, *, index: int = 0) -> JSONObject:
    """One linked schema as ``{"name", "description"?, "input_schema"}``.

    Built-in Anthropic tools (a versioned ``type`` such as ``bash_20250124``)
    are passed through as stored.
    """
    view = read_function_tool(schema, index=index)
    if view is None:
        return schema
    tool: JSONObject = {"name": view.name}
    if view.description is not None:
        tool["description"] = view.description
    tool["input_schema"] = view.parameters
    return tool


def anthropic_tools(tools: Sequence[JSONObject]) -> list[JSONObject]:
    return [anthropic_tool(t, index=i) for i, t in enumerate(tools)]


def anthropic_conversation(messages: Sequence[Message]) -> JSONObject:
    """``{"system"?, "messages"}``: ``system`` only when there is system text."""
    system, wire_messages = anthropic_messages(messages)
    params: JSONObject = {}
    if system:
        params["system"] = system
    params["messages"] = list[JSONValue](wire_messages)
    return params


def anthropic_params(messages: Sequence[Message], tools: Sequence[JSONObject]) -> JSONObject:
    """``{"system"?, "messages", "tools"?}``: optional keys only when non-empty."""
    params = anthropic_conversation(messages)
    if tools:
        params["tools"] = list[JSONValue](anthropic_tools(tools))
    return params
