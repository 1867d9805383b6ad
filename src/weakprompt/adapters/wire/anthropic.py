"""Neutral messages and linked tool schemas -> Anthropic Messages request parameters.

Anthropic's shape differs from the neutral one in four ways, all handled
here: system text is a separate ``system`` parameter; tool results are
``tool_result`` blocks inside a *user* message; assistant tool calls are
``tool_use`` blocks with parsed ``input``; and roles must alternate, so
consecutive messages of the same wire role are merged into one.

An assistant message's Anthropic reasoning (thinking and redacted thinking
blocks) goes first in its content, verbatim; reasoning from another
provider is dropped or sent as text (:mod:`.reasoning`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import attrs

from ...jsontypes import JSONObject, JSONValue
from ...messages import Message
from ...model.tool_shapes import read_function_tool
from .arguments import arguments_object
from .media import anthropic_content, has_media
from .reasoning import ForeignReasoning, split_reasoning

__all__ = [
    "PROVIDER",
    "MAX_CACHE_POINTS",
    "SYSTEM_SEPARATOR",
    "anthropic_conversation",
    "anthropic_messages",
    "anthropic_params",
    "anthropic_tool",
    "anthropic_tools",
    "reasoning_blocks",
    "with_cache_points",
]

SYSTEM_SEPARATOR = "\n\n"
"""Every system message, wherever it sits, is joined with this into ``system``."""


@attrs.define
class _WireMessage:
    role: str
    blocks: list[JSONObject]


PROVIDER = "anthropic"
"""The provider half of the issuer of the reasoning the Messages API writes and takes back."""


def reasoning_blocks(message: Message, foreign: ForeignReasoning = "drop") -> list[JSONObject]:
    """An assistant message's replayed reasoning: its own thinking blocks as they came, then
    other providers' reasoning as one text block when ``foreign="text"``.

    A thinking block without its signature cannot be verified, so it is not sent.
    """
    split = split_reasoning(message, PROVIDER, foreign)
    blocks: list[JSONObject] = []
    for part in split.own:
        if part.redacted and part.encrypted is not None:
            blocks.append({"type": "redacted_thinking", "data": part.encrypted})
        elif part.signature is not None and not part.redacted:
            blocks.append({"type": "thinking", "thinking": part.text, "signature": part.signature})
    if split.foreign_text:
        blocks.append({"type": "text", "text": split.foreign_text})
    return blocks


def _blocks(message: Message, foreign: ForeignReasoning = "drop") -> list[JSONObject]:
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
    blocks: list[JSONObject] = reasoning_blocks(message, foreign)
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


def anthropic_messages(
    messages: Sequence[Message], *, foreign_reasoning: ForeignReasoning = "drop"
) -> tuple[str, list[JSONObject]]:
    """``(system_text, messages)``; system_text is "" when there is none.

    Messages left with no content blocks (empty text, no tool calls) are
    skipped before merging, so roles still alternate.
    """
    system_parts = [m.content for m in messages if m.role == "system" and m.content]
    merged: list[_WireMessage] = []
    for message in messages:
        if message.role == "system":
            continue
        blocks = _blocks(message, foreign_reasoning)
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


def anthropic_conversation(
    messages: Sequence[Message], *, foreign_reasoning: ForeignReasoning = "drop"
) -> JSONObject:
    """``{"system"?, "messages"}``: ``system`` only when there is system text."""
    system, wire_messages = anthropic_messages(messages, foreign_reasoning=foreign_reasoning)
    params: JSONObject = {}
    if system:
        params["system"] = system
    params["messages"] = list[JSONValue](wire_messages)
    return params


def anthropic_params(
    messages: Sequence[Message],
    tools: Sequence[JSONObject],
    *,
    foreign_reasoning: ForeignReasoning = "drop",
) -> JSONObject:
    """``{"system"?, "messages", "tools"?}``: optional keys only when non-empty."""
    params = anthropic_conversation(messages, foreign_reasoning=foreign_reasoning)
    if tools:
        params["tools"] = list[JSONValue](anthropic_tools(tools))
    return params


MAX_CACHE_POINTS = 4
"""The Messages API takes at most four ``cache_control`` breakpoints per request."""

_EPHEMERAL: JSONObject = {"type": "ephemeral"}


def _marked(block: JSONObject) -> JSONObject:
    return {**block, "cache_control": dict(_EPHEMERAL)}


def with_cache_points(
    params: JSONObject, *, stable_system_chars: int | None, trailing_blocks: int = 0
) -> JSONObject:
    """``params`` with ``cache_control`` breakpoints (``specs/CACHING.md``), at most :data:`MAX_CACHE_POINTS`.

    After the last tool; at the end of the stable system text (and at the end
    of the rest of it, session text, when there is any); and on the last
    conversation block before the ``trailing_blocks`` turn-context blocks.
    ``stable_system_chars`` is where the stable system text ends (``None``:
    all of it is treated as one block).
    """
    out: JSONObject = dict(params)
    tools = out.get("tools")
    if isinstance(tools, list) and tools:
        out["tools"] = [*tools[:-1], _marked_value(tools[-1])]
    system = out.get("system")
    if isinstance(system, str) and system:
        cut = len(system) if stable_system_chars is None else min(stable_system_chars, len(system))
        parts = (system[:cut], system[cut:])  # the stable text, then the rest (session text)
        out["system"] = [_marked({"type": "text", "text": text}) for text in parts if text]
    messages = out.get("messages")
    if isinstance(messages, list):  # at most three marks so far: one is left for the conversation
        out["messages"] = _mark_last_stable(messages, trailing_blocks)
    return out


def _marked_value(value: JSONValue) -> JSONValue:
    return _marked(value) if isinstance(value, dict) else value


def _mark_last_stable(messages: list[JSONValue], skip: int) -> list[JSONValue]:
    """The messages with the last block before the ``skip`` trailing ones marked (unchanged if none is)."""
    marked = list(messages)
    for index in range(len(marked) - 1, -1, -1):
        message = marked[index]
        content = message.get("content") if isinstance(message, dict) else None
        blocks: list[JSONValue] = [{"type": "text", "text": content}] if isinstance(content, str) else []
        if isinstance(content, list):
            blocks = list(content)
        if skip < len(blocks):
            at = len(blocks) - 1 - skip
            blocks[at] = _marked_value(blocks[at])
            marked[index] = {**cast("JSONObject", message), "content": blocks}
            return marked
        skip -= len(blocks)
    return marked
