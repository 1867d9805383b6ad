"""Reasoning through the loop: streamed to the caller, kept in the turn's parts, sent back."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from weakprompt import Agent, ScriptedAdapter, Store, tool
from weakprompt.adapters.testing import streamed, tool_call
from weakprompt.errors import AdapterError
from weakprompt.events import ReasoningDelta, RunFinished, TextDelta
from weakprompt.messages import AssistantTurn, Usage
from weakprompt.model import ReplyAssembler, ReplyCompleted, UsageReported, assemble, turn_events
from weakprompt.parts import ReasoningPart, TextPart
from weakprompt.transcript import Transcript

THOUGHT = ReasoningPart("I need the weather first.", issuer="anthropic:claude-x", signature="c2lnbmVk")


@tool
def weather(city: str) -> str:
    """The weather in a city."""
    return f"18 degrees in {city}"


def _script() -> ScriptedAdapter:
    asking = AssistantTurn(
        text="Looking it up.",
        tool_calls=(tool_call("weather", {"city": "Paris"}, id="w1"),),
        finish_reason="tool_calls",
        parts=(THOUGHT, TextPart("Looking it up.")),
    )
    return ScriptedAdapter([asking, "Mild, 18 degrees."])


def test_reasoning_deltas_fold_into_parts_in_the_order_each_began() -> None:
    assembler = ReplyAssembler()
    assembler.add(ReasoningDelta(0, "first ", issuer="openai:o4", id="rs_1"))
    assembler.add(TextDelta("Hello"))
    assembler.add(ReasoningDelta(1, issuer="openai:o4", id="rs_2"))
    assembler.add(ReasoningDelta(0, "thought", encrypted="gAAA"))
    assembler.add(ReasoningDelta(1, "", redacted=True))
    (completed,) = assembler.finish("stop")
    assert isinstance(completed, ReplyCompleted)
    assert completed.turn.parts == (
        ReasoningPart("first thought", issuer="openai:o4", encrypted="gAAA", id="rs_1"),
        TextPart("Hello"),
        ReasoningPart("", issuer="openai:o4", id="rs_2", redacted=True),
    )


def test_a_completion_whose_reasoning_is_not_the_streamed_one_is_refused() -> None:
    assembler = ReplyAssembler(provider="p")
    assembler.add(ReasoningDelta(0, "a", issuer="x:y"))
    forged = AssistantTurn(parts=(ReasoningPart("b", issuer="x:y"),))
    with pytest.raises(AdapterError, match="completed reasoning"):
        assembler.add(ReplyCompleted(forged))


_reasoning_parts = st.builds(
    ReasoningPart,
    text=st.text(max_size=20),
    issuer=st.sampled_from(["anthropic:c", "openai:o", "gemini:g"]),
    signature=st.none() | st.text(min_size=1, max_size=8),
    encrypted=st.none() | st.text(min_size=1, max_size=8),
    redacted=st.booleans(),
    id=st.none() | st.text(min_size=1, max_size=8),
)


@st.composite
def _reasoning_turns(draw: st.DrawFn) -> AssistantTurn:
    reasoning = draw(st.lists(_reasoning_parts, min_size=1, max_size=3))
    text = draw(st.text(max_size=30))
    position = draw(st.integers(0, len(reasoning)))
    parts = list(reasoning)
    if text:
        parts.insert(position, TextPart(text))
    return AssistantTurn(text=text, usage=Usage(model_calls=1, reasoning_tokens=3), parts=tuple(parts))


@given(_reasoning_turns())
def test_any_reasoning_turn_streams_back_to_itself(turn: AssistantTurn) -> None:
    assert assemble(turn_events(turn)) == turn
    assert assemble(streamed(turn).play()) == turn


def test_a_turn_without_reasoning_has_no_parts_after_the_fold() -> None:
    assembler = ReplyAssembler()
    assembler.add(TextDelta("hi"))
    assembler.add(UsageReported(Usage(model_calls=1)))
    assert assembler.finish("stop")[-1] == ReplyCompleted(
        AssistantTurn(text="hi", usage=Usage(model_calls=1))
    )


def test_a_streamed_run_hands_reasoning_to_the_caller_and_sends_it_back(tmp_path: Path) -> None:
    adapter = _script()
    with Store.open(tmp_path / "runs.db") as store:
        agent = Agent(adapter, instructions="Answer about the weather.", tools=[weather], store=store)
        with agent.stream_sync("Weather in Paris?", session="s1") as events:
            seen = list(events)
        deltas = [event for event in seen if isinstance(event, ReasoningDelta)]
        assert deltas and {delta.turn for delta in deltas} == {1}
        assert "".join(delta.text for delta in deltas) == THOUGHT.text
        assert isinstance(seen[-1], RunFinished)
        sent = adapter.requests[1].context.messages
        said = next(message for message in sent if message.role == "assistant")
        assert said.parts == (THOUGHT, TextPart("Looking it up."))
        stored = Transcript(store, "s1").compile().messages
        assert next(m for m in stored if m.role == "assistant").parts == said.parts


def test_a_whole_reply_run_keeps_the_parts_too() -> None:
    adapter = _script()
    response = Agent(adapter, instructions="Answer.", tools=[weather]).run_sync("Weather in Paris?")
    assert response.text == "Mild, 18 degrees."
    said = next(m for m in adapter.requests[1].context.messages if m.role == "assistant")
    assert said.parts[0] == THOUGHT


def test_a_whole_turn_with_other_parts_streams_its_text_once_where_it_began() -> None:
    from weakprompt.parts import ImagePart

    image = ImagePart(media_type="image/png", url="https://example.test/a.png")
    turn = AssistantTurn(text="a\n\nb", parts=(THOUGHT, TextPart("a"), image, TextPart("b")))
    events = turn_events(turn)
    assert [type(event).__name__ for event in events[:2]] == ["ReasoningDelta", "TextDelta"]
    assert [event.text for event in events if isinstance(event, TextDelta)] == ["a\n\nb"]
    assert events[-1] == ReplyCompleted(turn)
