"""The streaming contract: the event union, the fold into a turn, complete_async."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from hypothesis import given

from adapters_support import USER, make_request
from stream_support import turns
from weakprompt.errors import AdapterError
from weakprompt.messages import AssistantTurn, ToolCall, Usage
from weakprompt.model import (
    ModelEvent,
    ModelRequest,
    ProviderAdapter,
    ReplyAssembler,
    ReplyCompleted,
    TextDelta,
    ToolCallDelta,
    ToolCallReady,
    ToolCallStarted,
    UsageReported,
    WholeReplyAdapter,
    assemble,
    complete_async,
    drain,
    turn_events,
)
from weakprompt.tokens import TokenCounter

REQUEST = make_request([USER])


def test_interleaved_argument_pieces_are_joined_per_call_in_index_order() -> None:
    assembler = ReplyAssembler()
    for event in [
        ToolCallStarted(1, "c2", "search_notes"),
        ToolCallStarted(0, "c1", "get_weather"),
        ToolCallDelta(0, '{"ci'),
        ToolCallDelta(1, '{"query"'),
        ToolCallDelta(0, 'ty": "Oslo"}'),
        ToolCallDelta(1, ': "x"}'),
    ]:
        assert assembler.add(event) is event

    *ready, completed = assembler.finish("tool_calls")

    assert ready == [
        ToolCallReady(0, ToolCall("c1", "get_weather", '{"city": "Oslo"}')),
        ToolCallReady(1, ToolCall("c2", "search_notes", '{"query": "x"}')),
    ]
    assert isinstance(completed, ReplyCompleted)
    assert [call.name for call in completed.turn.tool_calls] == ["get_weather", "search_notes"]
    assert completed.turn.finish_reason == "tool_calls"
    assert assembler.result() == completed.turn


def test_whitespace_before_tool_calls_stays_the_text_of_a_tool_call_turn() -> None:
    assembler = ReplyAssembler()
    assembler.add(TextDelta("\n"))
    assembler.add(TextDelta(" \n"))
    assembler.add(ToolCallStarted(0, "c1", "get_weather"))
    assembler.add(ToolCallDelta(0, "{}"))
    assembler.finish("tool_calls")

    turn = assembler.result()
    assert turn.text == "\n \n"
    assert turn.tool_calls == (ToolCall("c1", "get_weather", "{}"),)


def test_whitespace_only_text_without_calls_is_an_empty_final_answer_as_given() -> None:
    assembler = ReplyAssembler()
    assembler.add(TextDelta("  "))
    assembler.finish("stop")

    assert assembler.result() == AssistantTurn(text="  ", usage=Usage(model_calls=1), finish_reason="stop")


def test_a_stream_without_finish_reason_completes_as_other() -> None:
    assembler = ReplyAssembler()
    assembler.add(TextDelta("partial"))
    assembler.add(ToolCallStarted(0, "c1", "t"))
    assembler.add(ToolCallDelta(0, '{"a":'))

    *_, completed = assembler.finish(None)

    assert isinstance(completed, ReplyCompleted)
    assert completed.turn.finish_reason == "other"
    assert completed.turn.text == "partial"
    assert completed.turn.tool_calls == (ToolCall("c1", "t", '{"a":'),)


def test_the_last_usage_report_wins_and_none_means_one_call() -> None:
    assembler = ReplyAssembler()
    assembler.add(UsageReported(Usage(input_tokens=10, output_tokens=1, model_calls=1)))
    assembler.add(UsageReported(Usage(input_tokens=10, output_tokens=7, model_calls=1)))
    assembler.finish("stop")
    assert assembler.result().usage == Usage(input_tokens=10, output_tokens=7, model_calls=1)

    silent = ReplyAssembler()
    silent.finish("stop")
    assert silent.result().usage == Usage(model_calls=1)


def test_close_call_can_replace_the_streamed_arguments() -> None:
    assembler = ReplyAssembler()
    assembler.add(ToolCallStarted(0, "c1", "t"))
    assembler.add(ToolCallDelta(0, '{"a":  1}'))

    ready = assembler.close_call(0, arguments='{"a": 1}')
    *rest, completed = assembler.finish("tool_calls")

    assert ready.call.arguments == '{"a": 1}'
    assert rest == []  # the call was already closed
    assert isinstance(completed, ReplyCompleted)
    assert completed.turn.tool_calls == (ready.call,)


@pytest.mark.parametrize(
    ("events", "problem"),
    [
        ([ToolCallDelta(0, "{}")], "arguments for tool call 0, which was never started"),
        ([ToolCallStarted(0, "a", "t"), ToolCallStarted(0, "b", "t")], "tool call 0 was started twice"),
        (
            [ToolCallStarted(0, "a", "t"), ToolCallReady(0, ToolCall("a", "t")), ToolCallDelta(0, "x")],
            "arguments for tool call 0, which was already complete",
        ),
        (
            [ToolCallStarted(0, "a", "t"), ToolCallReady(0, ToolCall("b", "t"))],
            "tool call 0 started as 't' \\(id 'a'\\) but completed as 't' \\(id 'b'\\)",
        ),
        ([ToolCallReady(2, ToolCall("a", "t"))], "completion of tool call 2, which was never started"),
        (
            [TextDelta("x"), ReplyCompleted(AssistantTurn(text="x")), TextDelta("y")],
            "TextDelta arrived after the reply was completed",
        ),
        (
            [TextDelta("a"), ReplyCompleted(AssistantTurn(text="b"))],
            "the completed text 'b' is not the streamed text 'a'",
        ),
        (
            [ReplyCompleted(AssistantTurn(tool_calls=(ToolCall("a", "t"),)))],
            "the completed tool calls .* are not the streamed ones",
        ),
        (
            [ToolCallStarted(0, "a", "t"), ReplyCompleted(AssistantTurn())],
            "tool call 0 was never completed",
        ),
        (
            [
                UsageReported(Usage(input_tokens=3)),
                ReplyCompleted(AssistantTurn(usage=Usage(input_tokens=4))),
            ],
            "the completed usage .* is not the last reported",
        ),
        ([TextDelta("a")], "the stream ended without a ReplyCompleted event"),
    ],
)
def test_a_stream_that_breaks_the_contract_is_named(events: list[ModelEvent], problem: str) -> None:
    with pytest.raises(AdapterError, match=f"mock: malformed reply stream: {problem}") as info:
        assemble(events, provider="mock")
    assert info.value.provider == "mock"


def test_anonymous_assembler_names_the_adapter_generically() -> None:
    with pytest.raises(AdapterError, match=r"^adapter: malformed reply stream"):
        assemble([])


@given(turns())
def test_the_events_of_any_whole_turn_assemble_to_that_turn(turn: AssistantTurn) -> None:
    events = turn_events(turn)

    assert assemble(events) == turn
    assert isinstance(events[-1], ReplyCompleted)
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == turn.text
    assert all(e.text for e in events if isinstance(e, TextDelta))  # no empty pieces


class _EventsAdapter:
    """A minimal adapter whose stream is a fixed list of events, recording whether it was closed."""

    name = "events"
    model = "events-1"
    context_window: int | None = None
    token_counter: TokenCounter | None = None

    def __init__(self, events: list[ModelEvent]) -> None:
        self.events = events
        self.closed = False

    def complete(self, request: ModelRequest) -> AssistantTurn:
        return assemble(self.events)

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        try:
            for event in self.events:
                yield event
        finally:
            self.closed = True


def test_complete_async_drains_the_stream() -> None:
    turn = AssistantTurn(text="hi", usage=Usage(output_tokens=1, model_calls=1))
    adapter = _EventsAdapter(list(turn_events(turn)))
    assert isinstance(adapter, ProviderAdapter)

    assert asyncio.run(complete_async(adapter, REQUEST)) == turn
    assert adapter.closed


def test_complete_async_closes_a_stream_that_breaks_the_contract() -> None:
    turn = AssistantTurn(text="hi")
    adapter = _EventsAdapter([*turn_events(turn), TextDelta("late")])

    with pytest.raises(AdapterError, match="events: malformed reply stream: TextDelta arrived after"):
        asyncio.run(complete_async(adapter, REQUEST))
    assert adapter.closed


def test_complete_async_refuses_a_stream_without_completion() -> None:
    with pytest.raises(AdapterError, match="ended without a ReplyCompleted"):
        asyncio.run(complete_async(_EventsAdapter([TextDelta("x")]), REQUEST))


def test_complete_async_accepts_a_plain_async_iterator() -> None:
    class Plain(_EventsAdapter):
        def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
            return _Iterator(list(turn_events(AssistantTurn(text="p"))))

    assert asyncio.run(complete_async(Plain([]), REQUEST)).text == "p"


class _Iterator:
    def __init__(self, events: list[ModelEvent]) -> None:
        self._events = iter(events)

    def __aiter__(self) -> _Iterator:
        return self

    async def __anext__(self) -> ModelEvent:
        try:
            return next(self._events)
        except StopIteration:
            raise StopAsyncIteration from None


class _WholeAdapter(_EventsAdapter):
    """Answers whole when asked so; its stream must then not be read."""

    def __init__(self, reply: object) -> None:
        super().__init__([])
        self.reply = reply

    async def complete_async(self, request: ModelRequest) -> object:
        return self.reply

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        raise AssertionError("the stream of an adapter that answers whole was read")
        yield  # pragma: no cover - makes this an async generator


def test_complete_async_asks_an_adapter_that_answers_whole_for_the_whole_turn() -> None:
    turn = AssistantTurn(text="whole", usage=Usage(output_tokens=1, model_calls=1))
    adapter = _WholeAdapter(turn)
    assert isinstance(adapter, WholeReplyAdapter)
    assert asyncio.run(complete_async(adapter, REQUEST)) == turn
    assert asyncio.run(drain(_EventsAdapter(list(turn_events(turn))), REQUEST)) == turn


def test_complete_async_refuses_a_whole_reply_that_is_not_a_turn() -> None:
    with pytest.raises(AdapterError, match="events: complete_async returned str, not an AssistantTurn"):
        asyncio.run(complete_async(_WholeAdapter("not a turn"), REQUEST))
