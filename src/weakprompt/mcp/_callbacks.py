"""What a server may ask of the client: a model completion (sampling), the user (elicitation), progress."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Literal, cast

import attrs

from ..jsontypes import JSONObject
from ..messages import Message
from ..model import CompiledContext, ModelRequest, complete_async

if TYPE_CHECKING:
    import mcp.types as mcp_types

    from ..model import ProviderAdapter

__all__ = [
    "ElicitationAnswer",
    "ElicitationCallback",
    "ElicitationRequest",
    "McpProgress",
    "ProgressCallback",
    "answer_sampling",
]


@attrs.frozen
class McpProgress:
    """A progress notification the server sent while one of its tools ran."""

    tool: str
    progress: float
    total: float | None
    message: str | None


ProgressCallback = Callable[[McpProgress], object]
"""Called with each progress notification; an awaitable it returns is awaited."""


@attrs.frozen
class ElicitationRequest:
    """A server asking the user for input: a message and the JSON Schema of the answer it wants."""

    server: str
    message: str
    schema: JSONObject


@attrs.frozen
class ElicitationAnswer:
    """The user's answer: ``accept`` with ``content`` matching the schema, ``decline`` or ``cancel``."""

    action: Literal["accept", "decline", "cancel"]
    content: JSONObject | None = None


ElicitationCallback = Callable[[ElicitationRequest], "ElicitationAnswer | Awaitable[ElicitationAnswer]"]


def _sampling_text(content: object) -> str:
    blocks: list[object] = list(cast("list[object]", content)) if isinstance(content, list) else [content]
    parts: list[str] = []
    for block in blocks:
        text = getattr(block, "text", None)
        parts.append(text if isinstance(text, str) else f"[{getattr(block, 'type', 'content')} content]")
    return "\n".join(parts)


async def answer_sampling(
    adapter: ProviderAdapter, params: mcp_types.CreateMessageRequestParams
) -> mcp_types.CreateMessageResult:
    """Answer a server's ``sampling/createMessage`` with one completion from ``adapter``."""
    import mcp.types as mcp_types

    messages: list[Message] = []
    if params.system_prompt:
        messages.append(Message(role="system", content=params.system_prompt))
    for item in params.messages:
        role = "assistant" if item.role == "assistant" else "user"
        messages.append(Message(role=role, content=_sampling_text(item.content)))
    request = ModelRequest(
        context=CompiledContext(messages=tuple(messages)), max_output_tokens=params.max_tokens
    )
    turn = await complete_async(adapter, request)
    return mcp_types.CreateMessageResult(
        role="assistant",
        content=mcp_types.TextContent(type="text", text=turn.text),
        model=adapter.model,
        stop_reason="maxTokens" if turn.finish_reason == "length" else "endTurn",
    )
