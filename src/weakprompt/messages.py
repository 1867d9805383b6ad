"""Provider-neutral conversation data: what flows between transcript, loop and adapters.

Adapters translate these to and from their wire formats; nothing above the
adapter layer ever sees a provider's own message shape.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

import attrs

from .jsontypes import JSONObject, JSONValue

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


@attrs.frozen
class Usage:
    """Token usage of one or more model calls; adds up with ``+``."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    model_calls: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cached_input_tokens=self.cached_input_tokens + other.cached_input_tokens,
            model_calls=self.model_calls + other.model_calls,
        )


@attrs.frozen
class AssistantTurn:
    """One model reply, translated out of the provider's format."""

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = Usage()
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
