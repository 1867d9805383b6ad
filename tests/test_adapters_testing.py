"""ScriptedAdapter, FunctionAdapter and the turn builders."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adapters_support import USER, get_weather, make_request
from weakprompt.adapters.testing import (
    FunctionAdapter,
    ScriptedAdapter,
    as_turn,
    text_turn,
    tool_call,
    tool_call_turn,
)
from weakprompt.errors import AdapterError
from weakprompt.messages import AssistantTurn, ToolCall, Usage
from weakprompt.model import ProviderAdapter

REQUEST = make_request([USER])


def test_scripted_returns_turns_in_order_and_records_requests() -> None:
    call_turn = tool_call_turn(tool_call("get_weather", {"city": "Oslo"}, id="c1"))
    adapter = ScriptedAdapter([call_turn, "done"])
    second = make_request([USER], tools=[get_weather])

    assert adapter.complete(REQUEST) is call_turn
    assert adapter.remaining == 1
    final = adapter.complete(second)

    assert final == AssistantTurn(text="done", usage=Usage(model_calls=1), finish_reason="stop")
    assert adapter.requests == (REQUEST, second)
    assert adapter.remaining == 0


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


def test_both_satisfy_the_adapter_protocol_without_token_counters() -> None:
    scripted = ScriptedAdapter([], context_window=100)
    function = FunctionAdapter(lambda request: "x")

    for adapter in (scripted, function):
        assert isinstance(adapter, ProviderAdapter)
        assert adapter.token_counter is None
    assert (scripted.name, scripted.model, scripted.context_window) == ("scripted", "scripted", 100)
    assert (function.name, function.context_window) == ("function", None)


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
