"""LocalAdapter on the real SmolLM2-135M-Instruct model (llama.cpp in process)."""

from __future__ import annotations

import json

import jsonschema
import pytest

from adapters_support import (
    FIRST_PROMPT,
    SECOND_PROMPT,
    SYSTEM,
    TOOL_RESULT,
    TOOLS,
    get_weather,
    make_request,
    search_notes,
)
from weakprompt.adapters.local import LocalAdapter
from weakprompt.errors import ContextLengthError
from weakprompt.messages import Message
from weakprompt.model import ForceTool

pytestmark = pytest.mark.real_model


@pytest.fixture(scope="module")
def adapter() -> LocalAdapter:
    return LocalAdapter(n_ctx=2048, progress=False)


def test_forced_tool_call_has_schema_valid_arguments(adapter: LocalAdapter) -> None:
    turn = adapter.complete(
        make_request(FIRST_PROMPT, tools=TOOLS, tool_choice=ForceTool("get_weather"), max_output_tokens=64)
    )

    (call,) = turn.tool_calls
    assert call.name == "get_weather"
    assert isinstance(call.arguments, str)
    arguments = json.loads(call.arguments)
    jsonschema.validate(arguments, get_weather.parameters_schema())
    assert "paris" in arguments["city"].lower()
    assert turn.finish_reason == "tool_calls"
    assert turn.usage.input_tokens > 0 and turn.usage.model_calls == 1


def test_answers_from_the_tool_result(adapter: LocalAdapter) -> None:
    turn = adapter.complete(make_request(SECOND_PROMPT, tools=TOOLS, max_output_tokens=64))

    assert turn.tool_calls == ()
    assert "18" in turn.text


def test_required_with_several_tools_picks_one_and_calls_it_validly(adapter: LocalAdapter) -> None:
    ask = Message(role="user", content="Find my notes about the dentist.")
    turn = adapter.complete(
        make_request([SYSTEM, ask], tools=TOOLS, tool_choice="required", max_output_tokens=48)
    )

    (call,) = turn.tool_calls
    tool = {t.name: t for t in TOOLS}[call.name]
    assert isinstance(call.arguments, str)
    jsonschema.validate(json.loads(call.arguments), tool.parameters_schema())
    assert turn.usage.model_calls == 2  # the choice, then the call


def test_structured_output_follows_the_schema(adapter: LocalAdapter) -> None:
    schema = {
        "type": "object",
        "properties": {"city": {"type": "string"}, "degrees": {"type": "integer"}},
        "required": ["city", "degrees"],
        "additionalProperties": False,
    }
    turn = adapter.complete(make_request(SECOND_PROMPT, output_schema=schema, max_output_tokens=48))
    jsonschema.validate(json.loads(turn.text), schema)


def test_same_request_same_turn(adapter: LocalAdapter) -> None:
    request = make_request(
        FIRST_PROMPT, tools=TOOLS, tool_choice=ForceTool("get_weather"), max_output_tokens=48
    )
    other = LocalAdapter(n_ctx=2048, progress=False)

    first = adapter.complete(request)
    adapter.complete(make_request(SECOND_PROMPT, max_output_tokens=16))  # different state in between
    assert adapter.complete(request) == first
    assert other.complete(request) == first
    assert other.loaded_model is adapter.loaded_model  # loaded once per file and settings


def test_sampling_with_a_seed_is_repeatable() -> None:
    sampler = LocalAdapter(n_ctx=2048, progress=False, temperature=0.9, seed=1234)
    request = make_request(
        [SYSTEM, Message(role="user", content="Describe a rainy day.")], max_output_tokens=24
    )

    assert sampler.complete(request) == sampler.complete(request)


def test_token_counter_is_the_models_tokenizer(adapter: LocalAdapter) -> None:
    counter = adapter.token_counter
    assert counter is not None and counter.exact
    llama = adapter.loaded_model.llama
    for text in ("Hello world", TOOL_RESULT.content, SYSTEM.content, "naïve café — 18°C"):
        tokens = llama.tokenize(text.encode(), add_bos=False, special=False)  # type: ignore[attr-defined]
        assert counter.count(text) == len(tokens)
        assert llama.detokenize(tokens).decode() == text  # type: ignore[attr-defined]
    assert counter.count("Hello world") == 2
    assert counter.count("") == 0


@pytest.mark.parametrize("words", [230, 260])  # llama.cpp's own check / refused before generating
def test_prompt_longer_than_the_context_is_a_context_length_error(words: int) -> None:
    tiny = LocalAdapter(n_ctx=256, progress=False)
    long_question = Message(role="user", content="weather " * words)
    with pytest.raises(ContextLengthError, match="context window"):
        tiny.complete(make_request([long_question], max_output_tokens=8))


def test_search_tool_schema_is_valid_json_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(search_notes.parameters_schema())
