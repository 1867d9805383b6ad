"""Content as span attributes: messages, arguments and results, always redacted first.

Only used when content capture is on. Messages follow the GenAI
conventions' shape (a role and a list of parts), as JSON text, since span
attributes hold no nested values.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from ..jsontypes import JSONObject, JSONValue
from ..messages import AssistantTurn, Message, ToolCall
from ..runtime.redaction import Redactor, redacted

__all__ = ["final_answer", "input_messages", "output_messages", "scrubbed", "user_input"]


def scrubbed(text: str, redact: Redactor) -> str:
    """``text`` as it may be recorded: through the redaction hook (which never raises)."""
    return redacted(text, redact)


def _call_part(call: ToolCall, redact: Redactor) -> JSONObject:
    return {
        "type": "tool_call",
        "id": call.id,
        "name": call.name,
        "arguments": scrubbed(call.arguments_json(), redact),
    }


def _message(message: Message, redact: Redactor) -> JSONObject:
    parts: list[JSONValue] = []
    if message.role == "tool":
        parts.append(
            {
                "type": "tool_call_response",
                "id": message.tool_call_id,
                "response": scrubbed(message.content, redact),
            }
        )
    elif message.content:
        parts.append({"type": "text", "content": scrubbed(message.content, redact)})
    parts.extend(_call_part(call, redact) for call in message.tool_calls)
    return {"role": message.role, "parts": parts}


def _dumps(value: Iterable[JSONValue]) -> str:
    return json.dumps(list(value), ensure_ascii=False, separators=(",", ":"))


def input_messages(messages: Iterable[Message], redact: Redactor) -> str:
    """The messages a model call was given, as JSON text."""
    return _dumps(_message(m, redact) for m in messages)


def user_input(text: str, redact: Redactor) -> str:
    """A run's input, as the one user message it becomes."""
    return _dumps([{"role": "user", "parts": [{"type": "text", "content": scrubbed(text, redact)}]}])


def output_messages(reply: AssistantTurn, redact: Redactor) -> str:
    """A model's reply, as JSON text."""
    parts: list[JSONValue] = []
    if reply.text:
        parts.append({"type": "text", "content": scrubbed(reply.text, redact)})
    parts.extend(_call_part(call, redact) for call in reply.tool_calls)
    return _dumps([{"role": "assistant", "parts": parts, "finish_reason": reply.finish_reason}])


def final_answer(text: str, finish_reason: str | None, redact: Redactor) -> str:
    """A run's final answer, as one assistant message."""
    parts: list[JSONValue] = [{"type": "text", "content": scrubbed(text, redact)}] if text else []
    return _dumps([{"role": "assistant", "parts": parts, "finish_reason": finish_reason}])
