"""OpenAIAdapter against a real llama.cpp server (SmolLM2) through the official clients.

Whole replies on ``openai.OpenAI``, streamed ones on ``openai.AsyncOpenAI``.
"""

from __future__ import annotations

import json

import jsonschema
import openai
import pytest

from adapters_support import FIRST_PROMPT, SECOND_PROMPT, TOOLS, USER, make_request, search_notes
from llama_server import LlamaServer, llama_server  # noqa: F401 - pytest fixture
from stream_support import collect, collect_until_error, final_turn, of_type
from weakprompt.adapters.openai import OpenAIAdapter
from weakprompt.errors import ContextLengthError, ProviderError
from weakprompt.messages import Message, Usage
from weakprompt.model import ForceTool, TextDelta, ToolCallDelta, ToolCallStarted

pytestmark = pytest.mark.real_model


@pytest.fixture
def adapter(llama_server: LlamaServer) -> OpenAIAdapter:  # noqa: F811 - the imported fixture
    # llama.cpp's server knows max_tokens only and has no strict mode; its grammar
    # builder also drops an enum combined with a type list (the strict form of an
    # optional Literal), so tools go out with their ordinary schema.
    return OpenAIAdapter(
        llama_server.model,
        base_url=llama_server.base_url,
        strict_tools=False,
        max_retries=0,
        timeout=120,
        temperature=0.0,
        seed=0,
        max_tokens_field="max_tokens",
    )


def test_forced_tool_call_comes_back_as_a_parseable_tool_call(adapter: OpenAIAdapter) -> None:
    turn = adapter.complete(
        make_request(FIRST_PROMPT, tools=TOOLS, tool_choice=ForceTool("get_weather"), max_output_tokens=64)
    )

    (call,) = turn.tool_calls
    assert call.name == "get_weather"
    assert isinstance(call.arguments, str)
    arguments = json.loads(call.arguments)
    assert "paris" in arguments["city"].lower()
    assert turn.finish_reason == "tool_calls"
    assert turn.usage.input_tokens > 0 and turn.usage.model_calls == 1


def test_forced_call_arguments_match_the_tool_schema(adapter: OpenAIAdapter) -> None:
    # search_notes has no enum: the server's grammar then enforces the whole schema.
    ask = Message(role="user", content="Find my notes about the dentist.")
    turn = adapter.complete(
        make_request([ask], tools=TOOLS, tool_choice=ForceTool("search_notes"), max_output_tokens=64)
    )

    (call,) = turn.tool_calls
    assert isinstance(call.arguments, str)
    jsonschema.validate(json.loads(call.arguments), search_notes.parameters_schema())


def test_text_answer_from_a_tool_result(adapter: OpenAIAdapter) -> None:
    turn = adapter.complete(make_request(SECOND_PROMPT, tools=TOOLS, max_output_tokens=48))

    assert turn.text.strip()
    assert turn.tool_calls == ()
    assert turn.finish_reason in ("stop", "length")
    assert turn.usage.output_tokens > 0


def test_plain_question_without_tools(adapter: OpenAIAdapter) -> None:
    turn = adapter.complete(make_request([USER], max_output_tokens=16))
    assert turn.text.strip()
    assert turn.usage.output_tokens <= 16


def test_prompt_longer_than_the_servers_context_is_a_context_length_error(adapter: OpenAIAdapter) -> None:
    huge = Message(role="user", content="weather " * 5000)
    with pytest.raises(ContextLengthError, match="context") as info:
        adapter.complete(make_request([huge], max_output_tokens=8))
    assert info.value.status_code == 400


def test_the_official_client_is_what_talks_to_the_server(adapter: OpenAIAdapter) -> None:
    assert isinstance(adapter.client, openai.OpenAI)
    models = adapter.client.models.list()
    assert [m.id for m in models.data] == [adapter.model]


# ---------------------------------------------------------------- streaming (AsyncOpenAI, server-sent events)


def test_text_streams_from_the_server_in_pieces(adapter: OpenAIAdapter) -> None:
    request = make_request([USER], max_output_tokens=24)

    adapter.complete(request)  # the server's cache then holds what the streamed call sees again
    events = collect(adapter, request)
    whole = adapter.complete(request)

    texts = of_type(events, TextDelta)
    turn = final_turn(events)
    assert len(texts) > 1 and "".join(t.text for t in texts) == turn.text
    assert (turn.text, turn.finish_reason) == (whole.text, whole.finish_reason)
    # llama.cpp's server ignores stream_options: a stream without a usage chunk counts one call.
    assert turn.usage == Usage(model_calls=1)
    assert isinstance(adapter.async_client, openai.AsyncOpenAI)


def test_a_forced_tool_call_streams_from_the_server(adapter: OpenAIAdapter) -> None:
    request = make_request(
        FIRST_PROMPT, tools=TOOLS, tool_choice=ForceTool("get_weather"), max_output_tokens=64
    )

    events = collect(adapter, request)

    (started,) = of_type(events, ToolCallStarted)
    (call,) = final_turn(events).tool_calls
    assert (started.name, call.name, call.id) == ("get_weather", "get_weather", started.call_id)
    assert len(of_type(events, ToolCallDelta)) > 1
    assert isinstance(call.arguments, str)
    assert "paris" in json.loads(call.arguments)["city"].lower()
    assert final_turn(events).finish_reason == "tool_calls"


def test_a_prompt_too_long_for_a_streamed_call_is_a_provider_error(adapter: OpenAIAdapter) -> None:
    # The server answers 200 and ends the event stream at once, saying nothing about why.
    huge = Message(role="user", content="weather " * 5000)

    seen, raised = collect_until_error(adapter, make_request([huge], max_output_tokens=8))

    assert seen == []
    assert type(raised) is ProviderError and "ended before any chunk arrived" in str(raised)
