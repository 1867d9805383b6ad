"""Scripted models: the script() builder and the scripts_for strategy, through the real loop."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings

from loop_support import AddParams, Answer, Sum, arithmetic_prompt, echo
from weakprompt.adapters.testing import ScriptedAdapter
from weakprompt.messages import AssistantTurn, ToolCall, Usage
from weakprompt.runtime import evaluate
from weakprompt.session import Session
from weakprompt.store import Store
from weakprompt.testing import Script, script, scripts_for


def test_script_reads_as_the_conversation_it_produces() -> None:
    built = (
        script()
        .call("add", AddParams(a=2, b=3))
        .call(echo, {"text": "hi"}, text="echoing")
        .call("add", '{"a": 1,')
        .answer(Answer(value=5, note="done"))
    )

    assert len(built) == 4 and built.call_count == 3
    calls = [turn.tool_calls for turn in built.turns[:3]]
    assert calls == [
        (ToolCall(id="call_1", name="add", arguments={"a": 2, "b": 3}),),
        (ToolCall(id="call_2", name="echo", arguments={"text": "hi"}),),
        (ToolCall(id="call_3", name="add", arguments='{"a": 1,'),),
    ]
    assert built.turns[1].text == "echoing"
    assert [turn.finish_reason for turn in built] == ["tool_calls", "tool_calls", "tool_calls", "stop"]
    assert json.loads(built.turns[-1].text) == {"value": 5, "note": "done"}


def test_parallel_calls_explicit_usage_and_hand_made_turns() -> None:
    usage = Usage(input_tokens=3, output_tokens=1, model_calls=1)
    base = script(AssistantTurn(text="thinking"))
    built = base.calls(
        base.tool_call("add", None), base.tool_call("echo", {"text": "x"}, id="mine"), usage=usage
    )
    built = built.then(AssistantTurn(text="raw")).answer("plain text", usage=usage)

    assert [call.id for call in built.turns[1].tool_calls] == ["call_1", "mine"]
    assert built.turns[1].tool_calls[0].arguments == {}
    assert built.turns[1].usage is usage and built.turns[-1].usage is usage
    assert [turn.text for turn in built] == ["thinking", "", "raw", "plain text"]
    assert list(built) == list(built.turns)


def test_arguments_must_be_an_object() -> None:
    with pytest.raises(TypeError, match="tool arguments must be an object, got list"):
        script().call("add", [1, 2])


def test_the_adapter_plays_the_script_and_estimates_usage() -> None:
    played = script().call("add", AddParams(a=2, b=3)).answer("It is 5.")
    adapter = played.adapter(name="fake")

    assert isinstance(adapter, ScriptedAdapter) and adapter.name == "fake"
    with Store.open("sqlite://") as store:
        response = evaluate(
            arithmetic_prompt(), adapter=adapter, session=Session(), input="2+3?", store=store
        )

    assert response.text == "It is 5."
    assert [execution.result.value for execution in response.tool_executions] == [Sum(total=5)]
    assert response.usage.model_calls == 2
    assert response.usage.input_tokens > 0 and response.usage.output_tokens > 0
    assert adapter.requests[1].context.messages[-1].role == "tool"


RENDERED = arithmetic_prompt(output=True).render()


@settings(max_examples=30, deadline=None)
@given(played=scripts_for(RENDERED, max_calls=3))
def test_the_loop_runs_any_generated_script_to_its_typed_answer(played: Script) -> None:
    with Store.open("sqlite://") as store:
        response = evaluate(
            arithmetic_prompt(output=True),
            adapter=played.adapter(),
            session=Session(),
            input="go",
            store=store,
        )

    assert response.turns == len(played)
    assert len(response.tool_executions) == played.call_count
    assert all(execution.success for execution in response.tool_executions)
    assert isinstance(response.output, Answer)
    assert json.loads(played.turns[-1].text) == {"value": response.output.value, "note": response.output.note}


@settings(max_examples=30, deadline=None)
@given(played=scripts_for(RENDERED.tools, invalid=True))
def test_invalid_scripts_mix_in_refused_calls_and_plain_answers(played: Script) -> None:
    assert played.turns[-1].tool_calls == ()
    assert played.call_count <= 3


def test_scripts_for_a_prompt_without_tools_only_answers() -> None:
    @settings(max_examples=10, deadline=None)
    @given(scripts_for([]))
    def check(played: Script) -> None:
        assert len(played) == 1 and played.call_count == 0

    check()


def test_answers_can_be_given_as_a_strategy() -> None:
    from hypothesis import strategies as st

    @settings(max_examples=10, deadline=None)
    @given(scripts_for(RENDERED, max_calls=1, answers=st.just("fixed")))
    def check(played: Script) -> None:
        assert played.turns[-1].text == "fixed"

    check()
