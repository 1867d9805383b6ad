"""Wire conversions of CompiledContext, checked against the official SDKs' request types."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, get_args, get_origin

import pytest
from anthropic.types import MessageParam, ToolParam
from anthropic.types.message_create_params import MessageCreateParamsNonStreaming
from hypothesis import given
from hypothesis import strategies as st
from openai.types.chat import ChatCompletionMessageParam, ChatCompletionToolParam
from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming
from pydantic import TypeAdapter
from typing_extensions import get_type_hints, is_typeddict

from weakprompt.errors import TranscriptError
from weakprompt.messages import Message, ToolCall
from weakprompt.transcript import CompiledContext

OPENAI_MESSAGE = TypeAdapter(ChatCompletionMessageParam)
OPENAI_TOOL = TypeAdapter(ChatCompletionToolParam)
OPENAI_REQUEST = TypeAdapter(CompletionCreateParamsNonStreaming)
ANTHROPIC_MESSAGE = TypeAdapter(MessageParam)
ANTHROPIC_TOOL = TypeAdapter(ToolParam)
ANTHROPIC_REQUEST = TypeAdapter(MessageCreateParamsNonStreaming)

WEATHER = {
    "name": "get_weather",
    "description": "Current weather for a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
OPENAI_SHAPED = {
    "type": "function",
    "function": {"name": "search", "description": "Web search.", "parameters": {"type": "object"}},
}
ANTHROPIC_SHAPED = {
    "name": "calc",
    "description": "Arithmetic.",
    "input_schema": {"type": "object", "properties": {"expr": {"type": "string"}}},
}


def _materialize(value: Any) -> Any:
    """Pydantic validates ``Iterable[...]`` fields lazily: walk them so every item is checked."""
    if isinstance(value, Mapping):
        return {k: _materialize(v) for k, v in value.items()}
    if isinstance(value, (str, bytes)):
        return value
    if isinstance(value, Iterable):
        return [_materialize(v) for v in value]
    return value


def validate(adapter: TypeAdapter[Any], value: Any) -> Any:
    return _materialize(adapter.validate_python(value, strict=True))


def _typeddicts_in(tp: Any) -> Iterator[type]:
    if is_typeddict(tp):
        yield tp
    elif get_origin(tp) is not None or get_args(tp):
        for arg in get_args(tp):
            yield from _typeddicts_in(arg)


def assert_no_unknown_keys(value: Any, tp: Any, where: str = "$") -> None:
    """Pydantic ignores extra TypedDict keys; the APIs reject them. Check keys ourselves.

    For a union, the value must fit at least one member without unknown keys.
    """
    candidates = list(_typeddicts_in(tp))
    if not isinstance(value, dict) or not candidates:
        return
    fitting = []
    for td in candidates:
        hints = get_type_hints(td)
        if set(value) <= set(hints) and all(k in value for k in td.__required_keys__):
            literal_ok = True
            for key in ("role", "type"):
                if key in value and key in hints:
                    allowed = list(_literals(hints[key]))
                    if allowed and value[key] not in allowed:
                        literal_ok = False
            if literal_ok:
                fitting.append((td, hints))
    assert fitting, f"{where}: keys {sorted(value)} fit none of {[c.__name__ for c in candidates]}"
    td, hints = fitting[0]
    for key, item in value.items():
        inner = hints[key]
        if isinstance(item, list):
            for i, element in enumerate(item):
                assert_no_unknown_keys(element, inner, f"{where}.{key}[{i}]")
        elif isinstance(item, dict) and key not in {"parameters", "input_schema", "input"}:
            assert_no_unknown_keys(item, inner, f"{where}.{key}")


def _literals(tp: Any) -> list[Any]:
    if getattr(tp, "__origin__", None) is not None and str(get_origin(tp)).endswith("Literal"):
        return list(get_args(tp))
    out: list[Any] = []
    for arg in get_args(tp):
        out.extend(_literals(arg))
    return out


def check_openai(ctx: CompiledContext) -> dict[str, Any]:
    params = ctx.to_openai_params()
    for message in params["messages"]:
        validate(OPENAI_MESSAGE, message)
        assert_no_unknown_keys(message, ChatCompletionMessageParam)
    for tool in params.get("tools", []):
        validate(OPENAI_TOOL, tool)
        assert_no_unknown_keys(tool, ChatCompletionToolParam)
    validate(OPENAI_REQUEST, {**params, "model": "gpt-test"})
    json.dumps(params)
    return params


def check_anthropic(ctx: CompiledContext) -> dict[str, Any]:
    params = ctx.to_anthropic_params()
    for message in params["messages"]:
        validate(ANTHROPIC_MESSAGE, message)
        assert_no_unknown_keys(message, MessageParam)
    for tool in params.get("tools", []):
        validate(ANTHROPIC_TOOL, tool)
        assert_no_unknown_keys(tool, ToolParam)
    validate(ANTHROPIC_REQUEST, {**params, "model": "claude-test", "max_tokens": 16})
    roles = [m["role"] for m in params["messages"]]
    assert all(a != b for a, b in itertools.pairwise(roles)), roles
    assert "system" not in roles
    json.dumps(params)
    return params


def conversation() -> CompiledContext:
    return CompiledContext(
        messages=(
            Message("system", "You are terse."),
            Message("user", "Weather in Paris and Rome?"),
            Message(
                "assistant",
                "",
                tool_calls=(
                    ToolCall("call_1", "get_weather", '{"city": "Paris"}'),
                    ToolCall("call_2", "get_weather", {"city": "Rome"}),
                ),
            ),
            Message("tool", "18C sunny", tool_call_id="call_1", name="get_weather"),
            Message("tool", "city not found", tool_call_id="call_2", name="get_weather", is_error=True),
            Message("assistant", "Paris is 18C and sunny; Rome failed."),
        ),
        tools=(WEATHER, OPENAI_SHAPED, ANTHROPIC_SHAPED),
    )


# --- OpenAI -----------------------------------------------------------------------------------------


def test_to_openai_returns_a_plain_message_list() -> None:
    out = conversation().to_openai()
    assert isinstance(out, list)
    assert [m["role"] for m in out] == ["system", "user", "assistant", "tool", "tool", "assistant"]


def test_openai_assistant_tool_calls_have_string_arguments_and_empty_content() -> None:
    params = check_openai(conversation())
    assistant = params["messages"][2]
    assert assistant["content"] == ""
    assert assistant["tool_calls"] == [
        {
            "id": "call_1",
            "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
        },
        {
            "id": "call_2",
            "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city":"Rome"}'},
        },
    ]
    assert params["messages"][3] == {"role": "tool", "tool_call_id": "call_1", "content": "18C sunny"}


def test_openai_params_convert_every_tool_shape() -> None:
    params = check_openai(conversation())
    assert params["tools"] == [
        {"type": "function", "function": WEATHER},
        OPENAI_SHAPED,
        {
            "type": "function",
            "function": {
                "name": "calc",
                "description": "Arithmetic.",
                "parameters": ANTHROPIC_SHAPED["input_schema"],
            },
        },
    ]


def test_openai_params_omit_tools_when_there_are_none() -> None:
    params = check_openai(CompiledContext(messages=(Message("user", "hi"),)))
    assert params == {"messages": [{"role": "user", "content": "hi"}]}


def test_openai_tool_without_parameters_gets_an_empty_object_schema() -> None:
    ctx = CompiledContext(messages=(), tools=({"name": "ping", "strict": True},))
    params = check_openai(ctx)
    assert params["tools"] == [
        {
            "type": "function",
            "function": {"name": "ping", "parameters": {"type": "object", "properties": {}}, "strict": True},
        }
    ]


def test_openai_keeps_participant_names_on_user_messages() -> None:
    params = check_openai(CompiledContext(messages=(Message("user", "hi", name="alice"),)))
    assert params["messages"] == [{"role": "user", "content": "hi", "name": "alice"}]


# --- Anthropic --------------------------------------------------------------------------------------


def test_anthropic_splits_system_and_merges_tool_results() -> None:
    params = check_anthropic(conversation())
    assert params["system"] == "You are terse."
    assert params["messages"] == [
        {"role": "user", "content": "Weather in Paris and Rome?"},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "call_1", "name": "get_weather", "input": {"city": "Paris"}},
                {"type": "tool_use", "id": "call_2", "name": "get_weather", "input": {"city": "Rome"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "call_1", "content": "18C sunny"},
                {
                    "type": "tool_result",
                    "tool_use_id": "call_2",
                    "content": "city not found",
                    "is_error": True,
                },
            ],
        },
        {"role": "assistant", "content": "Paris is 18C and sunny; Rome failed."},
    ]


def test_anthropic_tools_use_input_schema() -> None:
    params = check_anthropic(conversation())
    assert params["tools"] == [
        {"name": "get_weather", "description": WEATHER["description"], "input_schema": WEATHER["parameters"]},
        {"name": "search", "description": "Web search.", "input_schema": {"type": "object"}},
        ANTHROPIC_SHAPED,
    ]


def test_to_anthropic_has_no_tools_and_params_omit_empty_keys() -> None:
    ctx = CompiledContext(messages=(Message("user", "hi"),), tools=(WEATHER,))
    assert ctx.to_anthropic() == {"messages": [{"role": "user", "content": "hi"}]}
    assert check_anthropic(CompiledContext(messages=(Message("user", "hi"),))) == {
        "messages": [{"role": "user", "content": "hi"}]
    }


def test_anthropic_joins_every_system_message() -> None:
    ctx = CompiledContext(
        messages=(Message("system", "A"), Message("user", "q"), Message("system", "B"), Message("system", ""))
    )
    assert ctx.to_anthropic() == {"system": "A\n\nB", "messages": [{"role": "user", "content": "q"}]}


def test_anthropic_merges_consecutive_user_messages_with_results_first() -> None:
    ctx = CompiledContext(
        messages=(
            Message("user", "first"),
            Message("assistant", "thinking", tool_calls=(ToolCall("t1", "f", "{}"),)),
            Message("user", "by the way"),
            Message("tool", "done", tool_call_id="t1", name="f"),
            Message("user", "and more"),
        )
    )
    params = check_anthropic(ctx)
    assert params["messages"][1]["content"] == [
        {"type": "text", "text": "thinking"},
        {"type": "tool_use", "id": "t1", "name": "f", "input": {}},
    ]
    assert params["messages"][2]["content"] == [
        {"type": "tool_result", "tool_use_id": "t1", "content": "done"},
        {"type": "text", "text": "by the way"},
        {"type": "text", "text": "and more"},
    ]


def test_anthropic_skips_messages_without_content() -> None:
    ctx = CompiledContext(messages=(Message("user", "a"), Message("assistant", ""), Message("user", "b")))
    params = check_anthropic(ctx)
    assert params["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}
    ]


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ('{"a": 1}', {"a": 1}),
        ("", {}),
        ("   ", {}),
        ("{not json", {"_raw": "{not json"}),
        ("[1, 2]", {"_raw": "[1, 2]"}),
        ({"b": [1]}, {"b": [1]}),
    ],
)
def test_anthropic_tool_use_input_is_always_an_object(arguments: Any, expected: dict[str, Any]) -> None:
    ctx = CompiledContext(
        messages=(
            Message("user", "go"),
            Message("assistant", "", tool_calls=(ToolCall("x", "f", arguments),)),
        )
    )
    params = check_anthropic(ctx)
    assert params["messages"][1]["content"][0]["input"] == expected


def test_malformed_arguments_reach_openai_verbatim() -> None:
    ctx = CompiledContext(
        messages=(Message("user", "go"), Message("assistant", "", tool_calls=(ToolCall("x", "f", "{oops"),)))
    )
    assert check_openai(ctx)["messages"][1]["tool_calls"][0]["function"]["arguments"] == "{oops"


def test_builtin_anthropic_tool_passes_through() -> None:
    bash = {"type": "bash_20250124", "name": "bash"}
    ctx = CompiledContext(messages=(Message("user", "ls"),), tools=(bash,))
    assert ctx.to_anthropic_params()["tools"] == [bash]
    assert ctx.to_openai_params()["tools"] == [bash]


@pytest.mark.parametrize(
    ("tool", "needle"),
    [
        ({"description": "no name"}, "tool #0"),
        ({"name": ""}, "tool #0"),
        ({"name": "f", "parameters": "nope"}, "tool 'f'"),
        ({"name": "f", "description": 3}, "tool 'f'"),
    ],
)
def test_unusable_tool_schema_is_a_clear_error(tool: dict[str, Any], needle: str) -> None:
    ctx = CompiledContext(messages=(), tools=(tool,))
    with pytest.raises(TranscriptError, match=needle):
        ctx.to_openai_params()
    with pytest.raises(TranscriptError, match=needle):
        ctx.to_anthropic_params()


# --- property: any neutral conversation yields valid requests ----------------------------------------

_text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
_ids = st.from_regex(r"[a-zA-Z0-9_-]{1,8}", fullmatch=True)
_args = st.one_of(
    _text,
    st.dictionaries(st.from_regex(r"[a-z]{1,5}", fullmatch=True), st.integers() | _text, max_size=3),
)
_calls = st.lists(st.builds(ToolCall, _ids, st.sampled_from(["f", "g"]), _args), max_size=3)
_message = st.one_of(
    st.builds(Message, st.sampled_from(["system", "user"]), _text),
    st.builds(lambda t, c: Message("assistant", t, tool_calls=tuple(c)), _text, _calls),
    st.builds(
        lambda t, i, e: Message("tool", t, tool_call_id=i, name="f", is_error=e), _text, _ids, st.booleans()
    ),
)


@given(
    st.lists(_message, max_size=12),
    st.lists(st.sampled_from([WEATHER, OPENAI_SHAPED, ANTHROPIC_SHAPED]), max_size=3),
)
def test_any_conversation_converts_to_valid_sdk_params(messages: list[Message], tools: list[Any]) -> None:
    ctx = CompiledContext(messages=tuple(messages), tools=tuple(tools))
    openai = check_openai(ctx)
    assert len(openai["messages"]) == len(messages)
    anthropic = check_anthropic(ctx)
    wire_blocks = sum(
        1 if isinstance(m["content"], str) else len(m["content"]) for m in anthropic["messages"]
    )
    expected_blocks = sum(
        (1 if m.content else 0) + len(m.tool_calls) if m.role in ("user", "assistant") else 1
        for m in messages
        if m.role != "system"
    )
    assert wire_blocks == expected_blocks


def test_the_key_checker_itself_rejects_unknown_keys() -> None:
    with pytest.raises(AssertionError, match="fit none"):
        assert_no_unknown_keys(
            {"role": "tool", "tool_call_id": "x", "content": "", "name": "f"}, ChatCompletionMessageParam
        )
    with pytest.raises(AssertionError, match="fit none"):
        assert_no_unknown_keys(
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "x", "bogus": 1}]},
            MessageParam,
        )
