"""OpenAIResponsesAdapter through the official SDK's ``responses.create``, faked only at the HTTP transport.

Replies are the Responses API's documented shapes, whole (JSON) and streamed
(named server-sent events); every request is validated against the SDK's own
``ResponseCreateParams`` TypedDicts.
"""

from __future__ import annotations

import json
from typing import Any

import httpx2
import openai
import pytest
from openai.types.responses.response_create_params import (
    ResponseCreateParamsNonStreaming,
    ResponseCreateParamsStreaming,
)
from pydantic import TypeAdapter

from adapters_support import (
    FAST_RETRY,
    FIRST_PROMPT,
    SECOND_PROMPT,
    TOOLS,
    FakeServer,
    get_weather,
    make_request,
    openai_error_body,
)
from stream_support import StreamServer, collect, collect_until_error, final_turn, of_type, sse_events
from weakprompt.adapters import OpenAIResponsesAdapter
from weakprompt.adapters.error_mapping import from_error_body
from weakprompt.errors import (
    AuthenticationError,
    ConfigurationError,
    ContextLengthError,
    ProviderConnectionError,
    ProviderError,
    RateLimitError,
)
from weakprompt.messages import ToolCall, Usage
from weakprompt.model import ForceTool, ModelSettings, TextDelta, ToolCallDelta, ToolCallReady
from weakprompt.prompt import MarkdownSection, Prompt, PromptTemplate
from weakprompt.runtime.loop import evaluate
from weakprompt.session import Session

WHOLE = TypeAdapter(ResponseCreateParamsNonStreaming)
STREAMED = TypeAdapter(ResponseCreateParamsStreaming)
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
    "additionalProperties": False,
}


def usage_body(
    input_tokens: int = 30, output_tokens: int = 12, reasoning: int = 0, cached: int = 0
) -> dict[str, Any]:
    return {
        "input_tokens": input_tokens,
        "input_tokens_details": {"cached_tokens": cached, "cache_write_tokens": 0},
        "output_tokens": output_tokens,
        "output_tokens_details": {"reasoning_tokens": reasoning},
        "total_tokens": input_tokens + output_tokens,
    }


def message_item(text: str, *, refusal: bool = False) -> dict[str, Any]:
    content = (
        {"type": "refusal", "refusal": text}
        if refusal
        else {"type": "output_text", "text": text, "annotations": [], "logprobs": []}
    )
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [content],
    }


def call_item(call_id: str, name: str, arguments: str, item_id: str = "fc_1") -> dict[str, Any]:
    return {
        "id": item_id,
        "type": "function_call",
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
        "status": "completed",
    }


REASONING_ITEM = {"id": "rs_1", "type": "reasoning", "summary": [], "encrypted_content": "gAAAA..."}


def response_body(
    output: list[dict[str, Any]],
    *,
    status: str = "completed",
    usage: dict[str, Any] | None = None,
    incomplete: str | None = None,
    error: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "id": "resp_1",
        "object": "response",
        "created_at": 1780000000,
        "model": "gpt-test",
        "status": status,
        "error": error,
        "incomplete_details": {"reason": incomplete} if incomplete else None,
        "instructions": None,
        "output": output,
        "parallel_tool_calls": True,
        "temperature": 1.0,
        "top_p": 1.0,
        "tool_choice": "auto",
        "tools": [],
        "store": False,
        "usage": usage or usage_body(),
    }


def test_the_fake_replies_are_valid_responses() -> None:
    """The shapes fed to the SDK below validate as its own Response model."""
    from openai.types.responses import Response

    bodies = [
        response_body([REASONING_ITEM, message_item("hi")], usage=usage_body(reasoning=3, cached=1)),
        response_body([call_item("c", "get_weather", "{}")]),
        response_body([message_item("no", refusal=True)], status="incomplete", incomplete="content_filter"),
        response_body([], status="failed", error={"code": "server_error", "message": "boom"}),
    ]
    for body in bodies:
        Response.model_validate(body)


def adapter_for(server: FakeServer, **options: Any) -> OpenAIResponsesAdapter:
    client = openai.OpenAI(api_key="sk-test", base_url="https://api.test/v1", http_client=server.client())
    return OpenAIResponsesAdapter("gpt-test", client=client, **options)


def stream_adapter(server: StreamServer, **options: Any) -> OpenAIResponsesAdapter:
    client = openai.AsyncOpenAI(
        api_key="sk-test", base_url="https://api.test/v1", http_client=server.async_client()
    )
    return OpenAIResponsesAdapter("gpt-test", async_client=client, **options)


# ---------------------------------------------------------------- whole replies


def test_a_text_reply_is_read_and_the_request_is_valid_with_store_off() -> None:
    server = FakeServer().reply(200, response_body([REASONING_ITEM, message_item("Mild, 18 degrees.")]))
    adapter = adapter_for(server)

    turn = adapter.complete(make_request(FIRST_PROMPT))

    assert turn.text == "Mild, 18 degrees." and turn.finish_reason == "stop" and turn.tool_calls == ()
    assert turn.usage == Usage(input_tokens=30, output_tokens=12, model_calls=1)
    (body,) = server.bodies()
    assert server.requests[0].url.path == "/v1/responses"
    WHOLE.validate_python(body)
    assert body["store"] is False
    assert body["input"] == [
        {"type": "message", "role": "system", "content": FIRST_PROMPT[0].content},
        {"type": "message", "role": "user", "content": FIRST_PROMPT[1].content},
    ]


def test_function_calls_come_back_keyed_by_call_id_and_history_goes_as_items() -> None:
    server = FakeServer().reply(
        200,
        response_body(
            [REASONING_ITEM, call_item("call_w1", "get_weather", '{"city":"Paris"}')],
            usage=usage_body(reasoning=64, cached=10),
        ),
    )
    adapter = adapter_for(server)

    turn = adapter.complete(make_request(SECOND_PROMPT, tools=TOOLS))

    assert turn.tool_calls == (ToolCall(id="call_w1", name="get_weather", arguments='{"city":"Paris"}'),)
    assert turn.finish_reason == "tool_calls"
    assert turn.usage.cached_input_tokens == 10
    assert turn.usage.reasoning_tokens == 64
    (body,) = server.bodies()
    WHOLE.validate_python(body)
    assert body["input"][2:] == [
        {
            "type": "function_call",
            "call_id": "call_w1",
            "name": "get_weather",
            "arguments": '{"city":"Paris"}',
        },
        {"type": "function_call_output", "call_id": "call_w1", "output": "18 degrees celsius in Paris"},
    ]
    tool = body["tools"][0]
    assert tool["type"] == "function" and tool["name"] == "get_weather" and tool["strict"] is True
    assert body["tool_choice"] == "auto"


@pytest.mark.parametrize(
    ("choice", "sent"),
    [
        (ForceTool("get_weather"), {"type": "function", "name": "get_weather"}),
        ("required", "required"),
        ("none", "none"),
    ],
)
def test_tool_choice_is_sent_in_the_responses_shape(choice: Any, sent: Any) -> None:
    adapter = adapter_for(FakeServer())
    params = adapter.build_params(make_request(FIRST_PROMPT, tools=TOOLS, tool_choice=choice))
    WHOLE.validate_python(params)
    assert params.get("tool_choice") == sent


def test_store_can_be_turned_on() -> None:
    params = adapter_for(FakeServer(), store=True).build_params(make_request(FIRST_PROMPT))
    assert params.get("store") is True


def test_an_assistant_message_with_text_and_calls_keeps_both_in_order() -> None:
    from weakprompt.messages import Message

    said = Message(
        role="assistant",
        content="Let me look.",
        tool_calls=(ToolCall(id="c1", name="get_weather", arguments={"city": "Oslo"}),),
    )
    result = Message(role="tool", content="18 C", tool_call_id="c1", name="get_weather")
    params = adapter_for(FakeServer()).build_params(make_request((*FIRST_PROMPT, said, result)))
    WHOLE.validate_python(params)
    assert list(params["input"])[2:4] == [
        {"type": "message", "role": "assistant", "content": "Let me look."},
        {"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": '{"city":"Oslo"}'},
    ]


def test_a_response_without_usage_counts_one_call() -> None:
    body = {**response_body([message_item("ok")]), "usage": None}
    turn = adapter_for(FakeServer().reply(200, body)).complete(make_request(FIRST_PROMPT))
    assert (turn.usage, turn.metadata) == (Usage(model_calls=1), {})


def test_a_refusal_is_the_text_with_finish_reason_content_filter() -> None:
    server = FakeServer().reply(200, response_body([message_item("I can't help with that.", refusal=True)]))
    turn = adapter_for(server).complete(make_request(FIRST_PROMPT))
    assert (turn.text, turn.finish_reason) == ("I can't help with that.", "content_filter")


@pytest.mark.parametrize(
    ("reason", "finish"),
    [("max_output_tokens", "length"), ("content_filter", "content_filter"), (None, "other")],
)
def test_an_incomplete_response_gives_its_reason(reason: str | None, finish: str) -> None:
    body = response_body([message_item("Partial")], status="incomplete", incomplete=reason)
    turn = adapter_for(FakeServer().reply(200, body)).complete(make_request(FIRST_PROMPT))
    assert (turn.text, turn.finish_reason) == ("Partial", finish)


def test_a_failed_response_is_the_error_it_names() -> None:
    body = response_body([], status="failed", error={"code": "rate_limit_exceeded", "message": "slow down"})
    with pytest.raises(RateLimitError, match="slow down"):
        adapter_for(FakeServer().reply(200, body), retries=0).complete(make_request(FIRST_PROMPT))
    no_reason = response_body([], status="failed")
    with pytest.raises(ProviderError, match="gave no reason"):
        adapter_for(FakeServer().reply(200, no_reason), retries=0).complete(make_request(FIRST_PROMPT))


# ---------------------------------------------------------------- structured output


def test_native_output_is_a_json_schema_text_format() -> None:
    params = adapter_for(FakeServer()).build_params(
        make_request(FIRST_PROMPT, output_schema=SCHEMA, output_name="Weather report")
    )
    WHOLE.validate_python(params)
    assert params.get("text") == {
        "format": {"type": "json_schema", "name": "Weather_report", "schema": SCHEMA, "strict": True}
    }


def test_json_object_mode_sends_the_format_and_the_schema_instruction() -> None:
    adapter = adapter_for(FakeServer(), output_mode="json_object")
    params = adapter.build_params(make_request(FIRST_PROMPT, output_schema=SCHEMA))
    WHOLE.validate_python(params)
    assert params.get("text") == {"format": {"type": "json_object"}}
    assert "JSON Schema" in str(next(iter(params["input"])))


def test_tool_mode_answers_through_the_final_answer_call() -> None:
    server = FakeServer().reply(200, response_body([call_item("c9", "final_answer", '{"city":"Paris"}')]))
    adapter = adapter_for(server, output_mode="tool")
    turn = adapter.complete(make_request(FIRST_PROMPT, output_schema=SCHEMA))
    assert (turn.text, turn.tool_calls, turn.finish_reason) == ('{"city":"Paris"}', (), "stop")
    (body,) = server.bodies()
    WHOLE.validate_python(body)
    assert body["tool_choice"] == {"type": "function", "name": "final_answer"}
    assert body["tools"][0]["parameters"] == SCHEMA and "text" not in body


def test_auto_falls_back_from_json_schema_when_the_server_refuses_it() -> None:
    refusal = openai_error_body(
        "'text.format' of type 'json_schema' is not supported", "invalid_request_error"
    )
    server = FakeServer().reply(400, refusal).reply(200, response_body([message_item('{"city":"Paris"}')]))
    adapter = adapter_for(server, retries=0)
    turn = adapter.complete(make_request(FIRST_PROMPT, output_schema=SCHEMA))
    assert turn.text == '{"city":"Paris"}'
    assert [b.get("text") for b in server.bodies()] == [
        {"format": {"type": "json_schema", "name": "output", "schema": SCHEMA, "strict": True}},
        {"format": {"type": "json_object"}},
    ]


# ---------------------------------------------------------------- settings


def test_settings_map_onto_the_responses_fields() -> None:
    adapter = adapter_for(
        FakeServer(),
        settings=ModelSettings(temperature=0.2, top_p=0.9, reasoning_effort="low", service_tier="flex"),
    )
    request = make_request(
        FIRST_PROMPT,
        tools=TOOLS,
        settings=ModelSettings(
            max_output_tokens=300, parallel_tool_calls=False, extra={"truncation": "auto"}
        ),
    )
    params = adapter.build_params(request)
    WHOLE.validate_python({k: v for k, v in params.items() if k != "extra_body"})
    assert {
        k: params.get(k) for k in ("temperature", "top_p", "max_output_tokens", "parallel_tool_calls")
    } == {
        "temperature": 0.2,
        "top_p": 0.9,
        "max_output_tokens": 300,
        "parallel_tool_calls": False,
    }
    assert params.get("reasoning") == {"effort": "low", "summary": "auto"}
    assert params.get("include") == ["reasoning.encrypted_content"]
    assert params.get("service_tier") == "flex"
    assert params.get("extra_body") == {"truncation": "auto"}


def test_parallel_tool_calls_is_left_out_without_tools_and_the_request_limit_wins() -> None:
    adapter = adapter_for(
        FakeServer(), settings=ModelSettings(parallel_tool_calls=True, max_output_tokens=50)
    )
    params = adapter.build_params(make_request(FIRST_PROMPT, max_output_tokens=20))
    assert "parallel_tool_calls" not in params and params.get("max_output_tokens") == 20


def test_the_extra_fields_reach_the_wire_body() -> None:
    server = FakeServer().reply(200, response_body([message_item("ok")]))
    adapter_for(server, settings=ModelSettings(extra={"prompt_cache_key": "k1"})).complete(
        make_request(FIRST_PROMPT)
    )
    assert server.bodies()[0]["prompt_cache_key"] == "k1"


@pytest.mark.parametrize(
    "setting", [ModelSettings(stop=("END",)), ModelSettings(seed=3), ModelSettings(thinking_budget=512)]
)
def test_settings_the_responses_api_lacks_are_refused_by_name(setting: ModelSettings) -> None:
    (name,) = setting.chosen()
    with pytest.raises(
        ConfigurationError,
        match=f"OpenAIResponsesAdapter \\(gpt-test\\) does not support the model setting\\(s\\) {name}",
    ):
        adapter_for(FakeServer(), settings=setting)
    server = FakeServer()
    with pytest.raises(ConfigurationError, match=name):
        adapter_for(server).complete(make_request(FIRST_PROMPT, settings=setting))
    assert server.requests == []


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("status", "body", "error"),
    [
        (
            401,
            openai_error_body("Incorrect API key provided", "invalid_request_error", "invalid_api_key"),
            AuthenticationError,
        ),
        (429, openai_error_body("Rate limit reached", "requests", "rate_limit_exceeded"), RateLimitError),
        (500, openai_error_body("The server had an error", "server_error"), ProviderError),
        (
            400,
            openai_error_body(
                "Your input exceeds the context window of this model.",
                "invalid_request_error",
                "context_length_exceeded",
            ),
            ContextLengthError,
        ),
    ],
)
def test_http_errors_become_typed_adapter_errors(
    status: int, body: dict[str, Any], error: type[Exception]
) -> None:
    server = FakeServer().reply(status, body, **FAST_RETRY)
    with pytest.raises(error) as raised:
        adapter_for(server, retries=0).complete(make_request(FIRST_PROMPT))
    assert type(raised.value) is error


def test_a_rate_limit_is_retried_then_answered() -> None:
    server = FakeServer().reply(
        429, openai_error_body("slow", "requests", "rate_limit_exceeded"), **FAST_RETRY
    )
    server.reply(200, response_body([message_item("ok")]))
    assert adapter_for(server, retries=1).complete(make_request(FIRST_PROMPT)).text == "ok"


def test_constructor_checks() -> None:
    with pytest.raises(ConfigurationError, match="non-empty model name"):
        OpenAIResponsesAdapter("")
    with pytest.raises(ConfigurationError, match="base_url would be ignored"):
        OpenAIResponsesAdapter("m", client=openai.OpenAI(api_key="k"), base_url="http://x")
    async_only = OpenAIResponsesAdapter("m", async_client=openai.AsyncOpenAI(api_key="k"))
    with pytest.raises(ConfigurationError, match=r"complete\(\) needs an openai\.OpenAI client"):
        async_only.complete(make_request(FIRST_PROMPT))
    built = OpenAIResponsesAdapter("m", base_url="http://127.0.0.1:9/v1")
    assert built.client.max_retries == 0 and built.model == "m" and built.name == "openai"


def test_from_error_body_classifies_by_code_or_status() -> None:
    assert (
        type(from_error_body({"code": "rate_limit_exceeded", "message": "m"}, provider="p")) is RateLimitError
    )
    assert type(from_error_body({"message": "nope"}, provider="p", status=401)) is AuthenticationError
    assert from_error_body("plain text", provider="p", retry_after=2.0).retry_after == 2.0


# ---------------------------------------------------------------- streams


def stream_body(*events: dict[str, Any]) -> bytes:
    numbered = [{**event, "sequence_number": n} for n, event in enumerate(events)]
    return sse_events(*((event["type"], event) for event in numbered))


def created() -> dict[str, Any]:
    return {"type": "response.created", "response": response_body([], status="in_progress")}


def completed(output: list[dict[str, Any]], **options: Any) -> dict[str, Any]:
    kind = "response.incomplete" if options.get("status") == "incomplete" else "response.completed"
    return {"type": kind, "response": response_body(output, **options)}


def text_delta(piece: str) -> dict[str, Any]:
    return {
        "type": "response.output_text.delta",
        "item_id": "msg_1",
        "output_index": 1,
        "content_index": 0,
        "delta": piece,
        "logprobs": [],
    }


def call_events(output_index: int, call_id: str, name: str, pieces: list[str]) -> list[dict[str, Any]]:
    item_id = f"fc_{output_index}"
    started = {**call_item(call_id, name, "", item_id), "status": "in_progress"}
    events: list[dict[str, Any]] = [
        {"type": "response.output_item.added", "output_index": output_index, "item": started}
    ]
    events += [
        {
            "type": "response.function_call_arguments.delta",
            "item_id": item_id,
            "output_index": output_index,
            "delta": piece,
        }
        for piece in pieces
    ]
    done = call_item(call_id, name, "".join(pieces), item_id)
    events.append({"type": "response.output_item.done", "output_index": output_index, "item": done})
    return events


def test_a_streamed_text_reply_arrives_in_deltas_with_usage_and_reasoning_tokens() -> None:
    server = StreamServer().stream(
        stream_body(
            created(),
            text_delta("Mild, "),
            text_delta(""),
            text_delta("18 degrees."),
            completed([REASONING_ITEM, message_item("Mild, 18 degrees.")], usage=usage_body(reasoning=7)),
        )
    )
    events = collect(stream_adapter(server), make_request(FIRST_PROMPT))
    assert [e.text for e in of_type(events, TextDelta)] == ["Mild, ", "18 degrees."]
    turn = final_turn(events)
    assert (turn.text, turn.finish_reason) == ("Mild, 18 degrees.", "stop")
    assert turn.usage == Usage(input_tokens=30, output_tokens=12, model_calls=1, reasoning_tokens=7)
    (body,) = server.bodies()
    STREAMED.validate_python(body)
    assert body["stream"] is True and body["store"] is False


def test_streamed_parallel_calls_are_assembled_from_argument_deltas() -> None:
    server = StreamServer().stream(
        stream_body(
            created(),
            *call_events(1, "call_a", "get_weather", ['{"ci', 'ty":"Paris"}']),
            *call_events(2, "call_b", "get_weather", ['{"city":"Oslo"}']),
            completed(
                [
                    call_item("call_a", "get_weather", '{"city":"Paris"}'),
                    call_item("call_b", "get_weather", '{"city":"Oslo"}'),
                ]
            ),
        )
    )
    events = collect(stream_adapter(server), make_request(SECOND_PROMPT, tools=TOOLS))
    assert [e.arguments_delta for e in of_type(events, ToolCallDelta)] == [
        '{"ci',
        'ty":"Paris"}',
        '{"city":"Oslo"}',
    ]
    assert [e.call.id for e in of_type(events, ToolCallReady)] == ["call_a", "call_b"]
    turn = final_turn(events)
    assert turn.finish_reason == "tool_calls"
    assert [c.arguments for c in turn.tool_calls] == ['{"city":"Paris"}', '{"city":"Oslo"}']


def test_a_call_that_is_only_announced_when_done_is_still_read() -> None:
    done = call_item("call_z", "get_weather", '{"city":"Rome"}', "fc_3")
    server = StreamServer().stream(
        stream_body(
            created(),
            {"type": "response.output_item.done", "output_index": 3, "item": done},
            completed([done]),
        )
    )
    turn = final_turn(collect(stream_adapter(server), make_request(FIRST_PROMPT, tools=TOOLS)))
    assert turn.tool_calls == (ToolCall(id="call_z", name="get_weather", arguments='{"city":"Rome"}'),)


def test_a_call_still_open_at_the_end_is_closed_with_its_streamed_arguments() -> None:
    opened = call_events(0, "call_o", "get_weather", ['{"city":', '"Lima"}'])[:-1]  # no output_item.done
    server = StreamServer().stream(
        stream_body(created(), *opened, completed([], usage=usage_body(reasoning=5)))
    )
    events = collect(stream_adapter(server), make_request(FIRST_PROMPT, tools=TOOLS))
    turn = final_turn(events)
    assert turn.tool_calls == (ToolCall(id="call_o", name="get_weather", arguments='{"city":"Lima"}'),)
    assert turn.usage.reasoning_tokens == 5
    assert [e.call.id for e in of_type(events, ToolCallReady)] == ["call_o"]


def test_a_streamed_refusal_and_an_incomplete_end() -> None:
    refusal = {
        "type": "response.refusal.delta",
        "item_id": "msg_1",
        "output_index": 0,
        "content_index": 0,
        "delta": "No.",
    }
    server = StreamServer().stream(
        stream_body(created(), refusal, completed([], status="incomplete", incomplete="max_output_tokens"))
    )
    turn = final_turn(collect(stream_adapter(server), make_request(FIRST_PROMPT)))
    assert (turn.text, turn.finish_reason) == ("No.", "content_filter")


def test_a_stream_without_its_completed_event_broke_off() -> None:
    server = StreamServer().stream(stream_body(created(), text_delta("Mild")))
    _events, error = collect_until_error(stream_adapter(server, retries=0), make_request(FIRST_PROMPT))
    assert isinstance(error, ProviderConnectionError) and "no response.completed event came" in str(error)


def test_a_connection_lost_mid_stream_is_a_cut_stream() -> None:
    server = StreamServer().broken(stream_body(created(), text_delta("Mild")))
    _, error = collect_until_error(stream_adapter(server, retries=0), make_request(FIRST_PROMPT))
    assert isinstance(error, ProviderConnectionError) and "failed" in str(error)


def test_a_data_line_that_is_not_json_is_a_cut_stream() -> None:
    server = StreamServer().stream(b"event: response.created\ndata: {not json\n\n")
    _, error = collect_until_error(stream_adapter(server, retries=0), make_request(FIRST_PROMPT))
    assert isinstance(error, ProviderConnectionError) and "not JSON" in str(error)


def test_failed_and_error_events_are_typed_errors() -> None:
    failed = {
        "type": "response.failed",
        "response": response_body([], status="failed", error={"code": "server_error", "message": "boom"}),
    }
    server = StreamServer().stream(stream_body(created(), failed))
    _, error = collect_until_error(stream_adapter(server, retries=0), make_request(FIRST_PROMPT))
    assert type(error) is ProviderError and "boom" in str(error)
    error_event = {"type": "error", "code": "rate_limit_exceeded", "message": "slow down", "param": None}
    server = StreamServer().stream(stream_body(error_event))
    _, error = collect_until_error(stream_adapter(server, retries=0), make_request(FIRST_PROMPT))
    assert type(error) is RateLimitError


def test_an_http_error_before_the_stream_is_typed() -> None:
    server = StreamServer().json(
        401, openai_error_body("bad key", "invalid_request_error", "invalid_api_key")
    )
    _, error = collect_until_error(stream_adapter(server, retries=0), make_request(FIRST_PROMPT))
    assert type(error) is AuthenticationError


def test_a_sync_client_alone_streams_in_worker_threads() -> None:
    server = StreamServer().stream(stream_body(created(), text_delta("Hi"), completed([message_item("Hi")])))
    client = openai.OpenAI(api_key="sk", base_url="https://api.test/v1", http_client=server.sync_client())
    turn = final_turn(collect(OpenAIResponsesAdapter("gpt-test", client=client), make_request(FIRST_PROMPT)))
    assert turn.text == "Hi" and server.threads


# ---------------------------------------------------------------- through the loop


def test_a_tool_round_trip_through_evaluate() -> None:
    first = stream_body(
        created(),
        *call_events(0, "call_w1", "get_weather", ['{"city":"Paris"}']),
        completed([call_item("call_w1", "get_weather", '{"city":"Paris"}')]),
    )
    second = stream_body(
        created(), text_delta("18 degrees in Paris."), completed([message_item("18 degrees in Paris.")])
    )
    server = StreamServer().stream(first).stream(second)
    template: PromptTemplate[None] = PromptTemplate(
        ns="tests/responses",
        key="weather",
        sections=[
            MarkdownSection(title="Task", key="task", template="Weather in Paris?", tools=[get_weather])
        ],
    )
    response = evaluate(Prompt(template), adapter=stream_adapter(server), session=Session())
    assert response.text == "18 degrees in Paris."
    first_body, second_body = server.bodies()
    STREAMED.validate_python(first_body)
    STREAMED.validate_python(second_body)
    items = second_body["input"]
    assert items[-2] == {
        "type": "function_call",
        "call_id": "call_w1",
        "name": "get_weather",
        "arguments": '{"city":"Paris"}',
    }
    assert items[-1]["type"] == "function_call_output" and items[-1]["call_id"] == "call_w1"
    assert "18 degrees celsius in Paris" in items[-1]["output"]
    assert json.loads(items[-2]["arguments"]) == {"city": "Paris"}


def test_the_wire_request_carries_httpx2_json() -> None:
    """The fake transport is httpx2's, as the installed SDK uses."""
    assert isinstance(FakeServer().client(), httpx2.Client)
