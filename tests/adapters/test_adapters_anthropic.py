"""AnthropicAdapter through the official SDK, faked only at the HTTP transport."""

from __future__ import annotations

from typing import Any

import anthropic
import pytest
from anthropic.types import Message as AnthropicMessage
from anthropic.types import MessageParam, ToolChoiceParam, ToolParam
from anthropic.types.message_create_params import MessageCreateParamsNonStreaming
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
    anthropic_error_body,
    anthropic_message_body,
    decode_anthropic_request,
    get_weather,
    make_request,
    normalized,
    normalized_turn,
)
from weakprompt.adapters.anthropic import AnthropicAdapter, tool_choice_param, turn_from_message
from weakprompt.errors import (
    AuthenticationError,
    ConfigurationError,
    ContextLengthError,
    ProviderError,
    RateLimitError,
)
from weakprompt.messages import AssistantTurn, Message, ToolCall, Usage
from weakprompt.model import ForceTool, ProviderAdapter

REQUEST_TYPE = TypeAdapter(MessageCreateParamsNonStreaming)
MESSAGE_TYPE = TypeAdapter(MessageParam)
TOOL_TYPE = TypeAdapter(ToolParam)
CHOICE_TYPE = TypeAdapter(ToolChoiceParam)


def adapter_for(server: FakeServer, *, max_retries: int = 2, **options: Any) -> AnthropicAdapter:
    client = anthropic.Anthropic(
        api_key="sk-ant-test",
        base_url="http://fake.test",
        http_client=server.client(),
        max_retries=max_retries,
    )
    return AnthropicAdapter("claude-test", client=client, **options)


def valid_request(body: dict[str, Any]) -> dict[str, Any]:
    """Every body the adapter builds must match the SDK's request types, part by part."""
    REQUEST_TYPE.validate_python(body)
    for message in body["messages"]:
        MESSAGE_TYPE.validate_python(message)
    for tool in body.get("tools", ()):
        TOOL_TYPE.validate_python(tool)
    if "tool_choice" in body:
        CHOICE_TYPE.validate_python(body["tool_choice"])
    return body


def test_text_answer() -> None:
    server = FakeServer().reply(200, anthropic_message_body(ANSWER_TURN))
    adapter = adapter_for(server)

    turn = adapter.complete(make_request(FIRST_PROMPT))

    assert turn == ANSWER_TURN
    body = valid_request(server.bodies()[0])
    assert body["system"] == FIRST_PROMPT[0].content
    assert body["messages"] == [{"role": "user", "content": USER.content}]
    assert body["max_tokens"] == 1024
    assert "tools" not in body
    assert isinstance(adapter, ProviderAdapter)
    assert (adapter.name, adapter.model, adapter.token_counter, adapter.context_window) == (
        "anthropic",
        "claude-test",
        None,
        None,
    )


def test_tool_use_becomes_a_call_with_the_parsed_input() -> None:
    server = FakeServer().reply(200, anthropic_message_body(TOOL_TURN))

    turn = adapter_for(server).complete(
        make_request([USER], tools=TOOLS, tool_choice=ForceTool("get_weather"))
    )

    (call,) = turn.tool_calls
    # the SDK's object is kept as it is, not re-encoded: the call decodes and encodes it once
    assert (call.id, call.name, call.arguments) == ("call_w1", "get_weather", {"city": "Paris"})
    assert call.decoded_arguments == {"city": "Paris"} and call.arguments_json() == '{"city":"Paris"}'
    assert turn.finish_reason == "tool_calls"
    body = valid_request(server.bodies()[0])
    assert body["tools"][0] == {
        "name": "get_weather",
        "description": get_weather.description,
        "input_schema": get_weather.parameters_schema(),
    }
    assert body["tool_choice"] == {"type": "tool", "name": "get_weather"}


@pytest.mark.parametrize(
    ("choice", "wire"),
    [
        ("auto", {"type": "auto"}),
        ("required", {"type": "any"}),
        ("none", {"type": "none"}),
        (ForceTool("search_notes"), {"type": "tool", "name": "search_notes"}),
    ],
)
def test_tool_choice_mapping(choice: Any, wire: dict[str, Any]) -> None:
    assert tool_choice_param(choice) == wire
    server = FakeServer().reply(200, anthropic_message_body(ANSWER_TURN))
    adapter_for(server).complete(make_request([USER], tools=TOOLS, tool_choice=choice))
    assert valid_request(server.bodies()[0])["tool_choice"] == wire


def test_strict_tools_send_the_strict_schema() -> None:
    server = FakeServer().reply(200, anthropic_message_body(ANSWER_TURN))
    adapter_for(server, strict_tools=True).complete(make_request([USER], tools=[get_weather]))
    body = valid_request(server.bodies()[0])
    assert body["tools"][0]["strict"] is True
    assert body["tools"][0]["input_schema"] == get_weather.parameters_schema(strict=True)


def test_failed_tool_results_carry_is_error() -> None:
    failed = Message(
        role="tool", content="city not found", tool_call_id="call_w1", name="get_weather", is_error=True
    )
    conversation = (*SECOND_PROMPT[:3], failed)
    server = FakeServer().reply(200, anthropic_message_body(ANSWER_TURN))

    adapter_for(server).complete(make_request(conversation, tools=TOOLS))

    body = valid_request(server.bodies()[0])
    last = body["messages"][-1]
    assert last["role"] == "user"
    assert last["content"] == [
        {"type": "tool_result", "tool_use_id": "call_w1", "content": "city not found", "is_error": True}
    ]


def test_structured_output_closed_schema_uses_the_output_format() -> None:
    closed = {
        "type": "object",
        "properties": {"answer": {"type": "string"}},
        "required": ["answer"],
        "additionalProperties": False,
    }
    server = FakeServer().reply(200, anthropic_message_body(ANSWER_TURN))

    adapter_for(server).complete(make_request(FIRST_PROMPT, output_schema=closed, max_output_tokens=64))

    body = valid_request(server.bodies()[0])
    assert body["output_config"] == {"format": {"type": "json_schema", "schema": closed}}
    assert body["system"] == FIRST_PROMPT[0].content
    assert body["max_tokens"] == 64


def test_structured_output_open_schema_is_asked_for_in_the_system_prompt() -> None:
    open_schema = {"type": "object", "properties": {"answer": {"type": "string"}}}
    server = FakeServer().always(200, anthropic_message_body(ANSWER_TURN), 2)
    adapter = adapter_for(server)

    adapter.complete(make_request(FIRST_PROMPT, output_schema=open_schema))
    adapter.complete(make_request([USER], output_schema=open_schema))

    with_system, without_system = (valid_request(b) for b in server.bodies())
    assert "output_config" not in with_system
    assert with_system["system"].startswith(FIRST_PROMPT[0].content + "\n\n")
    assert '"answer"' in with_system["system"]
    assert without_system["system"].startswith("Give your final answer as one JSON object")


def test_round_trip_of_the_scripted_conversation() -> None:
    server = (
        FakeServer()
        .reply(200, anthropic_message_body(TOOL_TURN))
        .reply(200, anthropic_message_body(ANSWER_TURN))
    )
    adapter = adapter_for(server)

    first = adapter.complete(make_request(FIRST_PROMPT, tools=TOOLS, tool_choice=ForceTool("get_weather")))
    second = adapter.complete(make_request(SECOND_PROMPT, tools=TOOLS))

    assert normalized_turn(first) == normalized_turn(TOOL_TURN)
    assert second == ANSWER_TURN
    sent = [decode_anthropic_request(valid_request(b)) for b in server.bodies()]
    assert normalized(sent[0]) == normalized(FIRST_PROMPT)
    assert normalized(sent[1]) == normalized(SECOND_PROMPT)


# ---------------------------------------------------------------- reading replies


def _message(**changes: Any) -> AnthropicMessage:
    body = anthropic_message_body(ANSWER_TURN)
    body.update(changes)
    return AnthropicMessage.model_validate(body)


def test_text_blocks_join_and_other_blocks_are_skipped() -> None:
    message = _message(
        content=[
            {"type": "thinking", "thinking": "hmm", "signature": "sig"},
            {"type": "text", "text": "Part one. "},
            {"type": "tool_use", "id": "t1", "name": "get_weather", "input": {"city": "Oslo"}},
            {"type": "text", "text": "Part two."},
        ],
        stop_reason="tool_use",
    )
    turn = turn_from_message(message)
    assert turn.text == "Part one. Part two."
    assert turn.tool_calls == (ToolCall(id="t1", name="get_weather", arguments={"city": "Oslo"}),)


@pytest.mark.parametrize(
    ("stop", "finish"),
    [
        ("end_turn", "stop"),
        ("stop_sequence", "stop"),
        ("max_tokens", "length"),
        ("refusal", "content_filter"),
        ("pause_turn", "other"),
        (None, "other"),
    ],
)
def test_stop_reason_mapping(stop: str | None, finish: str) -> None:
    assert turn_from_message(_message(stop_reason=stop)).finish_reason == finish


def test_usage_counts_cache_reads_and_writes_as_input() -> None:
    usage = {
        "input_tokens": 10,
        "output_tokens": 4,
        "cache_read_input_tokens": 100,
        "cache_creation_input_tokens": 20,
    }
    assert turn_from_message(_message(usage=usage)).usage == Usage(
        input_tokens=130, output_tokens=4, cached_input_tokens=100, model_calls=1, cache_write_tokens=20
    )


# ---------------------------------------------------------------- errors


def test_401_is_an_authentication_error() -> None:
    server = FakeServer().reply(401, anthropic_error_body("authentication_error", "invalid x-api-key"))

    with pytest.raises(AuthenticationError, match="invalid x-api-key") as info:
        adapter_for(server).complete(make_request([USER]))

    assert (info.value.status_code, info.value.provider) == (401, "anthropic")
    assert "authentication_error" in str(info.value)
    assert len(server.requests) == 1


def test_429_then_success_is_retried_by_the_sdk() -> None:
    server = (
        FakeServer()
        .reply(429, anthropic_error_body("rate_limit_error", "Number of requests exceeded"), **FAST_RETRY)
        .reply(200, anthropic_message_body(ANSWER_TURN))
    )

    assert adapter_for(server).complete(make_request([USER])) == ANSWER_TURN
    assert len(server.requests) == 2
    assert server.bodies()[0] == server.bodies()[1]


def test_429_past_the_retries_is_a_rate_limit_error() -> None:
    server = FakeServer().always(
        429, anthropic_error_body("rate_limit_error", "Number of requests exceeded"), 3, **FAST_RETRY
    )

    with pytest.raises(RateLimitError, match="Number of requests exceeded") as info:
        adapter_for(server, max_retries=2).complete(make_request([USER]))

    assert info.value.status_code == 429
    assert len(server.requests) == 3


@pytest.mark.parametrize(
    ("status", "kind", "message"),
    [(529, "overloaded_error", "Overloaded"), (500, "api_error", "Internal server error")],
)
def test_overloaded_and_server_errors_after_retries(status: int, kind: str, message: str) -> None:
    server = FakeServer().always(status, anthropic_error_body(kind, message), 2, **FAST_RETRY)

    with pytest.raises(ProviderError, match=message) as info:
        adapter_for(server, max_retries=1).complete(make_request([USER]))

    assert info.value.status_code == status
    assert not isinstance(info.value, RateLimitError)
    assert len(server.requests) == 2


def test_prompt_too_long_is_a_context_length_error() -> None:
    message = "prompt is too long: 210000 tokens > 200000 maximum"
    server = FakeServer().reply(400, anthropic_error_body("invalid_request_error", message))

    with pytest.raises(ContextLengthError, match="210000 tokens") as info:
        adapter_for(server).complete(make_request([USER]))

    assert info.value.status_code == 400
    assert len(server.requests) == 1


def test_request_too_large_is_a_context_length_error() -> None:
    server = FakeServer().reply(
        413, anthropic_error_body("request_too_large", "Request exceeds the maximum size")
    )
    with pytest.raises(ContextLengthError):
        adapter_for(server).complete(make_request([USER]))


def test_connection_failure_is_a_provider_error() -> None:
    import httpx2

    server = FakeServer(fail_with=lambda request: httpx2.ConnectError("refused", request=request))
    with pytest.raises(ProviderError, match="Connection error") as info:
        adapter_for(server, max_retries=0).complete(make_request([USER]))
    assert info.value.status_code is None


# ---------------------------------------------------------------- construction


def test_client_and_client_settings_together_are_refused() -> None:
    with pytest.raises(ConfigurationError, match="api_key would be ignored"):
        AnthropicAdapter("claude-test", client=anthropic.Anthropic(api_key="k"), api_key="other")


@pytest.mark.parametrize(("model", "max_tokens"), [("", 10), ("claude-test", 0)])
def test_bad_settings_are_refused(model: str, max_tokens: int) -> None:
    with pytest.raises(ConfigurationError):
        AnthropicAdapter(model, client=anthropic.Anthropic(api_key="k"), max_tokens=max_tokens)


def test_builds_its_own_client() -> None:
    adapter = AnthropicAdapter(
        "claude-test",
        api_key="k",
        base_url="http://fake.test",
        max_retries=5,
        timeout=2.0,
        context_window=200_000,
    )
    assert adapter.client.max_retries == 0  # the adapter retries, not the SDK
    assert adapter.retrier.policy.attempts == 6
    assert adapter.client.api_key == "k"
    assert adapter.context_window == 200_000


def test_round_trip_turn_through_the_wire_shape() -> None:
    turn = AssistantTurn(
        text="Let me check.",
        tool_calls=(
            ToolCall(id="a", name="x", arguments='{"n": 1}'),
            ToolCall(id="b", name="y", arguments="{}"),
        ),
        usage=Usage(input_tokens=3, output_tokens=2, model_calls=1),
        finish_reason="tool_calls",
    )
    back = turn_from_message(AnthropicMessage.model_validate(anthropic_message_body(turn)))
    assert normalized_turn(back) == normalized_turn(turn)


def test_a_tool_use_input_that_is_not_an_object_is_kept_as_its_json_text() -> None:
    # The API always sends an object; a message built without validation may not, and the
    # dispatcher then tells the model its arguments are not an object.
    message = _message(content=[{"type": "tool_use", "id": "t1", "name": "get_weather", "input": {}}])
    block = message.content[0]
    object.__setattr__(block, "input", ["Oslo"])
    (call,) = turn_from_message(message).tool_calls
    assert call.arguments == '["Oslo"]'
    assert type(call.decoded_arguments).__name__ == "NotAnObject"
