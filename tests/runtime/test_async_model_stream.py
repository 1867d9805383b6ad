"""Scripted model streams through the async loop: what the run reports and what the transcript keeps."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence

import pytest

from async_support import Item, tools_prompt
from test_async_cancellation import _consistent, note
from weakprompt import run
from weakprompt.adapters.testing import Reply, ScriptedAdapter, StreamScript, tool_call, tool_call_turn
from weakprompt.errors import ProviderError
from weakprompt.messages import AssistantTurn, ToolCall
from weakprompt.model import (
    ModelEvent,
    ModelRequest,
    TextDelta,
    ToolCallDelta,
    ToolCallReady,
    ToolCallStarted,
    UsageReported,
)
from weakprompt.runtime import (
    PromptResponse,
    RunEvent,
    RunFinished,
    ToolResultStored,
    TurnCommitted,
)
from weakprompt.runtime import TextDelta as RunTextDelta
from weakprompt.runtime import ToolCallStarted as RunToolCallStarted
from weakprompt.runtime import UsageReported as RunUsageReported
from weakprompt.session import Session
from weakprompt.store import Store
from weakprompt.transcript import Transcript
from weakprompt.usage import Usage


def _run(
    script: Sequence[Reply], *, session: Session, store: Store
) -> tuple[PromptResponse[None], list[RunEvent[object]]]:
    events: list[RunEvent[object]] = []

    async def main() -> PromptResponse[None]:
        return await run(
            tools_prompt([note]),
            adapter=ScriptedAdapter(script),
            session=session,
            store=store,
            on_event=events.append,
        )

    return asyncio.run(main()), events


def _roles_and_text(store: Store, session: Session) -> list[tuple[str, str]]:
    return [(c.role, c.content) for c in Transcript(store, session.session_id).compile().messages]


def test_text_then_a_tool_call_in_one_turn_is_one_tool_turn() -> None:
    session, store = Session(), Store.open("sqlite://")
    turn = StreamScript(
        [
            TextDelta("Noting "),
            TextDelta("it. "),
            ToolCallStarted(0, "a", "note"),
            ToolCallDelta(0, '{"text":'),
            ToolCallDelta(0, '"one"}'),
        ]
    )
    response, events = _run([turn, "done"], session=session, store=store)

    assert response.text == "done" and response.turns == 2
    first = [e for e in events if getattr(e, "turn", None) == 1]
    assert [type(e) for e in first] == [
        RunTextDelta,
        RunTextDelta,
        RunToolCallStarted,
        ToolCallDelta,
        ToolCallDelta,
        ToolCallReady,
        RunUsageReported,
        ToolResultStored,
        TurnCommitted,
    ]
    assert "".join(e.text for e in first if isinstance(e, RunTextDelta)) == "Noting it. "
    completed = next(e for e in first if isinstance(e, ToolCallReady))
    assert completed.call == ToolCall(id="a", name="note", arguments='{"text":"one"}')
    # the reply is stored whole, its text with its call, and the tool ran once
    assert _roles_and_text(store, session)[1:] == [
        ("assistant", "Noting it. "),
        ("tool", "one"),
        ("assistant", "done"),
    ]
    assert [i.text for i in session[Item].all()] == ["one"]
    assert isinstance(events[-1], RunFinished)


def test_whitespace_before_a_tool_call_is_not_the_final_answer() -> None:
    session, store = Session(), Store.open("sqlite://")
    turn = StreamScript(
        [TextDelta("\n"), TextDelta("  "), ToolCallStarted(0, "a", "note"), ToolCallDelta(0, '{"text":"x"}')]
    )
    response, _ = _run([turn, "the answer"], session=session, store=store)

    assert response.text == "the answer"
    assert response.turns == 2
    assert [i.text for i in session[Item].all()] == ["x"]
    assert _roles_and_text(store, session)[1] == ("assistant", "\n  ")


def test_interleaved_argument_deltas_of_several_calls_each_reach_their_call() -> None:
    session, store = Session(), Store.open("sqlite://")
    turn = StreamScript(
        [
            ToolCallStarted(0, "a", "note"),
            ToolCallStarted(1, "b", "note"),
            ToolCallDelta(1, '{"text"'),
            ToolCallDelta(0, '{"te'),
            ToolCallDelta(1, ':"second"}'),
            ToolCallDelta(0, 'xt":"first"}'),
            ToolCallReady(1, ToolCall(id="b", name="note", arguments='{"text":"second"}')),
        ]
    )
    response, events = _run([turn, "done"], session=session, store=store)

    assert response.text == "done"
    deltas = [(e.index, e.arguments_delta) for e in events if isinstance(e, ToolCallDelta)]
    assert deltas == [(1, '{"text"'), (0, '{"te'), (1, ':"second"}'), (0, 'xt":"first"}')]
    # call 1 was ready first; call 0 was closed when the stream ended, so it comes second
    assert [(e.index, e.call.arguments) for e in events if isinstance(e, ToolCallReady)] == [
        (1, '{"text":"second"}'),
        (0, '{"text":"first"}'),
    ]
    # results reach the model (and the transcript) in call order
    assert [e.content for e in events if isinstance(e, ToolResultStored)] == ["first", "second"]
    assert sorted(i.text for i in session[Item].all()) == ["first", "second"]
    _consistent(store, session)


@pytest.mark.parametrize("with_call", [False, True], ids=["answer", "open-call"])
def test_a_stream_without_a_finish_reason_completes_as_other(with_call: bool) -> None:
    session, store = Session(), Store.open("sqlite://")
    parts: list[TextDelta | ToolCallStarted | ToolCallDelta | UsageReported] = [TextDelta("cut short")]
    if with_call:
        parts += [ToolCallStarted(0, "a", "note"), ToolCallDelta(0, '{"text":"kept"}')]
    parts.append(UsageReported(Usage(input_tokens=7, output_tokens=3, model_calls=1)))
    script: list[Reply] = [StreamScript(parts, finish_reason=None)]
    if with_call:
        script.append(StreamScript([TextDelta("over")], finish_reason=None))
    response, events = _run(script, session=session, store=store)

    assert response.finish_reason == "other"
    assert response.text == ("over" if with_call else "cut short")
    assert [i.text for i in session[Item].all()] == (["kept"] if with_call else [])
    # the usage the stream reported is the call's usage, reported once per call after recording
    reported = [e for e in events if isinstance(e, RunUsageReported)]
    assert reported[0].usage == Usage(input_tokens=7, output_tokens=3, model_calls=1)
    assert len(reported) == response.turns


def test_a_provider_error_mid_stream_fails_the_run_and_stores_no_half_turn() -> None:
    session, store = Session(), Store.open("sqlite://")
    failing = StreamScript(
        [TextDelta("half"), ToolCallStarted(0, "z", "note"), ToolCallDelta(0, '{"text":"ne')],
        error=ProviderError("scripted: connection reset mid-stream", provider="scripted"),
    )
    script: list[Reply] = [tool_call_turn(tool_call("note", {"text": "one"}, id="a")), failing]
    events: list[RunEvent[object]] = []

    async def main() -> None:
        await run(
            tools_prompt([note]),
            adapter=ScriptedAdapter(script),
            session=session,
            store=store,
            on_event=events.append,
        )

    with pytest.raises(ProviderError, match="connection reset mid-stream") as raised:
        asyncio.run(main())

    assert any("stopped after 1 model call(s)" in note_ for note_ in raised.value.__notes__)
    # the pieces were reported as they came, but turn 2 never committed and the run never finished
    assert [e.text for e in events if isinstance(e, RunTextDelta)] == ["half"]
    assert [e.turn for e in events if isinstance(e, TurnCommitted)] == [1]
    assert not any(isinstance(e, RunFinished) for e in events)
    assert [e.turn for e in events if isinstance(e, ToolCallReady)] == [1]
    # the transcript ends with turn 1; the session holds exactly turn 1's note
    stored = _roles_and_text(store, session)
    assert stored[-2:] == [("assistant", ""), ("tool", "one")]
    assert all("half" not in text for _, text in stored)
    assert [i.text for i in session[Item].all()] == ["one"]
    _consistent(store, session)
    # a later run on the same session continues from the stored head
    again, _ = _run(["after the error"], session=session, store=store)
    assert again.text == "after the error"
    _consistent(store, session)


class _PlainIterator:
    """An async iterator that is not a generator (no ``aclose``), as a hand-written adapter may return."""

    def __init__(self, events: AsyncIterator[ModelEvent]) -> None:
        self._events = events

    def __aiter__(self) -> _PlainIterator:
        return self

    async def __anext__(self) -> ModelEvent:
        return await anext(self._events)


class _PlainStreamAdapter(ScriptedAdapter):
    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:  # type: ignore[override]
        return _PlainIterator(super().stream(request))


def test_a_stream_that_is_a_plain_async_iterator_is_read_to_its_end() -> None:
    session = Session()
    seen: list[RunEvent[object]] = []

    async def main() -> PromptResponse[None]:
        script: list[Reply] = [tool_call_turn(tool_call("note", {"text": "one"}, id="a")), "done"]
        return await run(
            tools_prompt([note]),
            adapter=_PlainStreamAdapter(script),
            session=session,
            on_event=seen.append,
        )

    assert asyncio.run(main()).text == "done"
    assert [i.text for i in session[Item].all()] == ["one"]
    assert [e.text for e in seen if isinstance(e, RunTextDelta)] == ["done"]


class _CountingAdapter(ScriptedAdapter):
    """Counts how each reply was asked for: whole, or as a stream."""

    def __init__(self, script: list[Reply]) -> None:
        super().__init__(script)
        self.asked: list[str] = []

    async def complete_async(self, request: ModelRequest) -> AssistantTurn:
        self.asked.append("whole")
        return await super().complete_async(request)

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        self.asked.append("stream")
        return super().stream(request)


@pytest.mark.parametrize("listening", [False, True])
def test_a_reply_is_asked_for_whole_unless_someone_listens_and_the_transcript_is_the_same(
    listening: bool,
) -> None:
    script: list[Reply] = [tool_call_turn(tool_call("note", {"text": "one"}, id="a")), "done"]
    adapter = _CountingAdapter(script)
    store = Store.open("sqlite://")
    session = Session()
    seen: list[RunEvent[object]] = []

    async def main() -> PromptResponse[None]:
        return await run(
            tools_prompt([note]),
            adapter=adapter,
            session=session,
            store=store,
            on_event=seen.append if listening else None,
        )

    assert asyncio.run(main()).text == "done"
    assert adapter.asked == (["stream", "stream"] if listening else ["whole", "whole"])
    messages = Transcript(store, session.session_id).compile().messages
    assert [(m.role, m.content) for m in messages][1:] == [
        ("assistant", ""),
        ("tool", "one"),
        ("assistant", "done"),
    ]
