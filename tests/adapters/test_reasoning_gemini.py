"""Gemini thoughts and thought signatures as reasoning parts; Chat Completions reasoning tokens."""

from __future__ import annotations

import asyncio
import base64
from typing import Any

import openai
import pytest
from google import genai
from google.genai import types

from adapters_support import TOOLS, USER, FakeServer, make_request
from stream_support import StreamServer, collect, final_turn, of_type, openai_chunk, sse_data
from weakprompt.adapters import GeminiAdapter, OpenAIAdapter
from weakprompt.errors import ConfigurationError
from weakprompt.events import ReasoningDelta
from weakprompt.messages import Message, ToolCall
from weakprompt.model import ModelSettings, complete_async
from weakprompt.parts import ReasoningPart, TextPart

ISSUER = "gemini:gemini-test"
CALL_SIGNATURE = base64.b64encode(b"signed call").decode()
THOUGHT_SIGNATURE = base64.b64encode(b"signed thought").decode()


def _reply(parts: list[dict[str, Any]], finish: str | None = "STOP", thoughts: int = 0) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
    if finish is not None:
        candidate["finishReason"] = finish
    usage = {"promptTokenCount": 20, "candidatesTokenCount": 6, "totalTokenCount": 26 + thoughts}
    if thoughts:
        usage["thoughtsTokenCount"] = thoughts
    return {"candidates": [candidate], "modelVersion": "gemini-test", "usageMetadata": usage}


def _client(server: FakeServer | None = None, streams: StreamServer | None = None) -> genai.Client:
    options = types.HttpOptions(base_url="https://gemini.test")
    if server is not None:
        options.httpx_client = server.client()
    if streams is not None:
        options.httpx_async_client = streams.async_client()
    return genai.Client(api_key="test-key", http_options=options)


THOUGHT_A = {"text": "Paris, ", "thought": True}
THOUGHT_B = {"text": "so weather.", "thought": True, "thoughtSignature": THOUGHT_SIGNATURE}
TEXT = {"text": "Checking."}
CALL = {
    "functionCall": {"name": "get_weather", "args": {"city": "Paris"}, "id": "fc-1"},
    "thoughtSignature": CALL_SIGNATURE,
}
PARTS = (
    ReasoningPart("Paris, so weather.", issuer=ISSUER, signature=THOUGHT_SIGNATURE),
    TextPart("Checking."),
    ReasoningPart(issuer=ISSUER, signature=CALL_SIGNATURE, id="fc-1"),
)


def test_thoughts_and_signatures_become_reasoning_parts_whole_and_streamed_alike() -> None:
    whole = FakeServer().reply(200, _reply([THOUGHT_A, THOUGHT_B, TEXT, CALL], thoughts=33))
    streams = StreamServer().stream(
        sse_data(
            _reply([THOUGHT_A], finish=None),
            _reply([THOUGHT_B], finish=None),
            _reply([TEXT], finish=None),
            _reply([CALL], thoughts=33),
        )
    )
    adapter = GeminiAdapter("gemini-test", client=_client(whole, streams))
    request = make_request([USER], tools=TOOLS)

    turn = adapter.complete(request)
    assert turn.parts == PARTS and turn.usage.reasoning_tokens == 33
    assert asyncio.run(complete_async(adapter, request)) == turn


def test_streamed_thoughts_are_reasoning_deltas() -> None:
    streams = StreamServer().stream(sse_data(_reply([THOUGHT_A], finish=None), _reply([THOUGHT_B, TEXT])))
    events = collect(GeminiAdapter("gemini-test", client=_client(streams=streams)), make_request([USER]))
    assert of_type(events, ReasoningDelta) == [
        ReasoningDelta(0, "Paris, ", issuer=ISSUER),
        ReasoningDelta(0, "so weather.", signature=THOUGHT_SIGNATURE),
    ]
    assert final_turn(events).parts == (PARTS[0], TextPart("Checking."))


def test_a_signed_text_part_keeps_its_signature_as_a_reasoning_part() -> None:
    signed = {"text": "Done.", "thoughtSignature": THOUGHT_SIGNATURE}
    turn = GeminiAdapter("gemini-test", client=_client(FakeServer().reply(200, _reply([signed])))).complete(
        make_request([USER])
    )
    assert turn.parts == (ReasoningPart(issuer=ISSUER, signature=THOUGHT_SIGNATURE), TextPart("Done."))


def test_reasoning_on_asks_for_the_thoughts() -> None:
    server = FakeServer().reply(200, _reply([TEXT]))
    adapter = GeminiAdapter(
        "gemini-test", client=_client(server), settings=ModelSettings(thinking_budget=512)
    )
    adapter.complete(make_request([USER]))
    assert True in server.bodies()[0]["generationConfig"]["thinkingConfig"].values()  # the SDK spells the key


def _history(*reasoning: ReasoningPart, text: str = "Checking.") -> list[Message]:
    call = ToolCall("fc-1", "get_weather", '{"city":"Paris"}')
    return [
        USER,
        Message.of("assistant", [*reasoning, text], tool_calls=(call,)),
        Message("tool", "18 C", tool_call_id="fc-1", name="get_weather"),
    ]


def _model_parts(server: FakeServer, index: int = 0) -> list[dict[str, Any]]:
    contents = server.bodies()[index]["contents"]
    for content in contents:
        types.Content.model_validate(content)
    return contents[1]["parts"]


def test_only_the_signatures_go_back_on_their_call_and_text_and_not_the_thought_text() -> None:
    server = FakeServer().reply(200, _reply([TEXT]))
    GeminiAdapter("gemini-test", client=_client(server)).complete(
        make_request(_history(*PARTS[::2]), tools=TOOLS)
    )
    parts = _model_parts(server)
    assert parts == [
        {"text": "Checking.", "thoughtSignature": THOUGHT_SIGNATURE},
        {
            "functionCall": {"id": "fc-1", "name": "get_weather", "args": {"city": "Paris"}},
            "thoughtSignature": CALL_SIGNATURE,
        },
    ]


def test_another_providers_reasoning_is_dropped_or_sent_as_text() -> None:
    thought = ReasoningPart("claude thinks", issuer="anthropic:claude-x", signature="sig")
    server = FakeServer().reply(200, _reply([TEXT])).reply(200, _reply([TEXT]))
    GeminiAdapter("gemini-test", client=_client(server)).complete(
        make_request(_history(thought), tools=TOOLS)
    )
    GeminiAdapter("gemini-test", client=_client(server), foreign_reasoning="text").complete(
        make_request(_history(thought), tools=TOOLS)
    )
    dropped, as_text = _model_parts(server, 0), _model_parts(server, 1)
    assert [part.get("text") for part in dropped] == ["Checking.", None]
    assert "thoughtSignature" not in dropped[1]
    assert [part.get("text") for part in as_text] == ["claude thinks", "Checking.", None]


def test_a_signature_that_is_not_base64_is_not_sent() -> None:
    broken = ReasoningPart(issuer=ISSUER, signature="not base64!", id="fc-1")
    server = FakeServer().reply(200, _reply([TEXT]))
    GeminiAdapter("gemini-test", client=_client(server)).complete(make_request(_history(broken), tools=TOOLS))
    assert "thoughtSignature" not in _model_parts(server)[1]


def test_an_unknown_foreign_reasoning_choice_is_refused_by_gemini() -> None:
    with pytest.raises(ConfigurationError, match="GeminiAdapter: foreign_reasoning"):
        GeminiAdapter("gemini-test", client=_client(FakeServer()), foreign_reasoning="merge")  # type: ignore[arg-type]


# ---------------------------------------------------------------- Chat Completions


def _chat_body(reasoning: int) -> dict[str, Any]:
    return {
        "id": "c1",
        "object": "chat.completion",
        "created": 1,
        "model": "o4-test",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "ok"}}],
        "usage": {
            "prompt_tokens": 10,
            "completion_tokens": 50,
            "total_tokens": 60,
            "completion_tokens_details": {"reasoning_tokens": reasoning},
        },
    }


def _chat(
    server: FakeServer | None = None, streams: StreamServer | None = None, **options: Any
) -> OpenAIAdapter:
    client = openai.OpenAI(
        api_key="k", base_url="https://api.test/v1", http_client=(server or FakeServer()).client()
    )
    aclient = openai.AsyncOpenAI(
        api_key="k", base_url="https://api.test/v1", http_client=(streams or StreamServer()).async_client()
    )
    return OpenAIAdapter("o4-test", client=client, async_client=aclient, **options)


def test_chat_completions_reports_reasoning_tokens_whole_and_streamed_and_passes_the_effort() -> None:
    server = FakeServer().reply(200, _chat_body(42))
    usage = {
        "prompt_tokens": 10,
        "completion_tokens": 50,
        "total_tokens": 60,
        "completion_tokens_details": {"reasoning_tokens": 42},
    }
    streams = StreamServer().stream(
        sse_data(
            openai_chunk({"role": "assistant", "content": "ok"}, "stop"), openai_chunk(None, usage=usage)
        )
    )
    adapter = _chat(server, streams, settings=ModelSettings(reasoning_effort="low"))
    request = make_request([USER])
    assert adapter.complete(request).usage.reasoning_tokens == 42
    assert asyncio.run(complete_async(adapter, request)).usage.reasoning_tokens == 42
    assert server.bodies()[0]["reasoning_effort"] == "low"


def test_chat_completions_sends_no_reasoning_back_but_can_send_it_as_text() -> None:
    thought = ReasoningPart("I should greet.", issuer="openai:o4-test", encrypted="gAAA", id="rs_1")
    history = [USER, Message.of("assistant", [thought, "Hello."]), Message("user", "And?")]
    server = FakeServer().reply(200, _chat_body(0)).reply(200, _chat_body(0))
    _chat(server).complete(make_request(history))
    _chat(server, foreign_reasoning="text").complete(make_request(history))
    dropped, as_text = (body["messages"][1] for body in server.bodies())
    assert dropped == {"role": "assistant", "content": "Hello."}
    assert as_text == {"role": "assistant", "content": "I should greet.\n\nHello."}


def test_a_thought_without_a_signature_and_a_signature_without_text_replay_only_the_signature() -> None:
    bare = {"text": "", "thoughtSignature": THOUGHT_SIGNATURE}
    adapter = GeminiAdapter(
        "gemini-test", client=_client(FakeServer().reply(200, _reply([THOUGHT_A, TEXT, bare])))
    )
    turn = adapter.complete(make_request([USER]))
    unsigned, _text, signed = turn.parts
    assert unsigned == ReasoningPart("Paris, ", issuer=ISSUER) and signed.signature == THOUGHT_SIGNATURE
    server = FakeServer().reply(200, _reply([TEXT]))
    GeminiAdapter("gemini-test", client=_client(server)).complete(
        make_request([USER, Message.of("assistant", list(turn.parts)), Message("user", "more?")])
    )
    assert server.bodies()[0]["contents"][1]["parts"] == [
        {"text": "Checking.", "thoughtSignature": THOUGHT_SIGNATURE}
    ]


def test_each_adapter_names_the_issuer_of_its_reasoning() -> None:
    import anthropic

    from weakprompt.adapters import AnthropicAdapter, OpenAIResponsesAdapter

    oa = openai.OpenAI(api_key="k", base_url="http://unused.test")
    assert GeminiAdapter("gemini-test", client=_client(FakeServer())).issuer == ISSUER
    assert OpenAIResponsesAdapter("o4", client=oa).issuer == "openai:o4"
    claude = anthropic.Anthropic(api_key="k", base_url="http://unused.test")
    assert AnthropicAdapter("claude-x", client=claude).issuer == "anthropic:claude-x"
