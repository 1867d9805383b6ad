"""Fitting an OpenAI-shaped conversation to a chat template that knows no tools.

Many small models' templates (SmolLM2's among them) render only ``role`` and
``content``: tool definitions, assistant ``tool_calls`` and the ``tool`` role
mean nothing to them. Measured on SmolLM2-135M: with the tool's description
in the system prompt a forced call gets sensible arguments (without it the
grammar-constrained string fields run on with invented text), and a tool
result phrased as a user message is used in the answer, while the same text
under the ``tool`` role is ignored. This module does those rewrites; it never
changes what the transcript recorded, only what this model is shown.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from ..canonical import canonical_json
from ..jsontypes import JSONObject, JSONValue
from ..messages import Message

if TYPE_CHECKING:
    from ..tools import AnyTool

__all__ = [
    "describe_tools",
    "template_handles_tools",
    "tool_results_as_user_messages",
    "with_content_strings",
    "with_system_text",
]


def template_handles_tools(template: str | None) -> bool:
    """Whether a Jinja chat template does anything with tools at all."""
    return template is not None and "tool" in template


def with_content_strings(wire: Mapping[str, JSONValue]) -> list[JSONObject]:
    """The ``messages`` of OpenAI-shaped params, each with a string ``content``.

    Templates concatenate ``content``, so a missing or null one (allowed by the
    OpenAI API on a tool-calling assistant message) becomes ``""``.
    """
    messages = wire.get("messages")
    out: list[JSONObject] = []
    for message in messages if isinstance(messages, list) else ():
        if isinstance(message, dict):
            fixed = dict(message)
            if fixed.get("content") is None:
                fixed["content"] = ""
            out.append(fixed)
    return out


def describe_tools(tools: Sequence[AnyTool], *, call_now: bool) -> str:
    """Plain-text tool list for a system prompt."""
    lines = ["Call the tool below now." if call_now else "Tools you can call:"]
    for tool in tools:
        schema = canonical_json(tool.parameters_schema())
        lines.append(f"- {tool.name}: {tool.description} Arguments (JSON Schema): {schema}")
    return "\n".join(lines)


def tool_results_as_user_messages(
    messages: Sequence[JSONObject], neutral: Sequence[Message]
) -> list[JSONObject]:
    """Tool results become user messages naming the tool and whether it failed.

    Names and failures are read from the neutral messages: the OpenAI shape
    carries neither on a tool message.
    """
    results = {m.tool_call_id: m for m in neutral if m.role == "tool" and m.tool_call_id}
    out: list[JSONObject] = []
    for message in messages:
        if message.get("role") != "tool":
            out.append(message)
            continue
        call_id = message.get("tool_call_id")
        source = results.get(call_id) if isinstance(call_id, str) else None
        name = source.name if source is not None and source.name else "the tool"
        verb = "failed" if source is not None and source.is_error else "returned"
        out.append({"role": "user", "content": f"Tool {name} {verb}: {message.get('content') or ''}"})
    return out


def with_system_text(messages: Sequence[JSONObject], text: str) -> list[JSONObject]:
    """``text`` appended to the leading system message, or as a new one."""
    out = list(messages)
    if out and out[0].get("role") == "system":
        first = dict(out[0])
        previous = first.get("content")
        first["content"] = f"{previous}\n\n{text}" if isinstance(previous, str) and previous else text
        out[0] = first
    else:
        out.insert(0, {"role": "system", "content": text})
    return out
