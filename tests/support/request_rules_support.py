"""Every SDK adapter, and the check that a request encodes for it: its provider's rules and the SDK's types.

Shared by the request-rules property test (generated transcripts) and the compaction property
test (requests of generated compacting sessions). Building a request runs the adapter's
``request_rules`` validator; the encoded request is then checked against the official SDK's own
request types.
"""

from __future__ import annotations

from typing import Any

import anthropic
import openai
from anthropic.types import MessageParam
from anthropic.types.message_create_params import MessageCreateParamsNonStreaming
from google import genai
from google.genai import types
from openai.types.chat import ChatCompletionMessageParam
from openai.types.responses import ResponseInputItemParam
from pydantic import TypeAdapter

from weakprompt.adapters import AnthropicAdapter, GeminiAdapter, OpenAIAdapter, OpenAIResponsesAdapter
from weakprompt.model import ModelRequest, ModelSettings

ANTHROPIC_MESSAGE = TypeAdapter(MessageParam)
ANTHROPIC_REQUEST = TypeAdapter(MessageCreateParamsNonStreaming)
CHAT_MESSAGE = TypeAdapter(ChatCompletionMessageParam)
RESPONSES_ITEM = TypeAdapter(ResponseInputItemParam)


def sdk_adapters() -> list[Any]:
    """Chat Completions, Responses (reasoning off and on), Anthropic (thinking off and on) and Gemini,
    each with foreign reasoning dropped and sent as text (what a FallbackAdapter between them sends)."""
    oa = openai.OpenAI(api_key="k", base_url="http://unused.test")
    claude = anthropic.Anthropic(api_key="k", base_url="http://unused.test")
    gemini = genai.Client(api_key="k")
    made: list[Any] = []
    for foreign in ("drop", "text"):
        made += [
            OpenAIAdapter("gpt-test", client=oa, foreign_reasoning=foreign),
            OpenAIResponsesAdapter("o4-test", client=oa, foreign_reasoning=foreign),
            OpenAIResponsesAdapter(
                "o4-test",
                client=oa,
                foreign_reasoning=foreign,
                settings=ModelSettings(reasoning_effort="low"),
            ),
            AnthropicAdapter("claude-test", client=claude, foreign_reasoning=foreign),
            AnthropicAdapter(
                "claude-test",
                client=claude,
                foreign_reasoning=foreign,
                settings=ModelSettings(thinking_budget=1024),
            ),
            GeminiAdapter("gemini-test", client=gemini, foreign_reasoning=foreign),
        ]
    return made


def check_sdk_shapes(adapter: Any, request: ModelRequest) -> None:
    """Encode ``request`` for ``adapter`` (which runs its rules) and check it against the SDK's own types."""
    if isinstance(adapter, GeminiAdapter):
        contents, _config = adapter.build_request(request)
        for content in contents:
            types.Content.model_validate(content.model_dump(exclude_none=True))
        return
    params = adapter.build_params(request)
    if isinstance(adapter, AnthropicAdapter):
        ANTHROPIC_REQUEST.validate_python(params)
        for message in params["messages"]:
            ANTHROPIC_MESSAGE.validate_python(message)
    elif isinstance(adapter, OpenAIResponsesAdapter):
        for item in params["input"]:
            RESPONSES_ITEM.validate_python(item)
    else:
        for message in params["messages"]:
            CHAT_MESSAGE.validate_python(message)
