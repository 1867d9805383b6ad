"""GeminiAdapter through the official google-genai SDK, faked only at the HTTP transport.

google-genai speaks httpx2 when given httpx2 clients (``HttpOptions(httpx_client=...,
httpx_async_client=...)``), so the fakes are the same httpx2.MockTransport servers as
for the other SDKs. Replies are the Gemini API's documented ``generateContent`` shapes,
whole (JSON) and streamed (``streamGenerateContent?alt=sse``); the contents sent are
validated against the SDK's own ``Content`` model.
"""

from __future__ import annotations

import base64
from typing import Any

import pytest
from google import genai
from google.genai import types

from adapters_support import (
    FIRST_PROMPT,
    SECOND_PROMPT,
    TOOLS,
    FakeServer,
    get_weather,
    make_request,
)
from stream_support import StreamServer, collect, collect_until_error, final_turn, of_type, sse_data
from weakprompt.adapters import GeminiAdapter
from weakprompt.adapters.gemini import gemini_contents, gemini_error, gemini_schema
from weakprompt.errors import (
    AdapterError,
    AuthenticationError,
    ConfigurationError,
    ContextLengthError,
    ProviderConnectionError,
    ProviderError,
    RateLimitError,
)
from weakprompt.messages import Message, ToolCall, Usage
from weakprompt.model import ForceTool, ModelSettings, TextDelta, ToolCallReady
from weakprompt.parts import ReasoningPart
from weakprompt.prompt import MarkdownSection, Prompt, PromptTemplate
from weakprompt.runtime.loop import evaluate
from weakprompt.session import Session

SIGNATURE = base64.b64encode(b"opaque thought signature").decode()
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"city": {"type": "string", "default": "Paris", "pattern": "^[A-Z]"}},
    "required": ["city"],
    "additionalProperties": False,
}


def usage_body(prompt: int = 20, candidates: int = 6, thoughts: int = 0, cached: int = 0) -> dict[str, Any]:
    body = {
        "promptTokenCount": prompt,
        "candidatesTokenCount": candidates,
        "totalTokenCount": prompt + candidates + thoughts,
    }
    if thoughts:
        body["thoughtsTokenCount"] = thoughts
    if cached:
        body["cachedContentTokenCount"] = cached
    return body


def reply(
    parts: list[dict[str, Any]], finish: str | None = "STOP", usage: dict[str, Any] | None = None
) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
    if finish is not None:
        candidate["finishReason"] = finish
    body: dict[str, Any] = {"candidates": [candidate], "modelVersion": "gemini-test", "responseId": "r-1"}
    if usage is not False:
        body["usageMetadata"] = usage or usage_body()
    return body


def call_part(
    name: str, args: dict[str, Any], call_id: str | None = None, signature: str | None = None
) -> dict[str, Any]:
    call: dict[str, Any] = {"name": name, "args": args}
    if call_id is not None:
        call["id"] = call_id
    part: dict[str, Any] = {"functionCall": call}
    if signature is not None:
        part["thoughtSignature"] = signature
    return part


def error_body(code: int, status: str, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "status": status}}


def client_for(server: FakeServer | None = None, streams: StreamServer | None = None) -> genai.Client:
    options = types.HttpOptions(base_url="https://gemini.test")
    if server is not None:
        options.httpx_client = server.client()
    if streams is not None:
        options.httpx_async_client = streams.async_client()
    return genai.Client(api_key="test-key", http_options=options)


def adapter_for(server: FakeServer, **options: Any) -> GeminiAdapter:
    return GeminiAdapter("gemini-test", client=client_for(server), **options)


def stream_adapter(server: StreamServer, **options: Any) -> GeminiAdapter:
    return GeminiAdapter("gemini-test", client=client_for(streams=server), **options)


def sent_contents(body: dict[str, Any]) -> list[types.Content]:
    return [types.Content.model_validate(content) for content in body["contents"]]


# ---------------------------------------------------------------- whole replies


def test_a_text_reply_and_the_request_it_came_from() -> None:
    server = FakeServer().reply(
        200, reply([{"text": "Mild, "}, {"text": "thinking...", "thought": True}, {"text": "18 degrees."}])
    )
    turn = adapter_for(server).complete(make_request(FIRST_PROMPT))
    assert (turn.text, turn.finish_reason, turn.tool_calls) == ("Mild, 18 degrees.", "stop", ())
    assert turn.usage == Usage(input_tokens=20, output_tokens=6, model_calls=1)
    assert server.requests[0].url.path == "/v1/models/gemini-test:generateContent"
    (body,) = server.bodies()
    assert body["systemInstruction"]["parts"] == [{"text": FIRST_PROMPT[0].content}]
    assert [c.role for c in sent_contents(body)] == ["user"]
    assert "tools" not in body


def test_function_calls_keep_their_thought_signature_and_go_back_with_it() -> None:
    server = FakeServer().reply(
        200,
        reply(
            [
                call_part("get_weather", {"city": "Paris"}, "fc-1", SIGNATURE),
                call_part("get_weather", {"city": "Oslo"}, "fc-2"),
            ],
            usage=usage_body(thoughts=40, cached=5),
        ),
    )
    adapter = adapter_for(server)
    turn = adapter.complete(make_request(FIRST_PROMPT, tools=TOOLS))
    assert turn.finish_reason == "tool_calls"
    assert turn.tool_calls == (
        ToolCall(id="fc-1", name="get_weather", arguments={"city": "Paris"}),
        ToolCall(id="fc-2", name="get_weather", arguments={"city": "Oslo"}),
    )
    assert turn.usage == Usage(
        input_tokens=20, output_tokens=46, cached_input_tokens=5, model_calls=1, reasoning_tokens=40
    )
    assert turn.reasoning == (ReasoningPart(issuer="gemini:gemini-test", signature=SIGNATURE, id="fc-1"),)

    said = Message(role="assistant", content="", tool_calls=turn.tool_calls, parts=turn.parts)
    results = [
        Message(role="tool", content="18 C", tool_call_id="fc-1", name="get_weather"),
        Message(role="tool", content="no such city", tool_call_id="fc-2", is_error=True),
    ]
    _, contents = gemini_contents((*FIRST_PROMPT, said, *results))
    model, answers = contents[1], contents[2]
    assert model.role == "model" and model.parts is not None
    assert model.parts[0].thought_signature == base64.b64decode(SIGNATURE)
    assert model.parts[1].thought_signature is None
    assert answers.role == "user" and answers.parts is not None and len(answers.parts) == 2
    second = answers.parts[1].function_response
    assert second is not None and (second.id, second.name, second.response) == (
        "fc-2",
        "get_weather",
        {"error": "no such city"},
    )


def test_calls_without_an_id_get_one_that_is_never_sent_back() -> None:
    server = FakeServer().reply(200, reply([call_part("get_weather", {"city": "Rome"})]))
    turn = adapter_for(server).complete(make_request(FIRST_PROMPT, tools=TOOLS))
    (call,) = turn.tool_calls
    assert call.id.startswith("gemini-call-")
    said = Message(role="assistant", content="", tool_calls=turn.tool_calls)
    result = Message(role="tool", content="20 C", tool_call_id=call.id, name="get_weather")
    _, contents = gemini_contents((*FIRST_PROMPT, said, result))
    assert contents[1].parts is not None and contents[1].parts[0].function_call is not None
    assert contents[1].parts[0].function_call.id is None
    assert contents[2].parts is not None and contents[2].parts[0].function_response is not None
    assert contents[2].parts[0].function_response.id is None


def test_an_unreadable_stored_signature_is_skipped() -> None:
    said = Message(
        role="assistant",
        content="Looking.",
        tool_calls=(ToolCall(id="fc-1", name="get_weather", arguments='{"city": "Paris"'),),
        metadata={"gemini": {"thought_signatures": {"fc-1": "not base64!", "fc-2": 7}}},
    )
    _, contents = gemini_contents((*FIRST_PROMPT, said))
    parts = contents[1].parts
    assert parts is not None and parts[0].text == "Looking." and parts[1].thought_signature is None
    assert parts[1].function_call is not None and parts[1].function_call.args == {"_raw": '{"city": "Paris"'}


def test_the_second_request_carries_history_as_the_sdk_types() -> None:
    server = FakeServer().reply(200, reply([{"text": "It is mild."}]))
    adapter_for(server).complete(make_request(SECOND_PROMPT, tools=TOOLS))
    contents = sent_contents(server.bodies()[0])
    assert [c.role for c in contents] == ["user", "model", "user"]
    assert contents[1].parts is not None and contents[1].parts[0].function_call is not None
    assert contents[1].parts[0].function_call.args == {"city": "Paris"}


@pytest.mark.parametrize(
    ("finish", "expected"),
    [
        ("MAX_TOKENS", "length"),
        ("SAFETY", "content_filter"),
        ("MALFORMED_FUNCTION_CALL", "error"),
        ("OTHER", "other"),
    ],
)
def test_finish_reasons_map(finish: str, expected: str) -> None:
    server = FakeServer().reply(200, reply([{"text": "x"}], finish=finish))
    assert adapter_for(server).complete(make_request(FIRST_PROMPT)).finish_reason == expected


def test_instructions_alone_go_as_the_user_turn() -> None:
    server = FakeServer().reply(200, reply([{"text": "ok"}]))
    adapter_for(server).complete(make_request(FIRST_PROMPT[:1]))
    body = server.bodies()[0]
    assert "systemInstruction" not in body
    assert body["contents"] == [{"role": "user", "parts": [{"text": FIRST_PROMPT[0].content}]}]


def test_a_blocked_prompt_is_an_empty_content_filtered_turn() -> None:
    body = {"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": usage_body(candidates=0)}
    turn = adapter_for(FakeServer().reply(200, body)).complete(make_request(FIRST_PROMPT))
    assert (turn.text, turn.finish_reason) == ("", "content_filter")
    no_reason = {"candidates": [{"content": {"parts": [{"text": "hm"}], "role": "model"}}]}
    assert (
        adapter_for(FakeServer().reply(200, no_reason)).complete(make_request(FIRST_PROMPT)).finish_reason
        == "other"
    )


# ---------------------------------------------------------------- tools, choice, schemas


@pytest.mark.parametrize(
    ("choice", "config"),
    [
        ("auto", {"mode": "AUTO"}),
        ("none", {"mode": "NONE"}),
        ("required", {"mode": "ANY"}),
        (ForceTool("get_weather"), {"mode": "ANY", "allowedFunctionNames": ["get_weather"]}),
    ],
)
def test_tool_choice_becomes_the_function_calling_config(choice: Any, config: dict[str, Any]) -> None:
    server = FakeServer().reply(200, reply([{"text": "ok"}]))
    adapter_for(server).complete(make_request(FIRST_PROMPT, tools=TOOLS, tool_choice=choice))
    body = server.bodies()[0]
    assert body["toolConfig"] == {"functionCallingConfig": config}
    names = [d["name"] for d in body["tools"][0]["functionDeclarations"]]
    assert names == ["get_weather", "search_notes"]


def test_schemas_are_reduced_to_what_gemini_reads() -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {
            "mode": {"const": "fast", "title": "Mode"},
            "where": {"allOf": [{"$ref": "#/$defs/Place"}], "default": None},
            "tags": {"type": "array", "items": {"type": "string", "minLength": 1}, "maxItems": 3},
            "either": {"anyOf": [{"type": "integer", "exclusiveMinimum": 0}, {"type": "null"}]},
            "extra": {"type": "object", "additionalProperties": {"type": "number", "multipleOf": 2}},
            "odd": True,
            "unit": {"type": ["string", "null"], "enum": ["celsius", None]},
            "nothing": {"type": "null", "enum": [None]},
        },
        "$defs": {"Place": {"type": "string", "examples": ["Paris"]}},
        "required": ["mode"],
    }
    assert gemini_schema(schema) == {
        "type": "object",
        "properties": {
            "mode": {"enum": ["fast"], "title": "Mode"},
            "where": {"$ref": "#/$defs/Place"},
            "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
            "either": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
            "extra": {"type": "object", "additionalProperties": {"type": "number"}},
            "odd": True,
            "unit": {"type": ["string", "null"], "enum": ["celsius"]},
            "nothing": {"type": "null"},
        },
        "$defs": {"Place": {"type": "string"}},
        "required": ["mode"],
    }


def test_an_all_of_gemini_cannot_express_is_refused_naming_where() -> None:
    schema = {"type": "object", "properties": {"a": {"allOf": [{"type": "string"}, {"maxLength": 3}]}}}
    with pytest.raises(
        ConfigurationError, match=r"the output schema uses allOf with 2 members at \$\.properties\.a"
    ):
        gemini_schema(schema, where="the output schema")


# ---------------------------------------------------------------- structured output


def test_native_output_sends_the_json_mime_type_and_schema() -> None:
    server = FakeServer().reply(200, reply([{"text": '{"city": "Paris"}'}]))
    turn = adapter_for(server).complete(make_request(FIRST_PROMPT, output_schema=SCHEMA))
    assert turn.text == '{"city": "Paris"}'
    config = server.bodies()[0]["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    assert config["responseJsonSchema"]["properties"] == {"city": {"type": "string"}}


def test_json_object_mode_asks_in_the_instructions() -> None:
    server = FakeServer().reply(200, reply([{"text": "{}"}]))
    adapter_for(server, output_mode="json_object").complete(make_request(FIRST_PROMPT, output_schema=SCHEMA))
    body = server.bodies()[0]
    assert body["generationConfig"] == {"responseMimeType": "application/json"}
    assert "JSON Schema" in body["systemInstruction"]["parts"][0]["text"]


def test_tool_mode_answers_through_the_final_answer_call() -> None:
    server = FakeServer().reply(200, reply([call_part("final_answer", {"city": "Paris"}, "fa-1")]))
    turn = adapter_for(server, output_mode="tool").complete(make_request(FIRST_PROMPT, output_schema=SCHEMA))
    assert (turn.text, turn.tool_calls, turn.finish_reason) == ('{"city":"Paris"}', (), "stop")
    body = server.bodies()[0]
    assert body["toolConfig"] == {
        "functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["final_answer"]}
    }


def test_auto_falls_back_when_the_json_schema_is_refused() -> None:
    refused = error_body(400, "INVALID_ARGUMENT", "Invalid JSON payload: unknown field response_json_schema")
    server = FakeServer().reply(400, refused).reply(200, reply([{"text": "{}"}]))
    turn = adapter_for(server, retries=0).complete(make_request(FIRST_PROMPT, output_schema=SCHEMA))
    assert turn.text == "{}"
    assert "responseJsonSchema" not in server.bodies()[1]["generationConfig"]


# ---------------------------------------------------------------- settings


def test_settings_map_onto_the_generation_config() -> None:
    server = FakeServer().reply(200, reply([{"text": "ok"}]))
    adapter = adapter_for(
        server, settings=ModelSettings(temperature=0.3, top_p=0.8, seed=7, thinking_budget=1024)
    )
    request = make_request(
        FIRST_PROMPT,
        settings=ModelSettings(stop=("END",), max_output_tokens=99, extra={"labels": {"team": "a"}}),
    )
    adapter.complete(request)
    body = server.bodies()[0]
    assert body["generationConfig"] == {
        "temperature": 0.3,
        "topP": 0.8,
        "seed": 7,
        "stopSequences": ["END"],
        "maxOutputTokens": 99,
        "thinkingConfig": body["generationConfig"]["thinkingConfig"],
    }
    thinking = body["generationConfig"]["thinkingConfig"]
    assert sorted(thinking.values()) == [True, 1024]  # the SDK's own key spelling, thoughts included
    assert body["labels"] == {"team": "a"}


@pytest.mark.parametrize(
    "setting",
    [
        ModelSettings(parallel_tool_calls=False),
    ],
)
def test_settings_gemini_has_no_field_for_are_refused_by_name(setting: ModelSettings) -> None:
    (name,) = setting.chosen()
    with pytest.raises(
        ConfigurationError,
        match=rf"GeminiAdapter \(gemini-test\) does not support the model setting\(s\) {name}",
    ):
        adapter_for(FakeServer(), settings=setting)
    server = FakeServer()
    with pytest.raises(ConfigurationError, match=name):
        adapter_for(server).complete(make_request(FIRST_PROMPT, settings=setting))
    assert server.requests == []


def test_reasoning_effort_is_the_thinking_level_and_not_with_a_budget() -> None:
    server = FakeServer().reply(200, reply([{"text": "ok"}]))
    adapter_for(server, settings=ModelSettings(reasoning_effort="minimal")).complete(
        make_request(FIRST_PROMPT)
    )
    thinking = server.bodies()[0]["generationConfig"]["thinkingConfig"]
    assert set(thinking.values()) == {True, "MINIMAL"}
    both = ModelSettings(reasoning_effort="high", thinking_budget=100)
    with pytest.raises(ConfigurationError, match="thinking_budget and reasoning_effort are both set"):
        adapter_for(FakeServer()).complete(make_request(FIRST_PROMPT, settings=both))


def test_a_service_tier_is_one_of_geminis_or_refused_before_sending() -> None:
    server = FakeServer().reply(200, reply([{"text": "ok"}]))
    adapter_for(server, settings=ModelSettings(service_tier="Flex")).complete(make_request(FIRST_PROMPT))
    assert server.bodies()[0]["serviceTier"] == "flex"
    server = FakeServer()
    with pytest.raises(
        ConfigurationError, match=r"service_tier 'scale' is not one of Gemini's tiers \(unspecified, flex"
    ):
        adapter_for(server).complete(make_request(FIRST_PROMPT, settings=ModelSettings(service_tier="scale")))
    assert server.requests == []


# ---------------------------------------------------------------- errors and construction


@pytest.mark.parametrize(
    ("status", "body", "error"),
    [
        (401, error_body(401, "UNAUTHENTICATED", "API key not valid."), AuthenticationError),
        (403, error_body(403, "PERMISSION_DENIED", "Permission denied."), AuthenticationError),
        (429, error_body(429, "RESOURCE_EXHAUSTED", "Quota exceeded."), RateLimitError),
        (500, error_body(500, "INTERNAL", "An internal error has occurred."), ProviderError),
        (
            400,
            error_body(
                400,
                "INVALID_ARGUMENT",
                "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).",
            ),
            ContextLengthError,
        ),
    ],
)
def test_http_errors_become_typed_adapter_errors(
    status: int, body: dict[str, Any], error: type[AdapterError]
) -> None:
    server = FakeServer().reply(status, body, **{"retry-after": "3"})
    with pytest.raises(error) as raised:
        adapter_for(server, retries=0).complete(make_request(FIRST_PROMPT))
    assert type(raised.value) is error
    assert raised.value.status_code == status and raised.value.retry_after == 3.0


def test_a_rate_limit_is_retried_by_weakprompt_then_answered() -> None:
    server = FakeServer().reply(429, error_body(429, "RESOURCE_EXHAUSTED", "slow"), **{"retry-after": "0"})
    server.reply(200, reply([{"text": "ok"}]))
    assert adapter_for(server, retries=1).complete(make_request(FIRST_PROMPT)).text == "ok"
    assert len(server.requests) == 2


def test_a_refused_connection_is_a_connection_error() -> None:
    import httpx2

    server = FakeServer()
    server.fail_with = lambda request: httpx2.ConnectError("refused", request=request)
    with pytest.raises(
        ProviderConnectionError, match=r"connection to the server \(the Gemini API\) failed: refused"
    ):
        GeminiAdapter("gemini-test", client=client_for(server), retries=0).complete(
            make_request(FIRST_PROMPT)
        )


def test_gemini_error_without_a_response_still_classifies() -> None:
    from google.genai import errors

    error = gemini_error(errors.APIError(429, {"error": {"message": "slow", "status": "RESOURCE_EXHAUSTED"}}))
    assert type(error) is RateLimitError and error.retry_after is None


def test_construction_checks(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigurationError, match="non-empty model name"):
        GeminiAdapter("")
    with pytest.raises(ConfigurationError, match="api_key, timeout would be ignored"):
        GeminiAdapter("m", client=client_for(FakeServer()), api_key="k", timeout=3)
    for variable in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI"):
        monkeypatch.delenv(variable, raising=False)
    with pytest.raises(ConfigurationError, match="cannot build the google-genai client"):
        GeminiAdapter("m")
    built = GeminiAdapter("m", api_key="k", base_url="https://gemini.test", timeout=2.5)
    assert built.client is not None and built.model == "m" and built.name == "gemini"


# ---------------------------------------------------------------- streams


def stream_of(*bodies: dict[str, Any]) -> bytes:
    return sse_data(*bodies)


def test_a_streamed_reply_arrives_chunk_by_chunk() -> None:
    server = StreamServer().stream(
        stream_of(
            reply([{"text": "Mild, "}], finish=None, usage=usage_body(candidates=2)),
            reply([{"text": "18 degrees."}], usage=usage_body(candidates=6, thoughts=3)),
        )
    )
    events = collect(stream_adapter(server), make_request(FIRST_PROMPT))
    assert [e.text for e in of_type(events, TextDelta)] == ["Mild, ", "18 degrees."]
    turn = final_turn(events)
    assert (turn.text, turn.finish_reason) == ("Mild, 18 degrees.", "stop")
    assert turn.usage == Usage(input_tokens=20, output_tokens=9, model_calls=1, reasoning_tokens=3)
    assert server.requests[0].url.path == "/v1/models/gemini-test:streamGenerateContent"


def test_streamed_calls_keep_their_signatures() -> None:
    server = StreamServer().stream(
        stream_of(
            reply([call_part("get_weather", {"city": "Paris"}, "fc-1", SIGNATURE)], finish=None),
            reply([call_part("get_weather", {"city": "Oslo"}, "fc-2")]),
        )
    )
    events = collect(stream_adapter(server), make_request(FIRST_PROMPT, tools=TOOLS))
    assert [e.call.id for e in of_type(events, ToolCallReady)] == ["fc-1", "fc-2"]
    turn = final_turn(events)
    assert turn.finish_reason == "tool_calls"
    assert turn.reasoning == (ReasoningPart(issuer="gemini:gemini-test", signature=SIGNATURE, id="fc-1"),)


def test_a_stream_without_a_finish_reason_broke_off() -> None:
    server = StreamServer().stream(stream_of(reply([{"text": "Mild"}], finish=None)))
    _, error = collect_until_error(stream_adapter(server, retries=0), make_request(FIRST_PROMPT))
    assert isinstance(error, ProviderConnectionError) and "no chunk gave a finish reason" in str(error)


def test_a_connection_lost_mid_stream_is_a_cut_stream() -> None:
    server = StreamServer().broken(stream_of(reply([{"text": "Mild"}], finish=None)))
    _, error = collect_until_error(stream_adapter(server, retries=0), make_request(FIRST_PROMPT))
    assert isinstance(error, ProviderConnectionError) and "connection failed" in str(error)


def test_an_http_error_before_the_stream_is_typed() -> None:
    server = StreamServer().json(429, error_body(429, "RESOURCE_EXHAUSTED", "Quota exceeded."))
    _, error = collect_until_error(stream_adapter(server, retries=0), make_request(FIRST_PROMPT))
    assert type(error) is RateLimitError


# ---------------------------------------------------------------- through the loop


def test_a_tool_round_trip_through_evaluate_sends_the_signature_back() -> None:
    first = stream_of(reply([call_part("get_weather", {"city": "Paris"}, "fc-1", SIGNATURE)]))
    second = stream_of(reply([{"text": "18 degrees in Paris."}]))
    server = StreamServer().stream(first).stream(second)
    template: PromptTemplate[None] = PromptTemplate(
        ns="tests/gemini",
        key="weather",
        sections=[
            MarkdownSection(title="Task", key="task", template="Weather in Paris?", tools=[get_weather])
        ],
    )
    response = evaluate(Prompt(template), adapter=stream_adapter(server), session=Session())
    assert response.text == "18 degrees in Paris."
    contents = server.bodies()[1]["contents"]
    assert contents[-2]["role"] == "model"
    assert contents[-2]["parts"][0]["thoughtSignature"] == SIGNATURE
    assert contents[-2]["parts"][0]["functionCall"] == {
        "id": "fc-1",
        "name": "get_weather",
        "args": {"city": "Paris"},
    }
    answer = contents[-1]["parts"][0]["functionResponse"]
    assert (answer["id"], answer["name"]) == ("fc-1", "get_weather")
    assert "18 degrees celsius in Paris" in answer["response"]["output"]
    [types.Content.model_validate(content) for content in contents]


def test_a_conversation_without_instructions_and_an_empty_turn() -> None:
    server = FakeServer().reply(200, reply([{"text": "ok"}]))
    empty = Message(role="assistant", content="")
    adapter_for(server).complete(make_request((FIRST_PROMPT[1], empty, FIRST_PROMPT[1])))
    body = server.bodies()[0]
    assert "systemInstruction" not in body
    assert [c["role"] for c in body["contents"]] == ["user"] and len(body["contents"][0]["parts"]) == 2


def test_a_data_line_that_is_not_json_is_a_cut_stream() -> None:
    server = StreamServer().stream(b"data: {not json\n\n")
    _, error = collect_until_error(stream_adapter(server, retries=0), make_request(FIRST_PROMPT))
    assert isinstance(error, ProviderConnectionError) and "not JSON" in str(error)


def test_a_whole_reply_that_is_not_json_is_a_provider_error() -> None:
    import httpx2

    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, content=b"<html>proxy</html>", headers={"content-type": "text/html"})

    options = types.HttpOptions(
        base_url="https://gemini.test", httpx_client=httpx2.Client(transport=httpx2.MockTransport(handler))
    )
    adapter = GeminiAdapter("gemini-test", client=genai.Client(api_key="k", http_options=options), retries=0)
    with pytest.raises(ProviderError, match="not JSON"):
        adapter.complete(make_request(FIRST_PROMPT))


def test_a_built_adapter_streams_on_a_client_its_loop_closes() -> None:
    adapter = GeminiAdapter("gemini-test", api_key="k", base_url="http://127.0.0.1:9", retries=0)
    _, error = collect_until_error(adapter, make_request(FIRST_PROMPT))
    assert isinstance(error, ProviderConnectionError) and "127.0.0.1:9" in str(error)
