"""OpenAI Responses reasoning: asked for, read whole and streamed, replayed as reasoning items."""

from __future__ import annotations

from typing import Any

import openai
import pytest
from openai.types.responses import Response, ResponseInputItemParam
from openai.types.responses.response_create_params import ResponseCreateParamsNonStreaming
from pydantic import TypeAdapter

from adapters_support import TOOLS, USER, FakeServer, make_request
from stream_support import StreamServer, collect, final_turn, of_type, sse_events
from weakprompt.adapters.openai_responses import OpenAIResponsesAdapter, turn_from_response
from weakprompt.errors import ConfigurationError
from weakprompt.events import ReasoningDelta
from weakprompt.messages import Message, ToolCall
from weakprompt.model import ModelSettings, assemble
from weakprompt.parts import ReasoningPart, TextPart

REQUEST_TYPE = TypeAdapter(ResponseCreateParamsNonStreaming)
ITEM_TYPE = TypeAdapter(ResponseInputItemParam)
ISSUER = "openai:gpt-test"

REASONING = {
    "id": "rs_1",
    "type": "reasoning",
    "summary": [
        {"type": "summary_text", "text": "**Checking** the weather."},
        {"type": "summary_text", "text": "Paris it is."},
    ],
    "encrypted_content": "gAAAAABencrypted",
}
CALL = {
    "id": "fc_1",
    "type": "function_call",
    "call_id": "call_1",
    "name": "get_weather",
    "arguments": '{"city":"Paris"}',
    "status": "completed",
}
PART = ReasoningPart(
    "**Checking** the weather.\n\nParis it is.", issuer=ISSUER, encrypted="gAAAAABencrypted", id="rs_1"
)


def _body(output: list[dict[str, Any]], *, status: str = "completed", reasoning: int = 0) -> dict[str, Any]:
    return {
        "id": "resp_1",
        "object": "response",
        "created_at": 1780000000,
        "model": "gpt-test",
        "status": status,
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "output": output,
        "parallel_tool_calls": True,
        "temperature": 1.0,
        "top_p": 1.0,
        "tool_choice": "auto",
        "tools": [],
        "store": False,
        "usage": {
            "input_tokens": 20,
            "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
            "output_tokens": 90,
            "output_tokens_details": {"reasoning_tokens": reasoning},
            "total_tokens": 110,
        },
    }


def _adapter(server: FakeServer, **options: Any) -> OpenAIResponsesAdapter:
    client = openai.OpenAI(api_key="sk-test", base_url="https://api.test/v1", http_client=server.client())
    return OpenAIResponsesAdapter("gpt-test", client=client, **options)


def _stream_adapter(server: StreamServer) -> OpenAIResponsesAdapter:
    client = openai.AsyncOpenAI(
        api_key="sk-test", base_url="https://api.test/v1", http_client=server.async_client()
    )
    return OpenAIResponsesAdapter("gpt-test", async_client=client)


def _stream(*events: dict[str, Any]) -> bytes:
    numbered = [{**event, "sequence_number": n} for n, event in enumerate(events)]
    return sse_events(*((event["type"], event) for event in numbered))


def test_reasoning_effort_asks_for_a_summary_and_the_encrypted_reasoning() -> None:
    server = FakeServer().reply(200, _body([REASONING, CALL]))
    _adapter(server, settings=ModelSettings(reasoning_effort="high")).complete(
        make_request([USER], tools=TOOLS)
    )
    body = REQUEST_TYPE.validate_python(server.bodies()[0])
    assert body["reasoning"] == {"effort": "high", "summary": "auto"}
    assert body["include"] == ["reasoning.encrypted_content"]
    assert body["store"] is False


def test_reasoning_with_store_on_is_refused_before_sending() -> None:
    server = FakeServer()
    adapter = _adapter(server, store=True)
    with pytest.raises(ConfigurationError, match="reasoning_effort with store=True"):
        adapter.complete(make_request([USER], settings=ModelSettings(reasoning_effort="low")))
    assert server.requests == []


def test_a_reasoning_item_becomes_a_reasoning_part_with_its_id_summary_and_encrypted_content() -> None:
    server = FakeServer().reply(200, _body([REASONING, CALL], reasoning=64))
    turn = _adapter(server).complete(make_request([USER], tools=TOOLS))
    assert turn.parts == (PART,)
    assert turn.tool_calls == (ToolCall("call_1", "get_weather", '{"city":"Paris"}'),)
    assert turn.usage.reasoning_tokens == 64


def test_reasoning_then_text_keeps_the_order_in_the_parts() -> None:
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": "Mild.", "annotations": [], "logprobs": []}],
    }
    turn = turn_from_response(Response.model_validate(_body([REASONING, message])))
    assert turn.parts == (PART, TextPart("Mild."))


def test_a_reasoning_refusal_keeps_its_reasoning_before_the_refusal_text() -> None:
    refusal = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "refusal", "refusal": "No."}],
    }
    turn = turn_from_response(Response.model_validate(_body([REASONING, refusal])))
    assert turn.parts == (PART, TextPart("No.")) and turn.finish_reason == "content_filter"


def _summary_delta(index: int, piece: str) -> dict[str, Any]:
    return {
        "type": "response.reasoning_summary_text.delta",
        "item_id": "rs_1",
        "output_index": 0,
        "summary_index": index,
        "delta": piece,
    }


def test_streamed_reasoning_arrives_as_deltas_and_equals_the_whole_reply() -> None:
    added = {**REASONING, "summary": [], "encrypted_content": None}
    server = StreamServer().stream(
        _stream(
            {"type": "response.created", "response": _body([], status="in_progress")},
            {"type": "response.output_item.added", "output_index": 0, "item": added},
            _summary_delta(0, "**Checking** "),
            _summary_delta(0, "the weather."),
            _summary_delta(1, "Paris it is."),
            {"type": "response.output_item.done", "output_index": 0, "item": REASONING},
            {"type": "response.output_item.added", "output_index": 1, "item": {**CALL, "arguments": ""}},
            {"type": "response.output_item.done", "output_index": 1, "item": CALL},
            {"type": "response.completed", "response": _body([REASONING, CALL], reasoning=64)},
        )
    )
    events = collect(_stream_adapter(server), make_request([USER], tools=TOOLS))

    deltas = of_type(events, ReasoningDelta)
    assert deltas[0] == ReasoningDelta(0, issuer=ISSUER, id="rs_1")
    assert [d.text for d in deltas[1:]] == ["**Checking** ", "the weather.", "\n\nParis it is.", ""]
    assert deltas[-1].encrypted == "gAAAAABencrypted"
    whole = turn_from_response(Response.model_validate(_body([REASONING, CALL], reasoning=64)))
    assert final_turn(events) == whole
    assert whole.parts == (PART,)


def test_a_reasoning_item_only_announced_when_done_is_still_read() -> None:
    server = StreamServer().stream(
        _stream(
            {"type": "response.output_item.done", "output_index": 0, "item": REASONING},
            {"type": "response.output_item.done", "output_index": 1, "item": CALL},
            {"type": "response.completed", "response": _body([REASONING, CALL])},
        )
    )
    assert final_turn(collect(_stream_adapter(server), make_request([USER], tools=TOOLS))).parts == (PART,)


# ---------------------------------------------------------------- replaying


def _history(*reasoning: ReasoningPart) -> list[Message]:
    call = ToolCall("call_1", "get_weather", '{"city":"Paris"}')
    return [
        USER,
        Message.of("assistant", list(reasoning), tool_calls=(call,)),
        Message("tool", "18 degrees", tool_call_id="call_1", name="get_weather"),
    ]


def _sent_items(server: FakeServer) -> list[dict[str, Any]]:
    items = server.bodies()[0]["input"]
    for item in items:
        ITEM_TYPE.validate_python(item)
    return items


def test_own_reasoning_goes_back_as_a_reasoning_item_before_its_function_call() -> None:
    server = FakeServer().reply(200, _body([CALL]))
    _adapter(server).complete(make_request(_history(PART), tools=TOOLS))
    items = _sent_items(server)
    assert [item["type"] for item in items] == [
        "message",
        "reasoning",
        "function_call",
        "function_call_output",
    ]
    assert items[1] == {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [{"type": "summary_text", "text": PART.text}],
        "encrypted_content": "gAAAAABencrypted",
    }


def test_reasoning_from_anthropic_is_dropped_or_sent_as_text() -> None:
    thought = ReasoningPart("claude thoughts", issuer="anthropic:claude-x", signature="sig")
    server = FakeServer().reply(200, _body([CALL])).reply(200, _body([CALL]))
    _adapter(server).complete(make_request(_history(thought), tools=TOOLS))
    _adapter(server, foreign_reasoning="text").complete(make_request(_history(thought), tools=TOOLS))
    first, second = (body["input"] for body in server.bodies())
    assert [item["type"] for item in first] == ["message", "function_call", "function_call_output"]
    assert second[1] == {"type": "message", "role": "assistant", "content": "claude thoughts"}


def test_a_reasoning_item_without_encrypted_content_goes_back_by_id_only_when_stored() -> None:
    plain = ReasoningPart("summary", issuer=ISSUER, id="rs_9")
    server = FakeServer().reply(200, _body([CALL])).reply(200, _body([CALL]))
    _adapter(server).complete(make_request(_history(plain), tools=TOOLS))
    _adapter(server, store=True).complete(make_request(_history(plain), tools=TOOLS))
    dropped, by_id = (body["input"] for body in server.bodies())
    assert all(item["type"] != "reasoning" for item in dropped)
    assert by_id[1] == {
        "type": "reasoning",
        "id": "rs_9",
        "summary": [{"type": "summary_text", "text": "summary"}],
    }


def test_a_call_only_announced_when_done_streams_its_start_to_the_consumer() -> None:
    """The reader started such a call in its own fold only: a consumer's fold saw it never started."""
    server = StreamServer().stream(
        _stream(
            {"type": "response.output_item.done", "output_index": 0, "item": CALL},
            {"type": "response.completed", "response": _body([CALL])},
        )
    )
    events = collect(_stream_adapter(server), make_request([USER], tools=TOOLS))
    assert assemble(events).tool_calls == (ToolCall("call_1", "get_weather", '{"city":"Paris"}'),)
