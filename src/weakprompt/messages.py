"""Provider-neutral conversation data: what flows between transcript, loop and adapters.

Adapters translate these to and from their wire formats; nothing above the
adapter layer ever sees a provider's own message shape.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Literal

import attrs

from .jsontypes import JSONObject, JSONValue
from .usage import Usage

__all__ = [
    "AssistantTurn",
    "FinishReason",
    "Message",
    "Role",
    "ToolCall",
    "Usage",
]

Role = Literal["system", "user", "assistant", "tool"]
FinishReason = Literal["stop", "tool_calls", "length", "content_filter", "error", "other"]


@attrs.frozen
class ToolCall:
    """One tool call requested by the model.

    ``arguments`` is whatever the provider gave: usually the raw JSON string
    (which may be malformed: the dispatcher reports that), sometimes a mapping.
    """

    id: str
    name: str
    arguments: str | Mapping[str, JSONValue] = "{}"

    def arguments_json(self) -> str:
        """The arguments as JSON text: a string exactly as given, a mapping as compact JSON.

        The form the transcript counts tokens of and OpenAI-style providers send.
        """
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(dict(self.arguments), ensure_ascii=False, separators=(",", ":"))


# The usage of a turn whose author stated none (one shared, immutable value, so
# a test adapter can tell "not stated" from an explicit ``Usage()``).
_UNSTATED_USAGE = Usage()


@attrs.frozen
class AssistantTurn:
    """One model reply, translated out of the provider's format."""

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = _UNSTATED_USAGE
    finish_reason: FinishReason = "stop"


@attrs.frozen
class Message:
    """One message of the compiled conversation.

    ``tool_call_id``/``name`` are set on tool results; ``is_error`` marks a
    failed tool result (Anthropic sends it as ``is_error``).
    """

    role: Role
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None
    is_error: bool = False
    metadata: JSONObject = attrs.field(factory=dict[str, JSONValue], eq=False, hash=False)
