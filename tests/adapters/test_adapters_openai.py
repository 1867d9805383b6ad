"""OpenAIAdapter through the official SDK, faked only at the HTTP transport."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import openai
import pytest
from openai.types.chat import ChatCompletion
from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming
from pydantic import TypeAdapter

from adapters_support import (
    ANSWER_TURN,
    FAST_RETRY,
    FIRST_PROMPT,
    SECOND_PROMPT,
    TOOL_TURN,
    TOOLS,
    USER,
    FakeServer,
    decode_openai_messages,
    get_weather,
    make_request,
    normalized,
    openai_completion_body,
    openai_error_body,
)
from weakprompt.adapters.openai import OpenAIAdapter, tool_choice_param, turn_from_chat_completion
from weakprompt.errors import (
    AuthenticationError,
    ConfigurationError,
    ContextLengthError,
    ProviderError,
    RateLimitError,
)
from weakprompt.messages import AssistantTurn, ToolCall, Usage
from weakprompt.model import ForceTool, ProviderAdapter

REQUEST_TYPE = TypeAdapter(CompletionCreateParamsNonStreaming)


def adapter_for(server: FakeServer, *, max_retries: int = 2, **options: Any) -> OpenAIAdapter:
    client = openai.OpenAI(
        api_key="sk-test",
        base_url="http://fake.test/v1",
        http_client=server.client(),
        max_retries=max_retries,
    )
    return OpenAIAdapter("gpt-test", client=client, **options)


def valid_request(body: dict[str, Any]) -> dict[str, Any]:
    """Every body the adapter sends must be a valid SDK request."""
    REQUEST_TYPE.validate_python(body)
    return body


def test_text_answer() -> None:
    server = FakeServer().reply(200, openai_completion_body(ANSWER_TURN))
    adapter = adapter_for(server)

    turn = adapter.complete(make_request(FIRST_PROMPT))

    assert turn == ANSWER_TURN
    body = valid_request(server.bodies()[0])
    assert body["model"] == "gpt-test"
    assert "tools" not in body and "tool_choice" not in body
    assert isinstance(adapter, ProviderAdapter)
    assert (adapter.name, adapter.model, adapter.token_counter) == ("openai", "gpt-test", None)


def test_tool_call_arguments_are_kept_raw_even_when_malformed() -> None:
    raw = '{"city": "Par'
    turn = AssistantTurn(
        tool_calls=(ToolCall(id="c9", name="get_weather", arguments=raw),),
        usage=Usage(input_tokens=5, output_tokens=3, model_calls=1),
        finish_reason="tool_calls",
    )
    server = FakeServer().reply(200, openai_completion_body(turn))

    result = adapter_for(server).complete(make_request([USER], tools=TOOLS))

    assert result.tool_calls == (ToolCall(id="c9", name="get_weather", arguments=raw),)
    assert result.finish_reason == "tool_calls"


def test_tools_are_sent_strict_with_the_serde_strict_schema() -> None:
    server = FakeServer().reply(200, openai_completion_body(TOOL_TURN))

    adapter_for(server).complete(make_request([USER], tools=TOOLS, tool_choice=ForceTool("get_weather")))

    body = valid_request(server.bodies()[0])
    assert body["tools"][0] == {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": get_weather.description,
            "parameters": get_weather.parameters_schema(strict=True),
            "strict": True,
        },
    }
    assert [t["function"]["name"] for t in body["tools"]] == ["get_weather", "search_notes"]
    assert body["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}


def test_non_strict_tools_have_no_strict_flag() -> None:
    server = FakeServer().reply(200, openai_completion_body(ANSWER_TURN))

    adapter_for(server, strict_tools=False).complete(make_request([USER], tools=[get_weather]))

    function = valid_request(server.bodies()[0])["tools"][0]["function"]
    assert "strict" not in function
    assert function["parameters"] == get_weather.parameters_schema()


@pytest.mark.parametrize(
    ("choice", "wire"),
    [
        ("auto", "auto"),
        ("required", "required"),
        ("none", "none"),
        (ForceTool("search_notes"), {"type": "function", "function": {"name": "search_notes"}}),
    ],
)
def test_tool_choice_mapping(choice: Any, wire: Any) -> None:
    assert tool_choice_param(choice) == wire
    server = FakeServer().reply(200, openai_completion_body(ANSWER_TURN))
    adapter_for(server).complete(make_request([USER], tools=TOOLS, tool_choice=choice))
    assert valid_request(server.bodies()[0])["tool_choice"] == wire


def test_structured_output_uses_a_json_schema_response_format() -> None:
    closed = {
        "type": "object",
        "properties": {"answer": {"type": "string"}},
        "required": ["answer"],
        "additionalProperties": False,
    }
    open_schema = {"type": "object", "properties": {"answer": {"type": "string"}}}
    server = FakeServer().always(200, openai_completion_body(ANSWER_TURN), 2)
    adapter = adapter_for(server, temperature=0.0, seed=7)

    adapter.complete(
        make_request([USER], output_schema=closed, output_name="Weather Report", max_output_tokens=50)
    )
    adapter.complete(make_request([USER], output_schema=open_schema))

    strict_body, loose_body = (valid_request(b) for b in server.bodies())
    assert strict_body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "Weather_Report", "schema": closed, "strict": True},
    }
    assert loose_body["response_format"]["json_schema"] == {
        "name": "output",
        "schema": open_schema,
        "strict": False,
    }
    assert (strict_body["max_completion_tokens"], strict_body["temperature"], strict_body["seed"]) == (
        50,
        0.0,
        7,
    )
    assert "max_completion_tokens" not in loose_body


def test_max_tokens_field_for_servers_without_max_completion_tokens() -> None:
    server = FakeServer().reply(200, openai_completion_body(ANSWER_TURN))
    adapter_for(server, max_tokens_field="max_tokens").complete(make_request([USER], max_output_tokens=12))
    body = valid_request(server.bodies()[0])
    assert body["max_tokens"] == 12 and "max_completion_tokens" not in body


def test_bad_tool_choice_fails_before_any_request() -> None:
    server = FakeServer()
    with pytest.raises(ConfigurationError, match="not in the request"):
        adapter_for(server).complete(make_request([USER], tools=[get_weather], tool_choice=ForceTool("nope")))
    assert server.requests == []


def test_round_trip_of_the_scripted_conversation() -> None:
    server = (
        FakeServer()
        .reply(200, openai_completion_body(TOOL_TURN))
        .reply(200, openai_completion_body(ANSWER_TURN))
    )
    adapter = adapter_for(server)

    first = adapter.complete(make_request(FIRST_PROMPT, tools=TOOLS, tool_choice=ForceTool("get_weather")))
    second = adapter.complete(make_request(SECOND_PROMPT, tools=TOOLS))

    assert (first, second) == (TOOL_TURN, ANSWER_TURN)
    sent = [decode_openai_messages(valid_request(b)["messages"]) for b in server.bodies()]
    assert normalized(sent[0]) == normalized(FIRST_PROMPT)
    assert normalized(sent[1]) == normalized(SECOND_PROMPT)


# ---------------------------------------------------------------- reading replies


def test_refusal_becomes_content_filter_text() -> None:
    body = openai_completion_body(ANSWER_TURN)
    body["choices"][0]["message"] = {
        "role": "assistant",
        "content": None,
        "refusal": "I can't help with that.",
    }
    turn = turn_from_chat_completion(ChatCompletion.model_validate(body))
    assert (turn.text, turn.finish_reason) == ("I can't help with that.", "content_filter")


def test_missing_usage_still_counts_one_call() -> None:
    body = openai_completion_body(ANSWER_TURN)
    del body["usage"]
    assert turn_from_chat_completion(ChatCompletion.model_validate(body)).usage == Usage(model_calls=1)


def test_unknown_finish_reason_and_cached_tokens() -> None:
    body = openai_completion_body(ANSWER_TURN)
    body["choices"][0]["finish_reason"] = "function_call"
    body["usage"]["prompt_tokens_details"] = {"cached_tokens": 30}
    turn = turn_from_chat_completion(ChatCompletion.model_validate(body))
    assert turn.finish_reason == "tool_calls"
    assert turn.usage.cached_input_tokens == 30


def test_a_completion_without_choices_is_a_provider_error() -> None:
    body = openai_completion_body(ANSWER_TURN)
    body["choices"] = []
    with pytest.raises(ProviderError, match="no choices"):
        turn_from_chat_completion(ChatCompletion.model_validate(body), provider="vllm")


# ---------------------------------------------------------------- errors


def test_401_is_an_authentication_error_with_the_providers_message() -> None:
    message = "Incorrect API key provided: sk-test."
    server = FakeServer().reply(401, openai_error_body(message, "invalid_request_error", "invalid_api_key"))

    with pytest.raises(AuthenticationError) as info:
        adapter_for(server).complete(make_request([USER]))

    assert message in str(info.value)
    assert (info.value.status_code, info.value.provider) == (401, "openai")
    assert len(server.requests) == 1  # never retried


def test_429_is_retried_by_the_sdk_then_a_rate_limit_error() -> None:
    body = openai_error_body("Rate limit reached for gpt-test.", "requests", "rate_limit_exceeded")
    server = FakeServer().always(429, body, 3, **FAST_RETRY)

    with pytest.raises(RateLimitError, match="Rate limit reached") as info:
        adapter_for(server, max_retries=2).complete(make_request([USER]))

    assert info.value.status_code == 429
    assert len(server.requests) == 3


def test_429_then_success_is_invisible() -> None:
    server = (
        FakeServer()
        .reply(429, openai_error_body("slow down", "requests"), **FAST_RETRY)
        .reply(200, openai_completion_body(ANSWER_TURN))
    )
    assert adapter_for(server).complete(make_request([USER])) == ANSWER_TURN
    assert len(server.requests) == 2


def test_context_length_exceeded_by_code() -> None:
    message = "This model's maximum context length is 8192 tokens. However, you requested 9000 tokens."
    server = FakeServer().reply(
        400, openai_error_body(message, "invalid_request_error", "context_length_exceeded")
    )

    with pytest.raises(ContextLengthError, match="8192") as info:
        adapter_for(server).complete(make_request([USER]))

    assert info.value.status_code == 400


def test_context_length_recognised_from_the_message_alone() -> None:
    server = FakeServer().reply(400, {"error": {"message": "prompt exceeds the context window", "type": "x"}})
    with pytest.raises(ContextLengthError):
        adapter_for(server).complete(make_request([USER]))


def test_other_bad_requests_are_provider_errors() -> None:
    server = FakeServer().reply(400, openai_error_body("Invalid 'messages[0].role'", "invalid_request_error"))
    with pytest.raises(ProviderError, match="Invalid 'messages") as info:
        adapter_for(server).complete(make_request([USER]))
    assert not isinstance(info.value, ContextLengthError)


def test_500_after_retries_is_a_provider_error() -> None:
    server = FakeServer().always(
        500, openai_error_body("The server had an error", "server_error"), 2, **FAST_RETRY
    )

    with pytest.raises(ProviderError, match="server had an error") as info:
        adapter_for(server, max_retries=1).complete(make_request([USER]))

    assert info.value.status_code == 500
    assert len(server.requests) == 2


def test_connection_failure_is_a_provider_error_without_status() -> None:
    server = FakeServer(fail_with=lambda request: httpx2.ConnectError("refused", request=request))

    with pytest.raises(ProviderError, match="Connection error") as info:
        adapter_for(server, max_retries=0).complete(make_request([USER]))

    assert info.value.status_code is None


def test_non_json_error_body_keeps_the_sdk_message() -> None:
    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(503, text="upstream unavailable")

    client = openai.OpenAI(
        api_key="k",
        base_url="http://fake.test/v1",
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
        max_retries=0,
    )
    with pytest.raises(ProviderError, match="upstream unavailable") as info:
        OpenAIAdapter("m", client=client).complete(make_request([USER]))
    assert info.value.status_code == 503


# ---------------------------------------------------------------- construction


def test_client_and_client_settings_together_are_refused() -> None:
    client = openai.OpenAI(api_key="k")
    with pytest.raises(ConfigurationError, match="base_url would be ignored"):
        OpenAIAdapter("m", client=client, base_url="http://x", max_retries=3)


def test_empty_model_name_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="model"):
        OpenAIAdapter("", client=openai.OpenAI(api_key="k"))


def test_builds_its_own_client_for_a_local_server_without_a_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    adapter = OpenAIAdapter(
        "m", base_url="http://127.0.0.1:9/v1", max_retries=0, timeout=1.5, context_window=2048
    )
    assert adapter.client.api_key == "not-needed"
    assert adapter.client.max_retries == 0
    assert str(adapter.client.base_url).startswith("http://127.0.0.1:9/v1")
    assert adapter.context_window == 2048


def test_missing_key_for_the_real_api_is_a_configuration_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ConfigurationError, match="api_key"):
        OpenAIAdapter("gpt-test")


def test_build_params_needs_no_network() -> None:
    adapter = OpenAIAdapter("m", client=openai.OpenAI(api_key="k"))
    params = adapter.build_params(make_request(FIRST_PROMPT, tools=[get_weather]))
    assert json.loads(json.dumps(params))["messages"][0] == {
        "role": "system",
        "content": FIRST_PROMPT[0].content,
    }
