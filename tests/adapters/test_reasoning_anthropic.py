"""Anthropic extended thinking: settings, thinking blocks read whole and streamed, and replayed verbatim."""

from __future__ import annotations

import asyncio
from typing import Any

import anthropic
import attrs
import pytest
from anthropic.types import MessageParam
from anthropic.types.message_create_params import MessageCreateParamsNonStreaming
from pydantic import TypeAdapter

from adapters_support import (
    TOOL_RESULT,
    TOOL_TURN,
    TOOLS,
    USER,
    FakeServer,
    anthropic_message_body,
    make_request,
)
from stream_support import StreamServer, anthropic_stream_events, collect, final_turn, of_type, sse_events
from weakprompt.adapters.anthropic import AnthropicAdapter
from weakprompt.errors import ConfigurationError
from weakprompt.events import ReasoningDelta
from weakprompt.messages import AssistantTurn, Message, ToolCall, Usage
from weakprompt.model import ForceTool, ModelSettings, complete_async
from weakprompt.parts import ReasoningPart, TextPart

REQUEST_TYPE = TypeAdapter(MessageCreateParamsNonStreaming)
MESSAGE_TYPE = TypeAdapter(MessageParam)

ISSUER = "anthropic:claude-test"
THOUGHT = ReasoningPart("The user wants Paris weather.", issuer=ISSUER, signature="EqQBCkYIBxgCKkA")
HIDDEN = ReasoningPart(issuer=ISSUER, encrypted="EmwKAhgBEgy3va3pzix", redacted=True)
CALL = ToolCall(id="toolu_1", name="get_weather", arguments={"city": "Paris"})
THINKING_TOOL_TURN = AssistantTurn(
    text="Let me look.",
    tool_calls=(CALL,),
    usage=Usage(input_tokens=40, output_tokens=90, model_calls=1),
    finish_reason="tool_calls",
    parts=(THOUGHT, HIDDEN, TextPart("Let me look.")),
)


def _adapter(server: FakeServer, **options: Any) -> AnthropicAdapter:
    client = anthropic.Anthropic(api_key="k", base_url="http://fake.test", http_client=server.client())
    return AnthropicAdapter("claude-test", client=client, **options)


def _stream_adapter(server: StreamServer) -> AnthropicAdapter:
    client = anthropic.AsyncAnthropic(
        api_key="k", base_url="http://fake.test", http_client=server.async_client()
    )
    return AnthropicAdapter("claude-test", async_client=client)


def _valid(body: dict[str, Any]) -> dict[str, Any]:
    REQUEST_TYPE.validate_python(body)
    for message in body["messages"]:
        MESSAGE_TYPE.validate_python(message)
    return body


# ---------------------------------------------------------------- settings


def test_thinking_budget_enables_thinking_and_the_reply_limit_covers_it() -> None:
    server = FakeServer().reply(200, anthropic_message_body(THINKING_TOOL_TURN))
    _adapter(server, settings=ModelSettings(thinking_budget=2000)).complete(make_request([USER], tools=TOOLS))
    body = _valid(server.bodies()[0])
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2000}
    assert body["max_tokens"] == 2000 + 1024  # the budget on top of the adapter's reply limit


def test_reasoning_effort_is_a_thinking_budget_and_an_explicit_limit_is_kept() -> None:
    server = FakeServer().reply(200, anthropic_message_body(THINKING_TOOL_TURN))
    settings = ModelSettings(reasoning_effort="low", max_output_tokens=5000)
    _adapter(server).complete(make_request([USER], settings=settings))
    body = _valid(server.bodies()[0])
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert body["max_tokens"] == 5000


@pytest.mark.parametrize(
    ("settings", "options", "problem"),
    [
        (ModelSettings(thinking_budget=500), {}, r"thinking_budget must be at least 1024"),
        (ModelSettings(thinking_budget=2048, reasoning_effort="high"), {}, r"both set"),
        (ModelSettings(thinking_budget=2048, max_output_tokens=2048), {}, r"max_output_tokens \(2048\)"),
        (ModelSettings(thinking_budget=2048, extra={"temperature": 0.3}), {}, r"extra\['temperature'\]"),
        (ModelSettings(thinking_budget=2048, extra={"top_k": 5}), {}, r"extra\['top_k'\]"),
        (ModelSettings(thinking_budget=2048, extra={"top_p": 0.5}), {}, r"top_p'\] must be between 0.95"),
        (ModelSettings(thinking_budget=2048), {"tool_choice": "required"}, r"tool_choice 'required'"),
        (
            ModelSettings(thinking_budget=2048),
            {"tool_choice": ForceTool("get_weather")},
            r"tool_choice ForceTool\('get_weather'\)",
        ),
    ],
)
def test_a_combination_the_api_refuses_with_thinking_is_refused_by_name_before_sending(
    settings: ModelSettings, options: dict[str, Any], problem: str
) -> None:
    server = FakeServer()
    adapter = _adapter(server)
    with pytest.raises(ConfigurationError, match=problem):
        adapter.complete(make_request([USER], tools=TOOLS, settings=settings, **options))
    assert server.requests == []


def test_a_forced_final_answer_tool_is_refused_with_thinking() -> None:
    server = FakeServer()
    adapter = _adapter(server, output_mode="tool", settings=ModelSettings(thinking_budget=2048))
    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    with pytest.raises(ConfigurationError, match="output_mode 'tool' forces the final-answer tool"):
        adapter.complete(make_request([USER], output_schema=schema))
    assert server.requests == []


def test_a_budget_under_the_minimum_is_refused_when_the_adapter_is_built() -> None:
    with pytest.raises(ConfigurationError, match="at least 1024"):
        _adapter(FakeServer(), settings=ModelSettings(thinking_budget=10))


def test_top_p_in_the_thinking_range_is_sent() -> None:
    server = FakeServer().reply(200, anthropic_message_body(THINKING_TOOL_TURN))
    _adapter(server).complete(
        make_request([USER], settings=ModelSettings(thinking_budget=2048, extra={"top_p": 0.97}))
    )
    assert server.bodies()[0]["top_p"] == 0.97


# ---------------------------------------------------------------- reading replies


def test_thinking_and_redacted_thinking_blocks_become_reasoning_parts_in_order() -> None:
    body = anthropic_message_body(THINKING_TOOL_TURN)
    body["usage"]["output_tokens_details"] = {"thinking_tokens": 61}
    server = FakeServer().reply(200, body)

    turn = _adapter(server).complete(make_request([USER], tools=TOOLS))

    assert turn.reasoning == (THOUGHT, HIDDEN)
    assert turn.parts == THINKING_TOOL_TURN.parts
    assert turn.text == "Let me look." and turn.tool_calls == (CALL,)
    assert turn.usage.reasoning_tokens == 61


def test_a_reply_without_thinking_has_no_parts() -> None:
    server = FakeServer().reply(200, anthropic_message_body(TOOL_TURN))
    assert _adapter(server).complete(make_request([USER], tools=TOOLS)).parts == ()


def test_streamed_thinking_arrives_as_reasoning_deltas_and_assembles_to_the_whole_reply() -> None:
    events = anthropic_stream_events(THINKING_TOOL_TURN)
    for name, body in events:
        if name == "message_delta":
            body["usage"]["output_tokens_details"] = {"thinking_tokens": 61}
    server = StreamServer().stream(sse_events(*events))

    streamed = collect(_stream_adapter(server), make_request([USER], tools=TOOLS))

    deltas = of_type(streamed, ReasoningDelta)
    assert deltas[0] == ReasoningDelta(0, "", issuer=ISSUER)
    assert "".join(d.text for d in deltas if d.index == 0) == THOUGHT.text
    assert ReasoningDelta(0, signature=THOUGHT.signature) in deltas
    assert ReasoningDelta(1, issuer=ISSUER, encrypted=HIDDEN.encrypted, redacted=True) in deltas
    turn = final_turn(streamed)
    assert turn.parts == THINKING_TOOL_TURN.parts
    assert turn.usage.reasoning_tokens == 61


def test_the_streamed_and_whole_thinking_turns_are_equal() -> None:
    fake = FakeServer().reply(200, anthropic_message_body(THINKING_TOOL_TURN))
    server = StreamServer().stream(sse_events(*anthropic_stream_events(THINKING_TOOL_TURN)))
    client = anthropic.Anthropic(api_key="k", base_url="http://fake.test", http_client=fake.client())
    aclient = anthropic.AsyncAnthropic(
        api_key="k", base_url="http://fake.test", http_client=server.async_client()
    )
    adapter = AnthropicAdapter("claude-test", client=client, async_client=aclient)
    request = make_request([USER], tools=TOOLS)
    assert adapter.complete(request) == asyncio.run(complete_async(adapter, request)) == THINKING_TOOL_TURN


# ---------------------------------------------------------------- replaying


def _history(*reasoning: ReasoningPart) -> list[Message]:
    assistant = Message.of(
        "assistant",
        [*reasoning, "Let me look."],
        tool_calls=(ToolCall("toolu_1", "get_weather", '{"city":"Paris"}'),),
    )
    result = attrs.evolve(TOOL_RESULT, tool_call_id="toolu_1")
    return [USER, assistant, result]


def test_own_thinking_blocks_go_back_first_and_verbatim() -> None:
    server = FakeServer().reply(200, anthropic_message_body(TOOL_TURN))
    _adapter(server, settings=ModelSettings(thinking_budget=2048)).complete(
        make_request(_history(THOUGHT, HIDDEN), tools=TOOLS)
    )
    content = _valid(server.bodies()[0])["messages"][1]["content"]
    assert content[0] == {"type": "thinking", "thinking": THOUGHT.text, "signature": THOUGHT.signature}
    assert content[1] == {"type": "redacted_thinking", "data": HIDDEN.encrypted}
    assert [block["type"] for block in content] == ["thinking", "redacted_thinking", "text", "tool_use"]


def test_reasoning_from_another_provider_is_dropped() -> None:
    foreign = ReasoningPart("openai thoughts", issuer="openai:o4", encrypted="gAAAA", id="rs_1")
    server = FakeServer().reply(200, anthropic_message_body(TOOL_TURN))
    _adapter(server).complete(make_request(_history(foreign), tools=TOOLS))
    content = _valid(server.bodies()[0])["messages"][1]["content"]
    assert [block["type"] for block in content] == ["text", "tool_use"]


def test_reasoning_from_another_provider_is_sent_as_text_when_asked() -> None:
    foreign = ReasoningPart("openai thoughts", issuer="openai:o4", encrypted="gAAAA", id="rs_1")
    server = FakeServer().reply(200, anthropic_message_body(TOOL_TURN))
    _adapter(server, foreign_reasoning="text").complete(make_request(_history(foreign, THOUGHT), tools=TOOLS))
    content = _valid(server.bodies()[0])["messages"][1]["content"]
    assert content[0]["type"] == "thinking"
    assert content[1] == {"type": "text", "text": "openai thoughts"}
    assert [block["type"] for block in content[2:]] == ["text", "tool_use"]


def test_an_unsigned_thinking_part_is_not_sent() -> None:
    unsigned = ReasoningPart("no signature", issuer=ISSUER)
    server = FakeServer().reply(200, anthropic_message_body(TOOL_TURN))
    _adapter(server).complete(make_request(_history(unsigned), tools=TOOLS))
    content = server.bodies()[0]["messages"][1]["content"]
    assert [block["type"] for block in content] == ["text", "tool_use"]


def test_an_unknown_foreign_reasoning_choice_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="foreign_reasoning must be 'drop' or 'text', got 'keep'"):
        _adapter(FakeServer(), foreign_reasoning="keep")
