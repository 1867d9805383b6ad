"""OpenAIAdapter.stream through the official SDK's AsyncOpenAI, faked only at the HTTP transport.

The fake answers with server-sent events in the documented chunk shapes
(``data: {...}`` blocks, ``data: [DONE]``), so the SDK decodes the stream
exactly as it would a real server's.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai.types.chat.completion_create_params import CompletionCreateParamsStreaming
from pydantic import TypeAdapter

from adapters_support import (
    ANSWER_TURN,
    FAST_RETRY,
    FIRST_PROMPT,
    TOOLS,
    USER,
    FakeServer,
    get_weather,
    make_request,
    openai_completion_body,
    openai_error_body,
)
from stream_support import (
    StreamServer,
    collect,
    collect_until_error,
    final_turn,
    of_type,
    openai_chunk,
    openai_stream_chunks,
    openai_usage_chunk,
    sse_data,
    turns,
)
from weakprompt.adapters.openai import OpenAIAdapter
from weakprompt.errors import (
    AuthenticationError,
    ConfigurationError,
    ContextLengthError,
    ProviderConnectionError,
    ProviderError,
    RateLimitError,
)
from weakprompt.messages import AssistantTurn, ToolCall, Usage
from weakprompt.model import (
    ForceTool,
    ProviderAdapter,
    TextDelta,
    ToolCallDelta,
    ToolCallReady,
    ToolCallStarted,
    UsageReported,
    complete_async,
)

STREAM_REQUEST_TYPE = TypeAdapter(CompletionCreateParamsStreaming)

PARALLEL_TURN = AssistantTurn(
    text="",
    tool_calls=(
        ToolCall(id="call_a", name="get_weather", arguments='{"city": "Paris"}'),
        ToolCall(id="call_b", name="search_notes", arguments='{"query": "umbrella", "limit": 2}'),
    ),
    usage=Usage(input_tokens=52, output_tokens=31, cached_input_tokens=12, model_calls=1),
    finish_reason="tool_calls",
)


def stream_adapter(server: StreamServer, *, max_retries: int = 2, **options: Any) -> OpenAIAdapter:
    client = openai.AsyncOpenAI(
        api_key="sk-test",
        base_url="http://fake.test/v1",
        http_client=server.async_client(),
        max_retries=max_retries,
    )
    return OpenAIAdapter("gpt-test", async_client=client, **options)


def both_adapter(fake: FakeServer, server: StreamServer) -> OpenAIAdapter:
    """One adapter whose complete() and stream() talk to the two fakes."""
    sync = openai.OpenAI(
        api_key="sk-test", base_url="http://fake.test/v1", http_client=fake.client(), max_retries=0
    )
    async_ = openai.AsyncOpenAI(
        api_key="sk-test", base_url="http://fake.test/v1", http_client=server.async_client(), max_retries=0
    )
    return OpenAIAdapter("gpt-test", client=sync, async_client=async_)


def test_text_streams_in_pieces_and_completes_with_the_whole_turn() -> None:
    server = StreamServer().stream(sse_data(*openai_stream_chunks(ANSWER_TURN), "[DONE]"))
    adapter = stream_adapter(server)

    events = collect(adapter, make_request(FIRST_PROMPT))

    texts = of_type(events, TextDelta)
    assert len(texts) > 1 and "".join(t.text for t in texts) == ANSWER_TURN.text
    assert of_type(events, UsageReported) == [UsageReported(ANSWER_TURN.usage)]
    assert final_turn(events) == ANSWER_TURN
    body = server.bodies()[0]
    STREAM_REQUEST_TYPE.validate_python(body)
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert isinstance(adapter, ProviderAdapter)


def test_parallel_tool_calls_with_interleaved_argument_pieces() -> None:
    chunks = openai_stream_chunks(PARALLEL_TURN, interleave=True)
    server = StreamServer().stream(sse_data(*chunks, "[DONE]"))

    events = collect(stream_adapter(server), make_request([USER], tools=TOOLS))

    assert of_type(events, ToolCallStarted) == [
        ToolCallStarted(0, "call_a", "get_weather"),
        ToolCallStarted(1, "call_b", "search_notes"),
    ]
    deltas = of_type(events, ToolCallDelta)
    assert [d.index for d in deltas[:4]] == [0, 1, 0, 1]  # the pieces really alternate
    ready_at = [i for i, e in enumerate(events) if isinstance(e, ToolCallReady)]
    last_delta_at = max(i for i, e in enumerate(events) if isinstance(e, ToolCallDelta))
    assert ready_at and min(ready_at) > last_delta_at  # nothing is complete before the choice finishes
    assert final_turn(events) == PARALLEL_TURN
    assert final_turn(events).usage.cached_input_tokens == 12


def test_the_streamed_turn_equals_the_complete_turn_for_the_same_reply() -> None:
    fake = FakeServer().reply(200, openai_completion_body(PARALLEL_TURN))
    server = StreamServer().stream(sse_data(*openai_stream_chunks(PARALLEL_TURN), "[DONE]"))
    adapter = both_adapter(fake, server)
    request = make_request([USER], tools=TOOLS, tool_choice="required")

    assert adapter.complete(request) == asyncio.run(complete_async(adapter, request)) == PARALLEL_TURN
    streamed_body = server.bodies()[0]
    assert {k: v for k, v in streamed_body.items() if k not in ("stream", "stream_options")} == fake.bodies()[
        0
    ]


def test_servers_that_repeat_the_id_and_name_on_every_piece() -> None:
    # llama.cpp's server sends the whole call header with each argument piece.
    header = {"index": 0, "id": "call_x", "type": "function"}
    chunks = [
        openai_chunk({"role": "assistant", "content": None}),
        openai_chunk(
            {"tool_calls": [{**header, "function": {"name": "get_weather", "arguments": '{"city":'}}]}
        ),
        openai_chunk(
            {"tool_calls": [{**header, "function": {"name": "get_weather", "arguments": ' "Rome"}'}}]}
        ),
        openai_chunk({}, "tool_calls"),
    ]
    server = StreamServer().stream(sse_data(*chunks, "[DONE]"))

    turn = final_turn(collect(stream_adapter(server, stream_usage=False), make_request([USER], tools=TOOLS)))

    assert turn.tool_calls == (ToolCall("call_x", "get_weather", '{"city": "Rome"}'),)
    assert turn.usage == Usage(model_calls=1)  # no usage chunk: one call, no tokens
    assert "stream_options" not in server.bodies()[0]


def test_whitespace_before_a_tool_call_stays_the_text_of_a_tool_call_turn() -> None:
    turn = AssistantTurn(
        text="\n\n",
        tool_calls=(ToolCall("c1", "get_weather", '{"city":"Oslo"}'),),
        usage=Usage(input_tokens=3, output_tokens=2, model_calls=1),
        finish_reason="tool_calls",
    )
    server = StreamServer().stream(sse_data(*openai_stream_chunks(turn), "[DONE]"))

    assert final_turn(collect(stream_adapter(server), make_request([USER], tools=TOOLS))) == turn


def test_a_stream_that_ends_without_finish_reason_is_cut_off_even_after_done() -> None:
    chunks = openai_stream_chunks(ANSWER_TURN, finish=False, usage=False)
    server = StreamServer().stream(sse_data(*chunks, "[DONE]"))

    seen, raised = collect_until_error(stream_adapter(server, max_retries=0), make_request([USER]))

    assert "".join(t.text for t in of_type(seen, TextDelta)) == ANSWER_TURN.text
    assert isinstance(raised, ProviderConnectionError) and "no chunk gave a finish reason" in str(raised)


def test_a_streamed_refusal_becomes_the_text_with_content_filter() -> None:
    chunks = [
        openai_chunk({"role": "assistant", "content": None, "refusal": "I can't "}),
        openai_chunk({"refusal": "help with that."}),
        openai_chunk({}, "stop"),
    ]
    server = StreamServer().stream(sse_data(*chunks, "[DONE]"))

    events = collect(stream_adapter(server), make_request([USER]))

    assert of_type(events, TextDelta) == [TextDelta("I can't help with that.")]
    assert final_turn(events).finish_reason == "content_filter"


def test_other_choices_and_unknown_finish_reasons() -> None:
    other = openai_chunk({"content": "ignored"})
    other["choices"][0]["index"] = 1
    chunks = [openai_chunk({"content": "kept"}), other, openai_chunk({}, "stop")]
    chunks[-1]["choices"][0]["finish_reason"] = "something_new"
    server = StreamServer().stream(sse_data(*chunks, "[DONE]"))

    turn = final_turn(collect(stream_adapter(server), make_request([USER])))

    assert (turn.text, turn.finish_reason) == ("kept", "other")


def test_an_error_chunk_mid_stream_is_a_provider_error_after_the_events_so_far() -> None:
    error = {
        "error": {"message": "The server had an error while processing your request.", "type": "server_error"}
    }
    server = StreamServer().stream(sse_data(openai_chunk({"content": "It is "}), error))

    seen, raised = collect_until_error(stream_adapter(server), make_request([USER]))

    assert seen == [TextDelta("It is ")]
    assert type(raised) is ProviderError
    assert raised.status_code is None and raised.provider == "openai"
    assert "server_error" in str(raised) and "while processing your request" in str(raised)


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        (
            {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"},
            RateLimitError,
        ),
        (
            {"message": "too long", "type": "invalid_request_error", "code": "context_length_exceeded"},
            ContextLengthError,
        ),
        (
            {"message": "Incorrect API key", "type": "invalid_request_error", "code": "invalid_api_key"},
            AuthenticationError,
        ),
    ],
)
def test_error_chunks_are_classified_by_their_type_and_code(
    error: dict[str, Any], kind: type[Exception]
) -> None:
    server = StreamServer().stream(sse_data({"error": error}))

    # max_retries=0: an in-stream rate limit before any content would otherwise be retried
    _, raised = collect_until_error(stream_adapter(server, max_retries=0), make_request([USER]))

    assert type(raised) is kind


def test_a_connection_lost_mid_stream_is_a_provider_error() -> None:
    server = StreamServer().broken(sse_data(openai_chunk({"role": "assistant", "content": "Half"})))

    seen, raised = collect_until_error(stream_adapter(server, max_retries=0), make_request([USER]))

    assert seen == [TextDelta("Half")]
    assert isinstance(raised, ProviderError) and "Connection error" in str(raised)
    assert "http://fake.test/v1/chat/completions" in str(raised)


def test_http_errors_before_the_stream_keep_their_types() -> None:
    server = StreamServer().json(
        401, openai_error_body("Incorrect API key provided", "invalid_request_error")
    )
    _, raised = collect_until_error(stream_adapter(server), make_request([USER]))
    assert type(raised) is AuthenticationError and raised.status_code == 401


def test_the_sdk_retries_a_rate_limited_stream_then_streams() -> None:
    server = (
        StreamServer()
        .json(429, openai_error_body("Rate limit reached", "requests", "rate_limit_exceeded"), **FAST_RETRY)
        .stream(sse_data(*openai_stream_chunks(ANSWER_TURN), "[DONE]"))
    )

    assert final_turn(collect(stream_adapter(server), make_request([USER]))) == ANSWER_TURN
    assert len(server.requests) == 2


def test_forced_tool_and_structured_output_options_reach_the_streamed_request() -> None:
    server = StreamServer().stream(sse_data(*openai_stream_chunks(ANSWER_TURN), "[DONE]"))
    schema = {
        "type": "object",
        "properties": {"a": {"type": "string"}},
        "required": ["a"],
        "additionalProperties": False,
    }

    collect(
        stream_adapter(server),
        make_request([USER], tools=[get_weather], tool_choice=ForceTool("get_weather"), output_schema=schema),
    )

    body = STREAM_REQUEST_TYPE.validate_python(server.bodies()[0])
    assert body["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}
    assert body["response_format"]["type"] == "json_schema"


def test_an_async_client_alone_is_refused_for_a_whole_reply() -> None:
    async_only = OpenAIAdapter("gpt-test", async_client=openai.AsyncOpenAI(api_key="k"))
    with pytest.raises(ConfigurationError, match=r"complete\(\) needs an openai.OpenAI client.*pass client="):
        async_only.complete(make_request([USER]))

    sync_only = OpenAIAdapter("gpt-test", client=openai.OpenAI(api_key="k"))
    with pytest.raises(ConfigurationError, match=r"no openai.AsyncOpenAI client.*worker threads"):
        _ = sync_only.async_client


def test_an_async_client_with_settings_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="base_url would be ignored"):
        OpenAIAdapter("gpt-test", async_client=openai.AsyncOpenAI(api_key="k"), base_url="http://x.test")


def test_built_clients_share_the_settings() -> None:
    adapter = OpenAIAdapter("m", base_url="http://compatible.test/v1", max_retries=0, timeout=7)

    for client in (adapter.client, adapter.async_client):
        assert str(client.base_url).startswith("http://compatible.test/v1")
        assert (client.api_key, client.max_retries, client.timeout) == ("not-needed", 0, 7)
    assert isinstance(adapter.async_client, openai.AsyncOpenAI)


def test_stream_usage_chunk_alone() -> None:
    usage = Usage(input_tokens=9, output_tokens=0, model_calls=1)
    server = StreamServer().stream(sse_data(openai_chunk({}, "stop"), openai_usage_chunk(usage), "[DONE]"))

    assert final_turn(collect(stream_adapter(server), make_request([USER]))) == AssistantTurn(usage=usage)


def _openai_turns() -> st.SearchStrategy[AssistantTurn]:
    """Replies an OpenAI server can give: raw string arguments, ids present, a known finish reason."""

    def shape(turn: AssistantTurn) -> AssistantTurn:
        calls = tuple(ToolCall(c.id, c.name, c.arguments_json()) for c in turn.tool_calls)
        finish = turn.finish_reason if turn.finish_reason in ("stop", "tool_calls", "length") else "stop"
        return AssistantTurn(text=turn.text, tool_calls=calls, usage=turn.usage, finish_reason=finish)

    return turns().map(shape)


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(_openai_turns(), st.booleans())
def test_any_streamed_reply_assembles_to_what_complete_returns(turn: AssistantTurn, interleave: bool) -> None:
    fake = FakeServer().reply(200, openai_completion_body(turn))
    server = StreamServer().stream(sse_data(*openai_stream_chunks(turn, interleave=interleave), "[DONE]"))
    adapter = both_adapter(fake, server)
    request = make_request([USER], tools=TOOLS)

    assert asyncio.run(complete_async(adapter, request)) == adapter.complete(request) == turn


def test_chunk_arguments_are_kept_raw_even_when_malformed() -> None:
    raw = '{"city": "Par'
    turn = AssistantTurn(tool_calls=(ToolCall("c9", "get_weather", raw),), finish_reason="tool_calls")
    server = StreamServer().stream(sse_data(*openai_stream_chunks(turn, usage=False), "[DONE]"))

    streamed = final_turn(collect(stream_adapter(server), make_request([USER], tools=TOOLS)))

    assert streamed.tool_calls == (ToolCall("c9", "get_weather", raw),)
    assert json.dumps(raw)  # the text is passed on untouched, for the dispatcher to report


@pytest.mark.parametrize("body", [b"", sse_data("[DONE]")])
def test_a_stream_with_no_chunk_at_all_is_a_provider_error(body: bytes) -> None:
    server = StreamServer().stream(body)

    seen, raised = collect_until_error(stream_adapter(server), make_request([USER]))

    assert seen == []
    assert type(raised) is ProviderError and "ended before any chunk arrived" in str(raised)
