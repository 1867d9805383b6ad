"""ScriptedAdapter and FunctionAdapter streaming: plain turns, scripted streams, async functions."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adapters_support import USER, make_request
from stream_support import collect, collect_until_error, final_turn, of_type, turns
from weakprompt.adapters.testing import (
    FunctionAdapter,
    ScriptedAdapter,
    StreamScript,
    estimate_usage,
    streamed,
    text_turn,
    tool_call,
    tool_call_turn,
)
from weakprompt.errors import AdapterError, ProviderError
from weakprompt.messages import AssistantTurn, ToolCall, Usage
from weakprompt.model import (
    ModelEvent,
    ModelRequest,
    ReplyCompleted,
    TextDelta,
    ToolCallDelta,
    ToolCallReady,
    ToolCallStarted,
    UsageReported,
    assemble,
    complete_async,
)
from weakprompt.tokens import DEFAULT_TOKEN_COUNTER

REQUEST = make_request([USER])


def test_a_plain_turn_streams_like_a_provider() -> None:
    turn = tool_call_turn(
        tool_call("get_weather", {"city": "Oslo"}, id="c1"),
        text="Let me check the weather.",
        usage=Usage(input_tokens=12, output_tokens=9, model_calls=1),
    )
    events = collect(ScriptedAdapter([turn]), REQUEST)

    texts = of_type(events, TextDelta)
    assert len(texts) == 5 and "".join(t.text for t in texts) == turn.text
    assert of_type(events, ToolCallStarted) == [ToolCallStarted(0, "c1", "get_weather")]
    pieces = of_type(events, ToolCallDelta)
    assert len(pieces) > 1 and "".join(p.arguments_delta for p in pieces) == '{"city":"Oslo"}'
    assert of_type(events, UsageReported) == [UsageReported(turn.usage)]
    assert of_type(events, ToolCallReady) == [ToolCallReady(0, turn.tool_calls[0])]
    assert final_turn(events) == turn
    # text first, then the call, then the completion
    kinds = [type(event).__name__ for event in events]
    assert kinds.index("ToolCallStarted") > max(i for i, k in enumerate(kinds) if k == "TextDelta")


def test_text_then_a_tool_call_in_one_scripted_stream() -> None:
    script = StreamScript(
        [
            TextDelta("Checking"),
            TextDelta("..."),
            ToolCallStarted(0, "c1", "get_weather"),
            ToolCallDelta(0, '{"city":'),
            ToolCallDelta(0, '"Rome"}'),
        ]
    )
    events = collect(ScriptedAdapter([script]), REQUEST)

    turn = final_turn(events)
    call = ToolCall("c1", "get_weather", '{"city":"Rome"}')
    assert (turn.text, turn.tool_calls, turn.finish_reason) == ("Checking...", (call,), "tool_calls")
    assert ScriptedAdapter([script]).complete(REQUEST) == turn


def test_a_script_without_usage_is_charged_an_estimate_before_it_completes() -> None:
    script = StreamScript(
        [TextDelta("Checking"), ToolCallStarted(0, "c1", "get_weather"), ToolCallDelta(0, "{}")]
    )

    events = collect(ScriptedAdapter([script]), REQUEST)

    call = ToolCall("c1", "get_weather", "{}")
    expected = estimate_usage(
        REQUEST, AssistantTurn(text="Checking", tool_calls=(call,)), DEFAULT_TOKEN_COUNTER
    )
    assert expected.input_tokens > 0 and expected.output_tokens > 0
    kinds = [type(e).__name__ for e in events]
    assert kinds[-3:] == ["ToolCallReady", "UsageReported", "ReplyCompleted"]
    assert final_turn(events).usage == expected
    assert ScriptedAdapter([script]).complete(REQUEST).usage == expected


def test_whitespace_before_tool_calls_is_not_a_final_answer() -> None:
    script = StreamScript(
        [TextDelta("\n\n"), ToolCallStarted(0, "c1", "get_weather"), ToolCallDelta(0, "{}")]
    )

    turn = final_turn(collect(ScriptedAdapter([script]), REQUEST))

    assert turn.text == "\n\n"
    assert turn.tool_calls == (ToolCall("c1", "get_weather", "{}"),)
    assert turn.finish_reason == "tool_calls"


def test_interleaved_argument_pieces_of_several_calls() -> None:
    script = StreamScript(
        [
            ToolCallStarted(0, "c1", "get_weather"),
            ToolCallStarted(1, "c2", "search_notes"),
            ToolCallDelta(1, '{"query": '),
            ToolCallDelta(0, '{"city": '),
            ToolCallDelta(1, '"dentist"}'),
            ToolCallDelta(0, '"Oslo"}'),
            UsageReported(Usage(input_tokens=20, output_tokens=14, model_calls=1)),
        ]
    )
    events = collect(ScriptedAdapter([script]), REQUEST)

    assert of_type(events, ToolCallReady) == [
        ToolCallReady(0, ToolCall("c1", "get_weather", '{"city": "Oslo"}')),
        ToolCallReady(1, ToolCall("c2", "search_notes", '{"query": "dentist"}')),
    ]
    assert final_turn(events).usage == Usage(input_tokens=20, output_tokens=14, model_calls=1)


def test_a_stream_that_ends_without_finish_reason() -> None:
    script = StreamScript([TextDelta("The answer is")], finish_reason=None)

    turn = final_turn(collect(ScriptedAdapter([script]), REQUEST))

    assert (turn.text, turn.finish_reason) == ("The answer is", "other")


def test_a_provider_error_mid_stream() -> None:
    failure = ProviderError("scripted error: overloaded", provider="scripted")
    script = StreamScript([TextDelta("Half "), TextDelta("an answer")], error=failure)
    adapter = ScriptedAdapter([script, script])

    seen, error = collect_until_error(adapter, REQUEST)

    assert seen == [TextDelta("Half "), TextDelta("an answer")]
    assert error is failure
    with pytest.raises(ProviderError, match="overloaded"):
        adapter.complete(REQUEST)


def test_a_list_of_parts_is_a_stream_script() -> None:
    stated = Usage(input_tokens=1, output_tokens=1, model_calls=1)
    adapter = ScriptedAdapter([[TextDelta("a"), TextDelta("b"), UsageReported(stated)]])
    assert adapter.complete(REQUEST) == AssistantTurn(text="ab", usage=stated)


@pytest.mark.parametrize(
    ("part", "problem"),
    [
        (ReplyCompleted(AssistantTurn()), "StreamScript part 1 is ReplyCompleted: the adapter adds"),
        ("text", "StreamScript part 1 is str: not a part"),
    ],
)
def test_stream_scripts_refuse_what_is_not_a_part(part: object, problem: str) -> None:
    with pytest.raises(TypeError, match=problem):
        StreamScript([TextDelta("x"), part])  # type: ignore[list-item]


def test_the_streamed_script_of_a_turn_completes_with_that_turn() -> None:
    turn = AssistantTurn(
        text="  two words ",
        tool_calls=(ToolCall("c1", "t", {"a": [1, 2]}), ToolCall("c2", "u", "")),
        usage=Usage(input_tokens=1, model_calls=1),
        finish_reason="length",
    )
    script = streamed(turn)

    assert [p for p in script.parts if isinstance(p, TextDelta)] == [
        TextDelta("  "),
        TextDelta("two "),
        TextDelta("words "),
    ]
    assert assemble(script.play()) == turn


def test_scripted_stream_past_the_end_names_the_script_length() -> None:
    adapter = ScriptedAdapter(["only"])
    collect(adapter, REQUEST)

    with pytest.raises(AdapterError, match=r"script has 1 turn\(s\)"):
        collect(adapter, REQUEST)
    assert adapter.requests == (REQUEST,)


def test_function_adapter_streams_what_its_function_returns() -> None:
    adapter = FunctionAdapter(lambda request: "streamed answer")

    events = collect(adapter, REQUEST)

    assert [e for e in events if isinstance(e, TextDelta)] == [TextDelta("streamed "), TextDelta("answer")]
    assert final_turn(events) == adapter.complete(REQUEST)
    assert final_turn(events).text == "streamed answer"
    assert adapter.requests == (REQUEST, REQUEST)


async def _async_reply(request: ModelRequest) -> AssistantTurn | str:
    await asyncio.sleep(0)
    return "async answer" if request.tool_choice == "auto" else text_turn("other", finish_reason="length")


def test_function_adapter_accepts_an_async_function() -> None:
    adapter = FunctionAdapter(_async_reply)

    whole = adapter.complete(REQUEST)
    assert (whole.text, whole.finish_reason) == ("async answer", "stop")
    assert final_turn(collect(adapter, REQUEST)) == whole
    other = asyncio.run(complete_async(adapter, make_request([USER], tool_choice="none")))
    assert (other.text, other.finish_reason) == ("other", "length")
    assert len(adapter.requests) == 3


def test_async_function_from_complete_inside_a_running_loop() -> None:
    adapter = FunctionAdapter(_async_reply)

    async def inside_a_loop() -> AssistantTurn:
        return adapter.complete(REQUEST)  # a sync caller on an event loop thread

    assert asyncio.run(inside_a_loop()) == adapter.complete(REQUEST)
    assert adapter.complete(REQUEST).text == "async answer"


def test_function_adapter_can_return_a_stream_script() -> None:
    failure = ProviderError("function error: dropped", provider="function")

    def reply(request: ModelRequest) -> StreamScript:
        return StreamScript([TextDelta("partial")], error=failure)

    seen, error = collect_until_error(FunctionAdapter(reply), REQUEST)
    assert (seen, error) == ([TextDelta("partial")], failure)
    with pytest.raises(ProviderError, match="dropped"):
        FunctionAdapter(reply).complete(REQUEST)


# ---------------------------------------------------------------- properties


@given(turns())
def test_scripted_stream_assembles_to_what_complete_returns(turn: AssistantTurn) -> None:
    streamed_turn = final_turn(collect(ScriptedAdapter([turn]), REQUEST))
    assert streamed_turn == ScriptedAdapter([turn]).complete(REQUEST) == turn

    function = FunctionAdapter(lambda request: turn)
    assert asyncio.run(complete_async(function, REQUEST)) == function.complete(REQUEST)


@st.composite
def interleaved_scripts(draw: st.DrawFn) -> tuple[StreamScript, dict[int, str]]:
    """A stream whose call argument pieces interleave in any order; the expected arguments per call."""
    count = draw(st.integers(1, 4))
    pieces = {index: draw(st.lists(st.text(max_size=5), min_size=0, max_size=4)) for index in range(count)}
    pending: list[ModelEvent] = []
    queues = {index: list(parts) for index, parts in pieces.items()}
    started: list[int] = []
    while len(started) < count or any(queues.values()):
        choices = [("start", i) for i in range(count) if i not in started]
        choices += [("delta", i) for i in started if queues[i]]
        kind, index = draw(st.sampled_from(choices))
        if kind == "start":
            started.append(index)
            pending.append(ToolCallStarted(index, f"c{index}", f"tool{index}"))
        else:
            pending.append(ToolCallDelta(index, queues[index].pop(0)))
    text = draw(st.sampled_from(["", "\n", "Working on it."]))
    parts = ([TextDelta(text)] if text else []) + pending  # type: ignore[operator]
    finish = draw(st.sampled_from(["auto", None, "length"]))
    return StreamScript(parts, finish_reason=finish), {i: "".join(p) for i, p in pieces.items()}  # type: ignore[arg-type]


@given(interleaved_scripts())
def test_interleaved_scripted_streams_assemble_to_what_complete_returns(
    case: tuple[StreamScript, dict[int, str]],
) -> None:
    script, expected = case
    events = collect(ScriptedAdapter([script]), REQUEST)
    turn = final_turn(events)

    assert turn == ScriptedAdapter([script]).complete(REQUEST)
    assert [call.arguments for call in turn.tool_calls] == [expected[i] for i in sorted(expected)]
    assert [call.id for call in turn.tool_calls] == [f"c{i}" for i in sorted(expected)]
    assert (
        turn.finish_reason == {"auto": "tool_calls", None: "other", "length": "length"}[script.finish_reason]
    )
    ready = of_type(events, ToolCallReady)
    assert [r.index for r in ready] == sorted(expected)
