"""ScriptedAdapter, FunctionAdapter and the turn builders."""

from __future__ import annotations

import json

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from adapters_support import SYSTEM, USER, get_weather, make_request
from weakprompt.adapters.testing import (
    FunctionAdapter,
    ScriptedAdapter,
    as_turn,
    estimate_usage,
    text_turn,
    tool_call,
    tool_call_turn,
)
from weakprompt.errors import AdapterError
from weakprompt.messages import AssistantTurn, Message, ToolCall, Usage
from weakprompt.model import ProviderAdapter
from weakprompt.tokens import DEFAULT_TOKEN_COUNTER

REQUEST = make_request([USER])


class CharCounter:
    """One token per character: makes the expected counts easy to write down."""

    exact = True

    def count(self, text: str) -> int:
        return len(text)


def test_scripted_returns_turns_in_order_and_records_requests() -> None:
    call_turn = tool_call_turn(tool_call("get_weather", {"city": "Oslo"}, id="c1"))
    adapter = ScriptedAdapter([call_turn, "done"])
    second = make_request([USER], tools=[get_weather])

    first = adapter.complete(REQUEST)
    assert first == attrs.evolve(call_turn, usage=estimate_usage(REQUEST, call_turn, DEFAULT_TOKEN_COUNTER))
    assert adapter.remaining == 1
    final = adapter.complete(second)

    assert (final.text, final.tool_calls, final.finish_reason) == ("done", (), "stop")
    assert final.usage == estimate_usage(second, final, DEFAULT_TOKEN_COUNTER)
    assert adapter.requests == (REQUEST, second)
    assert adapter.remaining == 0


def test_unstated_usage_is_counted_from_the_request_and_the_reply() -> None:
    request = make_request([SYSTEM, USER], tools=[get_weather], output_schema={"type": "object"})
    call = tool_call("get_weather", {"city": "Oslo"}, id="c1")
    adapter = ScriptedAdapter([tool_call_turn(call, text="checking")], token_counter=CharCounter())

    usage = adapter.complete(request).usage

    tool_text = json.dumps(get_weather.spec(), ensure_ascii=False, separators=(",", ":"))
    expected_input = len(SYSTEM.content) + len(USER.content) + len(tool_text) + len('{"type":"object"}')
    expected_output = len("checking") + len("get_weather") + len('{"city":"Oslo"}')
    assert usage == Usage(input_tokens=expected_input, output_tokens=expected_output, model_calls=1)


def test_earlier_tool_calls_in_the_context_count_as_input() -> None:
    call = ToolCall(id="c1", name="get_weather", arguments='{"city": "Oslo"}')
    asked = Message(role="assistant", content="", tool_calls=(call,))
    answered = Message(role="tool", content="18 degrees", tool_call_id="c1")
    request = make_request([USER, asked, answered])

    usage = ScriptedAdapter(["ok"], token_counter=CharCounter()).complete(request).usage

    call_tokens = len("get_weather") + len(call.arguments)
    assert usage.input_tokens == len(USER.content) + call_tokens + len("18 degrees")
    assert usage.output_tokens == 2


@pytest.mark.parametrize(
    "usage", [Usage(), Usage(model_calls=1), Usage(input_tokens=5, output_tokens=2, model_calls=1)]
)
def test_explicit_usage_is_kept_as_given(usage: Usage) -> None:
    turns = [text_turn("a", usage=usage), AssistantTurn(text="b", usage=usage)]
    adapter = ScriptedAdapter(turns, token_counter=CharCounter())

    assert [adapter.complete(REQUEST).usage for _ in turns] == [usage, usage]


def test_a_bare_assistant_turn_is_estimated_as_one_call() -> None:
    usage = ScriptedAdapter([AssistantTurn(text="four")], token_counter=CharCounter()).complete(REQUEST).usage

    assert usage == Usage(input_tokens=len(USER.content), output_tokens=4, model_calls=1)


@given(st.text(max_size=60), st.text(max_size=60))
def test_estimates_use_the_default_counter_when_none_is_configured(question: str, answer: str) -> None:
    request = make_request([Message(role="user", content=question)])

    usage = FunctionAdapter(lambda _: answer).complete(request).usage

    count = DEFAULT_TOKEN_COUNTER.count
    assert usage == Usage(input_tokens=count(question), output_tokens=count(answer), model_calls=1)


def test_scripted_names_the_script_length_when_it_runs_out() -> None:
    adapter = ScriptedAdapter(["only"], name="script-a")
    adapter.complete(REQUEST)

    with pytest.raises(AdapterError, match=r"script has 1 turn\(s\).*call number 2") as info:
        adapter.complete(REQUEST)

    assert info.value.provider == "script-a"
    assert len(adapter.requests) == 1  # the failed call is not recorded as served


@given(st.lists(st.text(max_size=20), max_size=8))
def test_scripted_replays_any_script_exactly(texts: list[str]) -> None:
    adapter = ScriptedAdapter(texts)
    replies = [adapter.complete(REQUEST).text for _ in texts]

    assert replies == texts
    with pytest.raises(AdapterError):
        adapter.complete(REQUEST)


def test_function_adapter_sees_each_request() -> None:
    def reply(request: object) -> AssistantTurn | str:
        assert request is REQUEST or request is other
        return "first" if len(adapter.requests) == 1 else text_turn("second", finish_reason="length")

    other = make_request([USER], tool_choice="none")
    adapter = FunctionAdapter(reply, name="fn", model="m1", context_window=2048)

    assert adapter.complete(REQUEST).text == "first"
    second = adapter.complete(other)

    assert (second.text, second.finish_reason) == ("second", "length")
    assert adapter.requests == (REQUEST, other)
    assert (adapter.name, adapter.model, adapter.context_window) == ("fn", "m1", 2048)


def test_a_function_adapter_that_keeps_no_requests_still_answers_each() -> None:
    seen: list[object] = []

    def reply(request: object) -> str:
        seen.append(request)
        return f"answer {len(seen)}"

    adapter = FunctionAdapter(reply, keep_requests=False)
    assert [adapter.complete(REQUEST).text for _ in range(3)] == ["answer 1", "answer 2", "answer 3"]
    assert seen == [REQUEST] * 3
    assert adapter.requests == ()


def test_both_satisfy_the_adapter_protocol_without_token_counters() -> None:
    scripted = ScriptedAdapter([], context_window=100)
    function = FunctionAdapter(lambda request: "x")

    for adapter in (scripted, function):
        assert isinstance(adapter, ProviderAdapter)
        assert adapter.token_counter is None
    assert (scripted.name, scripted.model, scripted.context_window) == ("scripted", "scripted", 100)
    assert (function.name, function.context_window) == ("function", None)


def test_a_configured_counter_is_the_adapters_token_counter() -> None:
    counter = CharCounter()

    assert ScriptedAdapter([], token_counter=counter).token_counter is counter
    assert FunctionAdapter(lambda request: "x", token_counter=counter).token_counter is counter


def test_tool_call_builders() -> None:
    first = tool_call("get_weather", {"city": "Rome"})
    second = tool_call("get_weather")
    raw = tool_call("get_weather", '{"city": ', id="broken")
    turn = tool_call_turn(first, raw, text="checking")

    assert first.id != second.id
    assert second.arguments == {}
    assert raw == ToolCall(id="broken", name="get_weather", arguments='{"city": ')
    assert turn.tool_calls == (first, raw)
    assert (turn.text, turn.finish_reason, turn.usage.model_calls) == ("checking", "tool_calls", 1)


def test_as_turn_keeps_turns_and_wraps_strings() -> None:
    turn = AssistantTurn(text="kept", finish_reason="length")

    assert as_turn(turn) is turn
    assert as_turn("wrapped") == text_turn("wrapped")
