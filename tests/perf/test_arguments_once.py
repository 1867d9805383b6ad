"""One tool call's arguments are decoded once and encoded at most once, through the whole loop.

For a call from each adapter (OpenAI and Anthropic through their SDKs over
a fake transport, the local adapter over a fake llama.cpp, a function
adapter), the evaluation loop runs the call: the transcript records it,
the dispatcher validates it, the output store keeps its arguments, the
event carries them, and the next request converts the conversation back
to the provider's wire format. Every JSON decode and encode in the process
is counted while the evaluation runs; those of the call's arguments must
happen once (decode) and at most once (encode, only when the provider gave
an object).
"""

from __future__ import annotations

import copy
import json
import pickle
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import anthropic
import attrs
import openai
import pytest

import weakprompt.messages
from adapters_support import get_weather, openai_completion_body
from stream_support import StreamServer, anthropic_stream_events, openai_stream_chunks, sse_data, sse_events
from weakprompt.adapters.anthropic import AnthropicAdapter
from weakprompt.adapters.local import LocalAdapter
from weakprompt.adapters.openai import OpenAIAdapter
from weakprompt.adapters.testing import FunctionAdapter, ScriptedAdapter, text_turn, tool_call_turn
from weakprompt.call_arguments import BadSyntax, Refused
from weakprompt.messages import AssistantTurn, ToolCall, Usage
from weakprompt.model import ModelRequest, ProviderAdapter
from weakprompt.prompt import MarkdownSection, Prompt, PromptTemplate
from weakprompt.runtime import evaluate
from weakprompt.session import Session
from weakprompt.store import Store

ARGUMENTS = {"city": "Paris", "unit": "celsius"}
ARGUMENTS_TEXT = '{"city": "Paris", "unit": "celsius"}'
TOOL_TURN = AssistantTurn(
    tool_calls=(ToolCall(id="call_1", name="get_weather", arguments=ARGUMENTS_TEXT),),
    usage=Usage(input_tokens=10, output_tokens=5, model_calls=1),
    finish_reason="tool_calls",
)
ANSWER = AssistantTurn(text="Mild.", usage=Usage(input_tokens=20, output_tokens=3, model_calls=1))
PROMPT: Prompt[None] = Prompt(
    PromptTemplate(
        ns="tests/arguments",
        key="once",
        sections=[MarkdownSection(title="Task", key="task", template="Weather.", tools=[get_weather])],
    )
)


@dataclass
class Counts:
    """What happened to ``arguments`` (the call's object) while counting."""

    arguments: dict[str, Any]
    decoder_calls: list[object] = field(default_factory=list)
    text_decodes: list[str] = field(default_factory=list)
    object_encodes: list[object] = field(default_factory=list)


@pytest.fixture
def counting(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[dict[str, Any]], Counts]]:
    """Count, for one arguments object: the call's decoder, and every JSON decode and encode of it."""
    active: list[Counts] = []
    real_decode_arguments = weakprompt.messages.decode_arguments
    real_decode = json.JSONDecoder.decode
    real_encode = json.JSONEncoder.encode

    def decode_arguments(raw: object) -> Any:
        for counts in active:
            counts.decoder_calls.append(raw)
        return real_decode_arguments(raw)

    def decode(self: json.JSONDecoder, s: str, *args: Any, **kwargs: Any) -> Any:
        value = real_decode(self, s, *args, **kwargs)
        for counts in active:
            if value == counts.arguments:  # any decode whose result is the arguments, by whoever
                counts.text_decodes.append(s)
        return value

    def encode(self: json.JSONEncoder, o: Any) -> str:
        for counts in active:
            if o == counts.arguments:
                counts.object_encodes.append(o)
        return real_encode(self, o)

    monkeypatch.setattr(weakprompt.messages, "decode_arguments", decode_arguments)
    monkeypatch.setattr(json.JSONDecoder, "decode", decode)
    monkeypatch.setattr(json.JSONEncoder, "encode", encode)

    def start(arguments: dict[str, Any]) -> Counts:
        counts = Counts(arguments)
        active.append(counts)
        return counts

    yield start
    active.clear()


def run_once(adapter: ProviderAdapter) -> None:
    response = evaluate(PROMPT, adapter=adapter, session=Session(), input="Weather in Paris?")
    assert [e.success for e in response.tool_executions] == [True]
    assert response.tool_executions[0].event.params is not None
    assert response.text == "Mild."


def openai_adapter() -> tuple[OpenAIAdapter, StreamServer]:
    # the evaluation loop always streams: the call's text arrives in deltas and is joined once
    server = (
        StreamServer()
        .stream(sse_data(*openai_stream_chunks(TOOL_TURN), "[DONE]"))
        .stream(sse_data(*openai_stream_chunks(ANSWER), "[DONE]"))
    )
    client = openai.AsyncOpenAI(
        api_key="sk-test", base_url="http://fake.test/v1", http_client=server.async_client()
    )
    return OpenAIAdapter("gpt-test", async_client=client), server


def anthropic_adapter() -> tuple[AnthropicAdapter, StreamServer]:
    server = (
        StreamServer()
        .stream(sse_events(*anthropic_stream_events(TOOL_TURN)))
        .stream(sse_events(*anthropic_stream_events(ANSWER)))
    )
    client = anthropic.AsyncAnthropic(
        api_key="sk-ant-test", base_url="http://fake.test", http_client=server.async_client()
    )
    return AnthropicAdapter("claude-test", async_client=client), server


class FakeLlama:
    """What LocalAdapter needs of ``llama_cpp.Llama``: scripted chat completions, whitespace tokens."""

    def __init__(self, *replies: AssistantTurn) -> None:
        self.replies = list(replies)
        self.metadata = {"tokenizer.chat_template": "{{ messages }}{{ tools }}"}
        self.requests: list[dict[str, Any]] = []

    def create_chat_completion(self, **kwargs: Any) -> Any:
        self.requests.append(kwargs)
        turn = self.replies.pop(0)
        if kwargs.get("stream"):  # the evaluation loop always streams
            return iter(copy.deepcopy(openai_stream_chunks(turn)))
        return openai_completion_body(turn)

    def tokenize(self, text: bytes, add_bos: bool = True, special: bool = False) -> list[int]:
        return [len(word) for word in text.split()]

    def n_ctx(self) -> int:
        return 4096


def test_openai_call_is_decoded_once_and_never_encoded(counting: Callable[[dict[str, Any]], Counts]) -> None:
    adapter, server = openai_adapter()
    counts = counting(ARGUMENTS)
    run_once(adapter)
    assert counts.decoder_calls == [ARGUMENTS_TEXT]  # the dispatcher's, shared with everyone else
    assert counts.text_decodes == [ARGUMENTS_TEXT]  # ...which is the only JSON decode of them
    assert counts.object_encodes == []  # the text the model sent is what is stored and sent back
    sent_back = json.loads(server.requests[1].content)["messages"][2]["tool_calls"][0]
    assert sent_back["function"]["arguments"] == ARGUMENTS_TEXT


def test_anthropic_call_is_checked_once_and_encoded_once(
    counting: Callable[[dict[str, Any]], Counts],
) -> None:
    adapter, server = anthropic_adapter()
    counts = counting(ARGUMENTS)
    run_once(adapter)
    # streamed, the input arrives as JSON text: the call decodes it once, and the object is encoded once
    assert counts.decoder_calls == [ARGUMENTS_TEXT]
    assert counts.text_decodes == [ARGUMENTS_TEXT]
    assert len(counts.object_encodes) == 1
    # the next request sends the object back without parsing the recorded text
    sent_back = json.loads(server.requests[1].content)["messages"][1]["content"][0]
    assert sent_back["input"] == ARGUMENTS


def test_local_call_is_decoded_once_and_never_encoded(counting: Callable[[dict[str, Any]], Counts]) -> None:
    llama = FakeLlama(TOOL_TURN, ANSWER)
    adapter = LocalAdapter(llama=llama, template_handles_tools=True)
    counts = counting(ARGUMENTS)
    run_once(adapter)
    assert counts.decoder_calls == [ARGUMENTS_TEXT]
    assert counts.text_decodes == [ARGUMENTS_TEXT]
    assert counts.object_encodes == []
    assert llama.requests[1]["messages"][2]["tool_calls"][0]["function"]["arguments"] == ARGUMENTS_TEXT


@pytest.mark.parametrize("given", [ARGUMENTS_TEXT, ARGUMENTS], ids=["text", "object"])
def test_function_adapter_call_is_decoded_once(
    counting: Callable[[dict[str, Any]], Counts], given: str | dict[str, Any]
) -> None:
    def model(request: ModelRequest) -> AssistantTurn:
        if any(m.role == "tool" for m in request.context.messages):
            return ANSWER
        return tool_call_turn(ToolCall(id="call_1", name="get_weather", arguments=given))

    counts = counting(ARGUMENTS)
    run_once(FunctionAdapter(model))
    assert counts.decoder_calls == [given]
    assert counts.text_decodes == ([ARGUMENTS_TEXT] if isinstance(given, str) else [])
    assert len(counts.object_encodes) == (0 if isinstance(given, str) else 1)


def test_get_tool_result_reads_the_dispatchers_decode(counting: Callable[[dict[str, Any]], Counts]) -> None:
    store = Store.open("sqlite://")
    session = Session()
    first = ScriptedAdapter(
        [tool_call_turn(ToolCall("call_1", "get_weather", ARGUMENTS_TEXT)), text_turn("a")]
    )
    evaluate(PROMPT, adapter=first, session=session, store=store, input="one")
    wanted = {"tool_call_id": "call_1"}
    load = ToolCall("call_2", "get_tool_result", json.dumps(wanted))
    second = ScriptedAdapter([tool_call_turn(load), text_turn("b")])
    counts = counting(wanted)
    response = evaluate(PROMPT, adapter=second, session=session, store=store, input="two")
    assert [e.success for e in response.tool_executions] == [True]
    # the pipeline marks the reply as a loaded result, from the arguments the dispatcher decoded
    assert counts.decoder_calls == [json.dumps(wanted)]
    assert counts.text_decodes == [json.dumps(wanted)]


# -- the call's own caches ---------------------------------------------------------------------


def test_a_call_decodes_and_encodes_once_and_keeps_both(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[object] = []
    real = weakprompt.messages.decode_arguments
    monkeypatch.setattr(weakprompt.messages, "decode_arguments", lambda raw: seen.append(raw) or real(raw))
    call = ToolCall("c", "f", {"b": [1, 2], "a": "x"})
    assert call.decoded_arguments is call.decoded_arguments == {"b": [1, 2], "a": "x"}
    assert call.arguments_json() is call.arguments_json() == '{"b":[1,2],"a":"x"}'
    assert len(seen) == 1
    # the caches are invisible: equality, hashing, repr, evolve and pickling see the fields only
    plain = ToolCall("c", "f", {"b": [1, 2], "a": "x"})
    assert call == plain and repr(call) == repr(plain)
    assert "decoded" not in repr(call)
    fresh = attrs.evolve(call, arguments="{}")
    assert fresh.decoded_arguments == {} and fresh.arguments_json() == "{}"
    assert pickle.loads(pickle.dumps(call)) == call


def test_problems_are_decoded_once_too() -> None:
    broken = ToolCall("c", "f", '{"a": ')
    assert isinstance(broken.decoded_arguments, BadSyntax)
    assert broken.decoded_arguments is broken.decoded_arguments
    assert broken.arguments_json() == '{"a": '
    nan = ToolCall("c", "f", {"a": float("nan")})
    assert isinstance(nan.decoded_arguments, Refused) and nan.decoded_arguments.path == "$.a"
    assert nan.arguments_json() == '{"a":NaN}'  # best effort, never raises


def test_storable_keeps_the_decode_of_a_mapping() -> None:
    given = {"city": "Paris"}
    stored = ToolCall("c", "f", given).storable()
    assert stored.arguments == '{"city":"Paris"}'
    assert stored.decoded_arguments == given and stored.decoded_arguments is not given
    refused = ToolCall("c", "f", {"x": float("inf")}).storable()
    assert refused.arguments == '{"x":Infinity}'
    assert isinstance(refused.decoded_arguments, Refused)  # the text is judged, as the record shows


def test_a_streamed_call_parsed_into_its_object_is_decoded_once(
    counting: Callable[[dict[str, Any]], Counts],
) -> None:
    """The Anthropic stream closes calls with ``parse=True``: one decode, shared by every reader."""
    from weakprompt.adapters.wire.arguments import arguments_object
    from weakprompt.model import ReplyAssembler, ToolCallDelta, ToolCallStarted
    from weakprompt.runtime import ToolDispatcher

    counts = counting(ARGUMENTS)
    assembler = ReplyAssembler(provider="test")
    assembler.add(ToolCallStarted(0, "call_1", "get_weather"))
    for piece in (ARGUMENTS_TEXT[:9], ARGUMENTS_TEXT[9:]):
        assembler.add(ToolCallDelta(0, piece))
    assert assembler.call_arguments(0) == ARGUMENTS_TEXT  # the pieces, not yet decoded
    assert counts.decoder_calls == []
    call = assembler.close_call(0, parse=True).call
    assert call.arguments == ARGUMENTS  # the object a whole reply gives
    execution = ToolDispatcher([get_weather], session=Session()).execute(call)
    assert execution.success and arguments_object(call) == ARGUMENTS
    assert counts.decoder_calls == [ARGUMENTS_TEXT] and counts.text_decodes == [ARGUMENTS_TEXT]
    assert len(counts.object_encodes) == 1  # the event's arguments text
