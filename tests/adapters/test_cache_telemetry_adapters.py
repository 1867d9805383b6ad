"""Cache writes from OpenAI's usage details, through the official SDK: Chat Completions, Responses, chunks."""

from __future__ import annotations

from typing import Any

import openai
import pytest

from adapters_support import FakeServer, make_request, openai_completion_body
from weakprompt.adapters.openai import OpenAIAdapter
from weakprompt.adapters.openai_responses import OpenAIResponsesAdapter
from weakprompt.adapters.testing import text_turn
from weakprompt.adapters.wire.openai_chunks import chat_usage
from weakprompt.messages import Message, Usage

USER = [Message("user", "Hi")]


def _client(server: FakeServer) -> openai.OpenAI:
    return openai.OpenAI(
        api_key="sk-test", base_url="http://fake.test/v1", http_client=server.client(), max_retries=0
    )


def test_chat_completions_report_cache_reads_and_writes() -> None:
    body = openai_completion_body(text_turn("Hello."))
    body["usage"]["prompt_tokens_details"] = {"cached_tokens": 30, "cache_write_tokens": 12}
    adapter = OpenAIAdapter("gpt-test", client=_client(FakeServer().reply(200, body)))

    usage = adapter.complete(make_request(USER)).usage

    assert (usage.cached_input_tokens, usage.cache_write_tokens) == (30, 12)


def _response(details: dict[str, Any]) -> dict[str, Any]:
    message = {"type": "output_text", "text": "Hello.", "annotations": [], "logprobs": []}
    return {
        "id": "resp_1",
        "object": "response",
        "created_at": 1780000000,
        "model": "gpt-test",
        "status": "completed",
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "output": [
            {"id": "m", "type": "message", "role": "assistant", "status": "completed", "content": [message]}
        ],
        "parallel_tool_calls": True,
        "temperature": 1.0,
        "top_p": 1.0,
        "tool_choice": "auto",
        "tools": [],
        "store": False,
        "usage": {
            "input_tokens": 900,
            "input_tokens_details": details,
            "output_tokens": 3,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 903,
        },
    }


@pytest.mark.parametrize(
    ("details", "expected"),
    [
        ({"cached_tokens": 800, "cache_write_tokens": 64}, (800, 64)),
        ({"cached_tokens": 800}, (800, 0)),  # a server that does not report writes yet
    ],
)
def test_responses_report_cache_reads_and_writes(details: dict[str, Any], expected: tuple[int, int]) -> None:
    server = FakeServer().reply(200, _response(details))
    adapter = OpenAIResponsesAdapter("gpt-test", client=_client(server))

    usage = adapter.complete(make_request(USER)).usage

    assert (usage.cached_input_tokens, usage.cache_write_tokens) == expected


def test_a_streamed_chat_usage_chunk_reports_cache_writes() -> None:
    raw = {
        "prompt_tokens": 50,
        "completion_tokens": 2,
        "prompt_tokens_details": {"cached_tokens": 40, "cache_write_tokens": 8},
    }
    assert chat_usage(raw) == Usage(50, 2, cached_input_tokens=40, model_calls=1, cache_write_tokens=8)
    assert chat_usage({"prompt_tokens": 5, "completion_tokens": 1}) == Usage(5, 1, model_calls=1)
