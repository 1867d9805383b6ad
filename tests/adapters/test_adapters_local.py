"""LocalAdapter's translation layer, driven by a stand-in for ``llama_cpp.Llama``.

The real model is exercised in test_adapters_local_model.py; here the reply
dicts are scripted so every mapping rule can be checked exactly.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from adapters_support import (
    ANSWER_TURN,
    FIRST_PROMPT,
    SECOND_PROMPT,
    SYSTEM,
    TOOL_RESULT,
    TOOL_TURN,
    TOOLS,
    USER,
    decode_openai_messages,
    get_weather,
    make_request,
    normalized,
    openai_completion_body,
)
from weakprompt.adapters import _llama
from weakprompt.adapters._chat_template import with_content_strings
from weakprompt.adapters.local import LocalAdapter, grammar_schema, turn_from_llama_reply
from weakprompt.errors import ConfigurationError, ContextLengthError, ProviderError
from weakprompt.messages import Message, Usage
from weakprompt.model import ForceTool, ProviderAdapter


class FakeLlama:
    """Answers create_chat_completion from a script; tokenizes on whitespace."""

    def __init__(self, *replies: Any, template: str = "{{ messages }}{{ tools }}") -> None:
        self.replies = list(replies)
        self.calls: list[dict[str, Any]] = []
        self.metadata = {"tokenizer.chat_template": template}

    def create_chat_completion(self, **kwargs: Any) -> Any:
        self.calls.append(copy.deepcopy(kwargs))
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return copy.deepcopy(reply)

    def tokenize(self, text: bytes, add_bos: bool = True, special: bool = False) -> list[int]:
        assert (add_bos, special) == (False, False)
        return [len(word) for word in text.split()]

    def n_ctx(self) -> int:
        return 512


def reply_for(turn: Any) -> dict[str, Any]:
    return openai_completion_body(turn)


def test_text_answer_and_adapter_properties() -> None:
    fake = FakeLlama(reply_for(ANSWER_TURN))
    adapter = LocalAdapter(llama=fake, seed=3, max_tokens=64)

    turn = adapter.complete(make_request(FIRST_PROMPT))

    assert turn == ANSWER_TURN
    (call,) = fake.calls
    assert (call["temperature"], call["seed"], call["max_tokens"], call["stream"]) == (0.0, 3, 64, False)
    assert "tools" not in call and "response_format" not in call
    assert isinstance(adapter, ProviderAdapter)
    assert (adapter.name, adapter.model, adapter.context_window) == ("local", "FakeLlama", 512)
    assert adapter.loaded_model.llama is fake
    assert adapter.loaded_model.chat_template == "{{ messages }}{{ tools }}"


def test_token_counter_uses_the_model_tokenizer() -> None:
    counter = LocalAdapter(llama=FakeLlama()).token_counter
    assert counter is not None and counter.exact
    assert counter.count("one two three") == 3
    assert counter.count("") == 0


def test_forced_tool_is_sent_with_its_schema_and_a_named_choice() -> None:
    fake = FakeLlama(reply_for(TOOL_TURN))

    LocalAdapter(llama=fake).complete(make_request([USER], tools=TOOLS, tool_choice=ForceTool("get_weather")))

    (call,) = fake.calls
    assert call["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}
    assert call["tools"][0] == {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": get_weather.description,
            "parameters": grammar_schema(get_weather.parameters_schema()),
        },
    }


def test_required_with_one_tool_forces_it() -> None:
    fake = FakeLlama(reply_for(TOOL_TURN))
    LocalAdapter(llama=fake).complete(make_request([USER], tools=[get_weather], tool_choice="required"))
    assert fake.calls[0]["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}


def test_none_sends_no_tools() -> None:
    fake = FakeLlama(reply_for(ANSWER_TURN))
    LocalAdapter(llama=fake).complete(make_request([USER], tools=TOOLS, tool_choice="none"))
    assert "tools" not in fake.calls[0] and "tool_choice" not in fake.calls[0]


def test_structured_output_constrains_the_reply_with_the_schema() -> None:
    schema = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
    fake = FakeLlama(reply_for(ANSWER_TURN), reply_for(TOOL_TURN))
    adapter = LocalAdapter(llama=fake)

    adapter.complete(make_request([USER], output_schema=schema, max_output_tokens=20))
    adapter.complete(
        make_request([USER], tools=TOOLS, tool_choice=ForceTool("get_weather"), output_schema=schema)
    )

    assert fake.calls[0]["response_format"] == {"type": "json_object", "schema": schema}
    assert fake.calls[0]["max_tokens"] == 20
    assert "response_format" not in fake.calls[1]  # the tool grammar wins on a forced call


def test_grammar_schema_lets_enum_and_const_constrain_alone() -> None:
    schema = {
        "type": "object",
        "properties": {
            "unit": {"type": ["string", "null"], "enum": ["c", "f", None], "default": "c"},
            "kind": {"type": "string", "const": "weather"},
            "tags": {
                "type": "array",
                "items": {"anyOf": [{"type": "string", "enum": ["a"]}, {"type": "null"}]},
            },
        },
    }
    fixed = grammar_schema(schema)
    assert fixed["type"] == "object"
    assert fixed["properties"]["unit"] == {"enum": ["c", "f", None], "default": "c"}
    assert fixed["properties"]["kind"] == {"const": "weather"}
    assert fixed["properties"]["tags"]["items"]["anyOf"] == [{"enum": ["a"]}, {"type": "null"}]
    assert schema["properties"]["unit"]["type"] == ["string", "null"]  # input untouched


def test_tool_call_ids_are_deterministic_and_depend_on_the_conversation() -> None:
    first = LocalAdapter(llama=FakeLlama(reply_for(TOOL_TURN), reply_for(TOOL_TURN), reply_for(TOOL_TURN)))
    request = make_request([USER], tools=TOOLS, tool_choice=ForceTool("get_weather"))

    a = first.complete(request)
    b = first.complete(request)
    c = first.complete(make_request(FIRST_PROMPT, tools=TOOLS, tool_choice=ForceTool("get_weather")))

    assert a == b
    assert a.tool_calls[0].id.startswith("call_")
    assert a.tool_calls[0].id != c.tool_calls[0].id
    assert (a.tool_calls[0].name, a.tool_calls[0].arguments) == ("get_weather", '{"city":"Paris"}')


def test_round_trip_of_the_scripted_conversation() -> None:
    fake = FakeLlama(reply_for(TOOL_TURN), reply_for(ANSWER_TURN))
    adapter = LocalAdapter(llama=fake)

    first = adapter.complete(make_request(FIRST_PROMPT, tools=TOOLS, tool_choice=ForceTool("get_weather")))
    second = adapter.complete(make_request(SECOND_PROMPT, tools=TOOLS))

    assert [(c.name, c.arguments) for c in first.tool_calls] == [("get_weather", '{"city":"Paris"}')]
    assert (first.text, first.usage, first.finish_reason) == ("", TOOL_TURN.usage, "tool_calls")
    assert second == ANSWER_TURN
    sent = [decode_openai_messages(call["messages"]) for call in fake.calls]
    assert normalized(sent[0]) == normalized(FIRST_PROMPT)
    assert normalized(sent[1]) == normalized(SECOND_PROMPT)
    assert all(isinstance(m["content"], str) for call in fake.calls for m in call["messages"])


def test_null_content_becomes_an_empty_string_for_chat_templates() -> None:
    wire = {
        "messages": [
            {"role": "assistant", "content": None, "tool_calls": []},
            {"role": "user"},
            "not a message",
        ]
    }
    assert with_content_strings(wire) == [
        {"role": "assistant", "content": "", "tool_calls": []},
        {"role": "user", "content": ""},
    ]
    assert with_content_strings({}) == []


def test_reply_reading_tolerates_loose_shapes() -> None:
    reply = {
        "choices": [
            {
                "message": {
                    "content": None,
                    "tool_calls": [
                        {"function": {"name": "get_weather", "arguments": None}},
                        {"no_function": True},
                    ],
                },
                "finish_reason": None,
            }
        ]
    }
    turn = turn_from_llama_reply(reply)
    assert turn.text == ""
    assert [(c.name, c.arguments) for c in turn.tool_calls] == [("get_weather", "{}")]
    assert (turn.finish_reason, turn.usage) == ("other", Usage(model_calls=1))


def test_reply_with_length_finish_and_partial_usage() -> None:
    reply = {
        "choices": [{"message": "oops", "finish_reason": "length"}],
        "usage": {"prompt_tokens": 7, "completion_tokens": "many"},
    }
    turn = turn_from_llama_reply(reply)
    assert turn.finish_reason == "length"
    assert turn.usage == Usage(input_tokens=7, output_tokens=0, model_calls=1)


@pytest.mark.parametrize("reply", [{}, {"choices": []}, {"choices": ["x"]}])
def test_reply_without_choices_is_a_provider_error(reply: dict[str, Any]) -> None:
    with pytest.raises(ProviderError, match="no choices"):
        LocalAdapter(llama=FakeLlama(reply)).complete(make_request([USER]))


def test_over_long_prompt_is_a_context_length_error() -> None:
    error = ValueError("Requested tokens (900) exceed context window of 512")
    with pytest.raises(ContextLengthError, match="exceed context window") as info:
        LocalAdapter(llama=FakeLlama(error), name="tiny").complete(make_request([USER]))
    assert info.value.provider == "tiny"


def test_messages_longer_than_the_window_are_refused_before_generation() -> None:
    fake = FakeLlama()
    huge = Message(role="user", content="word " * 600)
    with pytest.raises(ContextLengthError, match="600 tokens; the context window is 512"):
        LocalAdapter(llama=fake).complete(make_request([huge]))
    assert fake.calls == []


def test_an_obscure_failure_on_a_nearly_full_window_is_a_context_length_error() -> None:
    fake = FakeLlama(ValueError("could not broadcast input array from shape (64,) into shape (0,)"))
    nearly = Message(role="user", content="word " * 505)
    with pytest.raises(ContextLengthError, match="does not fit the context window of 512 tokens"):
        LocalAdapter(llama=fake).complete(make_request([nearly]))


def test_other_model_failures_are_provider_errors() -> None:
    with pytest.raises(ProviderError, match="decode failed"):
        LocalAdapter(llama=FakeLlama(RuntimeError("llama_decode returned -1: decode failed"))).complete(
            make_request([USER])
        )


def test_a_non_dict_reply_is_a_provider_error() -> None:
    with pytest.raises(ProviderError, match="expected a dict"):
        LocalAdapter(llama=FakeLlama(["stream", "chunks"])).complete(make_request([USER]))


def test_bad_tool_choice_fails_before_generation() -> None:
    fake = FakeLlama()
    with pytest.raises(ConfigurationError, match="'missing'"):
        LocalAdapter(llama=fake).complete(make_request([USER], tools=TOOLS, tool_choice=ForceTool("missing")))
    assert fake.calls == []


# ---------------------------------------------------------------- templates without tool support

PLAIN = "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}{% endfor %}"


def test_plain_template_describes_the_forced_tool_and_shows_results_as_user_text() -> None:
    failed = Message(
        role="tool", content="no such city", tool_call_id="call_w2", name="get_weather", is_error=True
    )
    unknown = Message(role="tool", content="?", tool_call_id="call_zz")
    fake = FakeLlama(reply_for(TOOL_TURN), template=PLAIN)
    conversation = (*SECOND_PROMPT, failed, unknown)

    LocalAdapter(llama=fake).complete(
        make_request(conversation, tools=TOOLS, tool_choice=ForceTool("get_weather"))
    )

    messages = fake.calls[0]["messages"]
    system = messages[0]["content"]
    assert system.startswith(SYSTEM.content + "\n\nCall the tool below now.\n- get_weather: ")
    assert '"city"' in system and "search_notes" not in system
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user", "user", "user"]
    assert messages[3]["content"] == "Tool get_weather returned: " + TOOL_RESULT.content
    assert messages[4]["content"] == "Tool get_weather failed: no such city"
    assert messages[5]["content"] == "Tool the tool returned: ?"
    assert messages[2]["content"] == ""


def test_plain_template_without_system_message_gets_one_for_the_tool() -> None:
    fake = FakeLlama(reply_for(TOOL_TURN), template=PLAIN)
    LocalAdapter(llama=fake).complete(
        make_request([USER], tools=TOOLS, tool_choice=ForceTool("search_notes"))
    )
    first = fake.calls[0]["messages"][0]
    assert first["role"] == "system" and first["content"].startswith(
        "Call the tool below now.\n- search_notes"
    )


def test_plain_template_auto_turn_adds_no_tool_text() -> None:
    fake = FakeLlama(reply_for(ANSWER_TURN), template=PLAIN)
    LocalAdapter(llama=fake).complete(make_request(FIRST_PROMPT, tools=TOOLS))
    assert fake.calls[0]["messages"][0] == {"role": "system", "content": SYSTEM.content}


def test_template_support_can_be_declared() -> None:
    fake = FakeLlama(reply_for(TOOL_TURN), template=PLAIN)
    LocalAdapter(llama=fake, template_handles_tools=True).complete(
        make_request(SECOND_PROMPT, tools=TOOLS, tool_choice=ForceTool("get_weather"))
    )
    assert [m["role"] for m in fake.calls[0]["messages"]] == ["system", "user", "assistant", "tool"]


def test_required_with_several_tools_asks_the_model_to_choose_first() -> None:
    choice = {
        "choices": [{"message": {"content": '"search_notes"'}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 30, "completion_tokens": 4},
    }
    fake = FakeLlama(choice, reply_for(TOOL_TURN), template=PLAIN)

    turn = LocalAdapter(llama=fake).complete(make_request(FIRST_PROMPT, tools=TOOLS, tool_choice="required"))

    pick, call = fake.calls
    assert pick["response_format"] == {
        "type": "json_object",
        "schema": {"enum": ["get_weather", "search_notes"]},
    }
    assert "tools" not in pick
    assert (
        "- get_weather: " in pick["messages"][0]["content"]
        and "- search_notes: " in pick["messages"][0]["content"]
    )
    assert call["tool_choice"] == {"type": "function", "function": {"name": "search_notes"}}
    assert turn.usage == TOOL_TURN.usage + Usage(input_tokens=30, output_tokens=4, model_calls=1)


@pytest.mark.parametrize("answer", ['"delete_everything"', "not json"])
def test_a_choice_outside_the_tools_is_a_provider_error(answer: str) -> None:
    choice = {"choices": [{"message": {"content": answer}, "finish_reason": "stop"}]}
    fake = FakeLlama(choice)
    with pytest.raises(ProviderError, match="pick one of get_weather, search_notes"):
        LocalAdapter(llama=fake).complete(make_request([USER], tools=TOOLS, tool_choice="required"))


def test_build_params_matches_what_complete_sends() -> None:
    fake = FakeLlama(reply_for(TOOL_TURN))
    adapter = LocalAdapter(llama=fake)
    request = make_request(FIRST_PROMPT, tools=TOOLS, tool_choice=ForceTool("get_weather"))
    params = adapter.build_params(request)
    adapter.complete(request)
    assert {**params, "stream": False} == fake.calls[0]


# ---------------------------------------------------------------- construction and model files


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"n_ctx": 128}, "n_ctx must be at least 256"),
        ({"max_tokens": 0}, "max_tokens"),
        ({"model_path": "x.gguf"}, "either model_path or llama"),
    ],
)
def test_bad_settings_are_refused(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        LocalAdapter(llama=FakeLlama(), **options)


def test_missing_model_file_is_a_configuration_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="model file not found"):
        LocalAdapter(tmp_path / "absent.gguf")


def test_default_model_path_needs_the_package() -> None:
    with pytest.raises(ConfigurationError, match="weakprompt\\[local\\]"):
        _llama.default_model_path("no_such_model_package_xyz")


def test_default_model_path_needs_a_gguf_in_the_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "empty_model_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ConfigurationError, match=r"holds no \.gguf file"):
        _llama.default_model_path("empty_model_pkg")


def test_default_model_path_finds_the_first_gguf(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "tiny_model_pkg"
    (package / "weights").mkdir(parents=True)
    (package / "__init__.py").write_text("raise RuntimeError('must not be imported')")
    (package / "weights" / "b.gguf").write_bytes(b"")
    (package / "weights" / "a.gguf").write_bytes(b"")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert _llama.default_model_path("tiny_model_pkg") == package / "weights" / "a.gguf"


@pytest.mark.real_model  # needs llama.cpp itself, though no model weights
def test_a_file_that_is_not_a_model_is_a_configuration_error(tmp_path: Path) -> None:
    bogus = tmp_path / "bogus.gguf"
    bogus.write_bytes(b"not a gguf file at all")
    with pytest.raises(ConfigurationError, match="cannot load model"):
        LocalAdapter(bogus, progress=False)


@pytest.mark.parametrize(
    ("mode", "response_format", "instructed"),
    [
        ("auto", "grammar", False),
        ("native", "grammar", False),
        ("json_object", {"type": "json_object"}, True),
        ("prompted", None, True),
    ],
)
def test_output_modes_on_the_local_model(mode: Any, response_format: Any, instructed: bool) -> None:
    schema = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
    fake = FakeLlama(reply_for(ANSWER_TURN))
    adapter = LocalAdapter(llama=fake, output_mode=mode)

    adapter.complete(make_request(FIRST_PROMPT, output_schema=schema))

    (call,) = fake.calls
    expected = {"type": "json_object", "schema": schema} if response_format == "grammar" else response_format
    assert call.get("response_format") == expected
    assert ("JSON Schema" in call["messages"][0]["content"]) == instructed
    assert adapter.output_modes.supported == ("native", "json_object", "prompted")


def test_the_local_model_has_no_tool_output_mode() -> None:
    with pytest.raises(ConfigurationError, match="does not support output mode 'tool'"):
        LocalAdapter(llama=FakeLlama(), output_mode="tool")
