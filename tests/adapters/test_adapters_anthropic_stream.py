"""AnthropicAdapter.stream through the official SDK's AsyncAnthropic, faked only at the HTTP transport.

The fake answers with the documented named server-sent events
(message_start, content_block_start / delta / stop, message_delta,
message_stop, ping, error), which the SDK decodes exactly as a real stream.
"""

from __future__ import annotations

import asyncio
from typing import Any

import anthropic
import attrs
import pytest
from anthropic.types.message_create_params import MessageCreateParamsStreaming
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter

from adapters_support import (
    ANSWER_TURN,
    FAST_RETRY,
    FIRST_PROMPT,
    TOOLS,
    USER,
    FakeServer,
    anthropic_error_body,
    anthropic_message_body,
    make_request,
)
from stream_support import (
    StreamServer,
    anthropic_stream_events,
    collect,
    collect_until_error,
    final_turn,
    of_type,
    sse_events,
    turns,
)
from weakprompt.adapters.anthropic import AnthropicAdapter
from weakprompt.errors import (
    ConfigurationError,
    ContextLengthError,
    ProviderConnectionError,
    ProviderError,
    RateLimitError,
)
from weakprompt.messages import AssistantTurn, ToolCall, Usage
from weakprompt.model import (
    ProviderAdapter,
    TextDelta,
    ToolCallDelta,
    ToolCallReady,
    ToolCallStarted,
    UsageReported,
    complete_async,
)
from weakprompt.parts import ReasoningPart, TextPart

STREAM_REQUEST_TYPE = TypeAdapter(MessageCreateParamsStreaming)

TOOL_TURN = AssistantTurn(
    text="Let me check both.",
    tool_calls=(
        ToolCall(id="toolu_01", name="get_weather", arguments={"city": "Paris", "unit": "celsius"}),
        ToolCall(id="toolu_02", name="search_notes", arguments={"query": "umbrella"}),
    ),
    usage=Usage(input_tokens=410, output_tokens=88, cached_input_tokens=300, model_calls=1),
    finish_reason="tool_calls",
)


def stream_adapter(server: StreamServer, *, max_retries: int = 2, **options: Any) -> AnthropicAdapter:
    client = anthropic.AsyncAnthropic(
        api_key="sk-ant-test",
        base_url="http://fake.test",
        http_client=server.async_client(),
        max_retries=max_retries,
    )
    return AnthropicAdapter("claude-test", async_client=client, **options)


def both_adapter(fake: FakeServer, server: StreamServer) -> AnthropicAdapter:
    sync = anthropic.Anthropic(
        api_key="k", base_url="http://fake.test", http_client=fake.client(), max_retries=0
    )
    async_ = anthropic.AsyncAnthropic(
        api_key="k", base_url="http://fake.test", http_client=server.async_client(), max_retries=0
    )
    return AnthropicAdapter("claude-test", client=sync, async_client=async_)


def test_text_streams_in_pieces_and_pings_are_ignored() -> None:
    server = StreamServer().stream(sse_events(*anthropic_stream_events(ANSWER_TURN)))
    adapter = stream_adapter(server)

    events = collect(adapter, make_request(FIRST_PROMPT))

    texts = of_type(events, TextDelta)
    assert len(texts) > 1 and "".join(t.text for t in texts) == ANSWER_TURN.text
    assert final_turn(events) == ANSWER_TURN
    body = STREAM_REQUEST_TYPE.validate_python(server.bodies()[0])
    assert body["stream"] is True and body["system"] == FIRST_PROMPT[0].content
    assert isinstance(adapter, ProviderAdapter)


def test_tool_use_blocks_complete_at_their_block_stop() -> None:
    server = StreamServer().stream(sse_events(*anthropic_stream_events(TOOL_TURN)))

    events = collect(stream_adapter(server), make_request([USER], tools=TOOLS))

    assert of_type(events, ToolCallStarted) == [
        ToolCallStarted(0, "toolu_01", "get_weather"),
        ToolCallStarted(1, "toolu_02", "search_notes"),
    ]
    kinds = [type(e).__name__ for e in events]
    first_ready = kinds.index("ToolCallReady")
    assert first_ready < kinds.index(
        "ToolCallStarted", kinds.index("ToolCallStarted") + 1
    )  # before call 2 starts
    assert of_type(events, ToolCallReady)[0] == ToolCallReady(0, TOOL_TURN.tool_calls[0])
    assert final_turn(events) == TOOL_TURN


def test_the_streamed_turn_equals_the_complete_turn_for_the_same_reply() -> None:
    thought = ReasoningPart("Let me think.", issuer="anthropic:claude-test", signature="c2ln")
    thinking_turn = attrs.evolve(TOOL_TURN, parts=(thought, TextPart(TOOL_TURN.text)))
    fake = FakeServer().reply(200, anthropic_message_body(thinking_turn))
    server = StreamServer().stream(sse_events(*anthropic_stream_events(thinking_turn)))
    adapter = both_adapter(fake, server)
    request = make_request([USER], tools=TOOLS, max_output_tokens=300)

    assert adapter.complete(request) == asyncio.run(complete_async(adapter, request)) == thinking_turn
    assert {k: v for k, v in server.bodies()[0].items() if k != "stream"} == fake.bodies()[0]


def test_arguments_are_decoded_once_into_the_object_a_whole_reply_gives() -> None:
    spaced = '{"city":   "Oslo",\n "unit": "celsius"}'
    events = [
        ("message_start", anthropic_stream_events(ANSWER_TURN)[0][1]),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "tool_use", "id": "t1", "name": "get_weather", "input": {}},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": spaced},
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 1,
                "content_block": {"type": "tool_use", "id": "t2", "name": "search_notes", "input": {}},
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 1}),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 2,
                "content_block": {"type": "tool_use", "id": "t3", "name": "search_notes", "input": {}},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 2,
                "delta": {"type": "input_json_delta", "partial_json": '{"query": '},
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 2}),
        ("message_stop", {"type": "message_stop"}),
    ]
    server = StreamServer().stream(sse_events(*events))

    streamed = collect(stream_adapter(server), make_request([USER], tools=TOOLS))

    assert of_type(streamed, ToolCallDelta)[0] == ToolCallDelta(0, spaced)  # pieces as sent
    calls = final_turn(streamed).tool_calls
    assert calls == (
        ToolCall("t1", "get_weather", {"city": "Oslo", "unit": "celsius"}),  # the input object
        ToolCall("t2", "search_notes", {}),  # no input at all
        ToolCall("t3", "search_notes", '{"query": '),  # does not parse: kept for the dispatcher to report
    )
    # each call holds its one decode already: the dispatcher and the wire read it, nobody parses again
    assert calls[0].decoded_arguments is calls[0].arguments
    assert type(calls[2].decoded_arguments).__name__ == "BadSyntax"
    assert final_turn(streamed).finish_reason == "other"  # no message_delta: no stop reason


def test_message_delta_usage_is_cumulative_and_replaces_the_start() -> None:
    events = anthropic_stream_events(ANSWER_TURN)
    delta = next(body for name, body in events if name == "message_delta")
    delta["usage"] = {
        "output_tokens": 40,
        "input_tokens": 70,
        "cache_read_input_tokens": 20,
        "cache_creation_input_tokens": 5,
    }
    server = StreamServer().stream(sse_events(*events))

    streamed = collect(stream_adapter(server), make_request([USER]))

    reports = of_type(streamed, UsageReported)
    assert reports[0].usage == Usage(input_tokens=70, output_tokens=1, model_calls=1)
    assert reports[-1].usage == Usage(
        input_tokens=95, output_tokens=40, cached_input_tokens=20, model_calls=1, cache_write_tokens=5
    )
    assert final_turn(streamed).usage == reports[-1].usage


@pytest.mark.parametrize(
    ("error", "kind", "words"),
    [
        (anthropic_error_body("overloaded_error", "Overloaded"), ProviderError, "overloaded_error"),
        (anthropic_error_body("rate_limit_error", "Slow down"), RateLimitError, "Slow down"),
        (
            anthropic_error_body("invalid_request_error", "prompt is too long: 210000 tokens"),
            ContextLengthError,
            "too long",
        ),
    ],
)
def test_an_error_event_mid_stream_is_a_typed_error(
    error: dict[str, Any], kind: type[Exception], words: str
) -> None:
    events = anthropic_stream_events(ANSWER_TURN)[:5]  # start, block start, ping, first text piece
    server = StreamServer().stream(sse_events(*events, ("error", error)))

    seen, raised = collect_until_error(stream_adapter(server), make_request([USER]))

    assert seen and isinstance(seen[-1], TextDelta)
    assert type(raised) is kind and words in str(raised)
    assert raised.status_code is None and raised.provider == "anthropic"  # type: ignore[attr-defined]


def test_a_connection_lost_mid_stream_is_a_provider_error() -> None:
    server = StreamServer().broken(sse_events(*anthropic_stream_events(ANSWER_TURN)[:5]))

    seen, raised = collect_until_error(stream_adapter(server, max_retries=0), make_request([USER]))

    assert of_type(seen, TextDelta)
    assert type(raised) is ProviderConnectionError and "the connection failed" in str(raised)
    assert "broke off before the reply was complete" in str(raised) and "http://fake.test" in str(raised)


def test_http_errors_before_the_stream_are_retried_then_typed() -> None:
    overloaded = anthropic_error_body("overloaded_error", "Overloaded")
    server = (
        StreamServer()
        .json(529, overloaded, **FAST_RETRY)
        .stream(sse_events(*anthropic_stream_events(ANSWER_TURN)))
    )
    assert final_turn(collect(stream_adapter(server), make_request([USER]))) == ANSWER_TURN

    failing = StreamServer().json(529, overloaded).json(529, overloaded)
    _, raised = collect_until_error(stream_adapter(failing, max_retries=1), make_request([USER]))
    assert type(raised) is ProviderError and raised.status_code == 529  # type: ignore[attr-defined]


def test_an_async_client_alone_is_refused_for_a_whole_reply() -> None:
    async_only = AnthropicAdapter("claude-test", async_client=anthropic.AsyncAnthropic(api_key="k"))
    with pytest.raises(ConfigurationError, match=r"complete\(\) needs an anthropic.Anthropic client"):
        async_only.complete(make_request([USER]))

    sync_only = AnthropicAdapter("claude-test", client=anthropic.Anthropic(api_key="k"))
    with pytest.raises(ConfigurationError, match=r"no anthropic.AsyncAnthropic client.*worker threads"):
        _ = sync_only.async_client


def test_built_clients_share_the_settings() -> None:
    adapter = AnthropicAdapter(
        "claude-test", api_key="k", base_url="http://fake.test", max_retries=5, timeout=2.0
    )

    assert isinstance(adapter.async_client, anthropic.AsyncAnthropic)
    for client in (adapter.client, adapter.async_client):
        assert (client.api_key, client.max_retries, client.timeout) == ("k", 0, 2.0)
        assert str(client.base_url).startswith("http://fake.test")
    assert adapter.retrier.policy.attempts == 6


def _anthropic_turns() -> st.SearchStrategy[AssistantTurn]:
    """Replies the Messages API can give: object arguments (the SDK's parsed input), a known stop reason."""

    def shape(turn: AssistantTurn) -> AssistantTurn:
        calls = tuple(
            ToolCall(
                c.id, c.name, dict(c.arguments) if not isinstance(c.arguments, str) else {"s": c.arguments}
            )
            for c in turn.tool_calls
        )
        finish = turn.finish_reason if turn.finish_reason != "other" else "stop"
        return AssistantTurn(text=turn.text, tool_calls=calls, usage=turn.usage, finish_reason=finish)

    return turns().map(shape)


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(_anthropic_turns(), st.booleans())
def test_any_streamed_reply_assembles_to_what_complete_returns(turn: AssistantTurn, thinking: bool) -> None:
    if thinking:
        thought = ReasoningPart("Hm, a plan.", issuer="anthropic:claude-test", signature="c2ln")
        turn = attrs.evolve(turn, parts=(thought, TextPart(turn.text)) if turn.text else (thought,))
    fake = FakeServer().reply(200, anthropic_message_body(turn))
    server = StreamServer().stream(sse_events(*anthropic_stream_events(turn)))
    adapter = both_adapter(fake, server)
    request = make_request([USER], tools=TOOLS)

    assert asyncio.run(complete_async(adapter, request)) == adapter.complete(request) == turn


def test_text_given_in_the_block_start_is_text_too() -> None:
    events = anthropic_stream_events(ANSWER_TURN)
    start = next(body for name, body in events if name == "content_block_start")
    start["content_block"]["text"] = "Well: "
    server = StreamServer().stream(sse_events(*events))

    streamed = collect(stream_adapter(server), make_request([USER]))

    assert of_type(streamed, TextDelta)[0] == TextDelta("Well: ")
    assert final_turn(streamed).text == "Well: " + ANSWER_TURN.text
