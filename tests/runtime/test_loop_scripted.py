"""The evaluation loop driven by scripted adapters: tools, failures, turn caps, events."""

from __future__ import annotations

import pytest

from loop_support import Recorder, arithmetic_prompt
from weakprompt.adapters.testing import (
    FunctionAdapter,
    ScriptedAdapter,
    estimate_usage,
    text_turn,
    tool_call,
    tool_call_turn,
)
from weakprompt.errors import (
    ConfigurationError,
    MaxTurnsExceededError,
    RateLimitError,
)
from weakprompt.events import (
    ModelTurnCompleted,
    PromptExecuted,
    PromptRendered,
    ToolInvoked,
    ToolResultStored,
)
from weakprompt.messages import AssistantTurn, Usage
from weakprompt.runtime import ForceTool, ModelRequest
from weakprompt.runtime.loop import evaluate
from weakprompt.session import Session
from weakprompt.store import Store
from weakprompt.tokens import DEFAULT_TOKEN_COUNTER
from weakprompt.transcript import Transcript

# `store` (a temporary SQLite file, closed after the test) comes from the weakprompt.testing plugin.


def test_final_answer_without_tools_is_one_turn(store: Store) -> None:
    session = Session()
    events = Recorder(session.bus)
    adapter = ScriptedAdapter(["The answer is 4."])
    response = evaluate(arithmetic_prompt(), adapter=adapter, session=session, input="2+2?", store=store)

    assert response.text == "The answer is 4."
    assert response.output is None
    assert response.turns == 1
    assert response.tool_executions == ()
    assert response.usage.model_calls == 1
    roles = [c.role for c in Transcript(store, session.session_id).log()]
    assert roles == ["system", "user", "assistant"]
    assert response.head == Transcript(store, session.session_id).head
    assert response.session_id == response.transcript_id == session.session_id
    rendered = events.of(PromptRendered)
    assert len(rendered) == 1
    executed = events.of(PromptExecuted)
    assert len(executed) == 1
    assert isinstance(executed[0], PromptExecuted)
    assert executed[0].output == "The answer is 4."
    assert executed[0].turns == 1


def test_tool_round_trip_is_committed_and_linked(store: Store) -> None:
    session = Session()
    events = Recorder(session.bus)
    asks = tool_call_turn(tool_call("add", {"a": 2, "b": 3}, id="c1"))
    adapter = ScriptedAdapter([asks, "It is 5."])
    response = evaluate(arithmetic_prompt(), adapter=adapter, session=session, input="2+3?", store=store)

    assert response.text == "It is 5."
    assert response.turns == 2
    assert [e.success for e in response.tool_executions] == [True]
    transcript = Transcript(store, session.session_id)
    log = transcript.log()
    assert [c.role for c in log] == ["system", "user", "assistant", "tool", "assistant"]
    tool_commit = log[3]
    assert tool_commit.content.tool_call_id == "c1"
    assert tool_commit.content.name == "add"
    assert tool_commit.content.is_error is False
    assert '"total":5' in tool_commit.content.content
    # The assistant commit that asked for the tool is linked to the tool set that was sent.
    sent = adapter.requests[0]
    linked = transcript.get_commit_tools(log[2].hash)
    assert [t["name"] for t in linked] == [t.name for t in sent.tools] == ["add", "echo"]
    # The commit keeps the usage the adapter reported: its estimate of the first call.
    assert log[2].usage == estimate_usage(sent, asks, DEFAULT_TOKEN_COUNTER)
    assert log[2].usage is not None and log[2].usage.input_tokens > 0
    # The second request carries the tool result back to the model.
    second = adapter.requests[1].context.messages
    assert second[-1].role == "tool" and second[-1].tool_call_id == "c1"
    assert len(events.of(ToolInvoked)) == 1
    assert [e.turn for e in events.of(ModelTurnCompleted)] == [1, 2]  # type: ignore[attr-defined]
    committed = events.of(ToolResultStored)
    assert len(committed) == 1
    assert isinstance(committed[0], ToolResultStored)
    assert committed[0].commit_hash == tool_commit.hash


def test_several_calls_in_one_turn_run_in_order(store: Store) -> None:
    session = Session()
    adapter = ScriptedAdapter(
        [
            tool_call_turn(
                tool_call("echo", {"text": "one"}, id="a"),
                tool_call("add", {"a": 1, "b": 1}, id="b"),
                tool_call("echo", {"text": "three"}, id="c"),
            ),
            "done",
        ]
    )
    response = evaluate(arithmetic_prompt(), adapter=adapter, session=session, store=store)
    assert [e.event.call_id for e in response.tool_executions] == ["a", "b", "c"]
    log = Transcript(store, session.session_id).log()
    results = [c.content.tool_call_id for c in log if c.role == "tool"]
    assert results == ["a", "b", "c"]


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        (tool_call("no_such_tool", {}, id="x"), "Unknown tool 'no_such_tool'"),
        (tool_call("add", '{"a": 1, "b": ', id="x"), "not valid JSON"),
        (tool_call("add", {"a": 1}, id="x"), "$.b"),
        (tool_call("add", {"a": 1, "b": 2, "c": 3}, id="x"), "Invalid arguments"),
        (tool_call("add", "[1, 2]", id="x"), "must be a JSON object"),
    ],
)
def test_model_mistakes_become_failed_results_and_the_loop_goes_on(
    store: Store, call: object, expected: str
) -> None:
    session = Session()
    adapter = ScriptedAdapter([tool_call_turn(call), "recovered"])  # type: ignore[arg-type]
    response = evaluate(arithmetic_prompt(), adapter=adapter, session=session, store=store)

    assert response.text == "recovered"
    assert [e.success for e in response.tool_executions] == [False]
    result = next(c for c in Transcript(store, session.session_id).log() if c.role == "tool")
    assert result.content.is_error is True
    assert expected in result.content.content
    # The model saw the failure on its next turn.
    assert adapter.requests[1].context.messages[-1].is_error is True
    assert response.failed_tool_calls == 1


def test_max_turns_stops_a_model_that_never_answers(store: Store) -> None:
    session = Session()
    adapter = FunctionAdapter(lambda request: tool_call_turn(tool_call("add", {"a": 1, "b": 1})))
    with pytest.raises(MaxTurnsExceededError, match="max_turns=3") as info:
        evaluate(arithmetic_prompt(), adapter=adapter, session=session, store=store, max_turns=3)
    assert info.value.max_turns == 3
    assert len(adapter.requests) == 3
    roles = [c.role for c in Transcript(store, session.session_id).log()]
    assert roles.count("assistant") == 3 and roles.count("tool") == 3
    notes = getattr(info.value, "__notes__", [])
    assert any(session.session_id in note and "3 model call(s)" in note for note in notes)


def test_tool_choice_applies_to_the_first_turn_only(store: Store) -> None:
    adapter = ScriptedAdapter(
        [
            tool_call_turn(tool_call("add", {"a": 1, "b": 2})),
            tool_call_turn(tool_call("echo", {"text": "x"})),
            "ok",
        ]
    )
    evaluate(
        arithmetic_prompt(), adapter=adapter, session=Session(), store=store, tool_choice=ForceTool("add")
    )
    assert [r.tool_choice for r in adapter.requests] == [ForceTool("add"), "auto", "auto"]


def test_forcing_a_tool_the_prompt_does_not_offer_fails_before_anything_is_written(store: Store) -> None:
    session = Session()
    adapter = ScriptedAdapter(["never used"])
    with pytest.raises(ConfigurationError, match=r"'nope'.*add, echo"):
        evaluate(
            arithmetic_prompt(), adapter=adapter, session=session, store=store, tool_choice=ForceTool("nope")
        )
    assert adapter.requests == ()
    assert Transcript(store, session.session_id).log() == []


def test_bad_tool_choice_and_limits_are_configuration_errors(store: Store) -> None:
    adapter = ScriptedAdapter(["x"])
    with pytest.raises(ConfigurationError, match="tool_choice must be"):
        evaluate(arithmetic_prompt(), adapter=adapter, session=Session(), store=store, tool_choice="always")  # type: ignore[arg-type]
    for kwargs, name in (
        ({"max_turns": 0}, "max_turns"),
        ({"output_retries": -1}, "output_retries"),
        ({"max_expansions": True}, "max_expansions"),
    ):
        with pytest.raises(ConfigurationError, match=name):
            evaluate(arithmetic_prompt(), adapter=adapter, session=Session(), store=store, **kwargs)  # type: ignore[arg-type]


def test_required_choice_without_tools_is_rejected(store: Store) -> None:
    from weakprompt.prompt import MarkdownSection, Prompt, PromptTemplate

    bare: Prompt[None] = Prompt(
        PromptTemplate(ns="t", key="bare", sections=[MarkdownSection(title="T", key="t", template="Hi.")])
    )
    with pytest.raises(ConfigurationError, match="offers no tools"):
        evaluate(bare, adapter=ScriptedAdapter(["x"]), session=Session(), store=store, tool_choice="required")


def test_adapter_error_propagates_and_earlier_commits_survive(tmp_path: object) -> None:
    from pathlib import Path

    db = Path(str(tmp_path)) / "t.db"
    store = Store.open(db)
    session = Session()
    calls = {"n": 0}

    def model(request: ModelRequest) -> AssistantTurn:
        calls["n"] += 1
        if calls["n"] == 1:
            return tool_call_turn(tool_call("add", {"a": 4, "b": 4}, id="k"))
        raise RateLimitError("slow down (429)", provider="function", status_code=429)

    with pytest.raises(RateLimitError, match="slow down") as info:
        evaluate(
            arithmetic_prompt(), adapter=FunctionAdapter(model), session=session, store=store, input="4+4"
        )
    assert info.value.status_code == 429
    store.close()
    # Read back from disk with a fresh store: nothing committed before the failure is lost.
    reopened = Store.open(db)
    log = Transcript(reopened, session.session_id).log()
    assert [c.role for c in log] == ["system", "user", "assistant", "tool"]
    assert log[2].content.tool_calls[0].id == "k"
    assert '"total":8' in log[3].content.content


def test_default_store_is_private_and_in_memory() -> None:
    session = Session()
    response = evaluate(arithmetic_prompt(), adapter=ScriptedAdapter(["hi"]), session=session)
    assert response.text == "hi"
    assert response.head is not None


def test_explicit_transcript_is_used_and_must_match_the_store(store: Store) -> None:
    session = Session()
    transcript = Transcript(store, "conversation-1")
    response = evaluate(
        arithmetic_prompt(), adapter=ScriptedAdapter(["a"]), session=session, transcript=transcript
    )
    assert response.transcript_id == "conversation-1"
    assert response.session_id == session.session_id
    assert len(transcript.log()) == 2
    other = Store.open("sqlite://")
    with pytest.raises(ConfigurationError, match="another store"):
        evaluate(
            arithmetic_prompt(),
            adapter=ScriptedAdapter(["a"]),
            session=session,
            transcript=transcript,
            store=other,
        )


def test_a_second_evaluation_continues_the_conversation_without_duplicating_the_system_text(
    store: Store,
) -> None:
    session = Session()
    transcript = Transcript(store, session.session_id)
    evaluate(
        arithmetic_prompt(),
        adapter=ScriptedAdapter(["first"]),
        session=session,
        transcript=transcript,
        input="q1",
    )
    adapter = ScriptedAdapter(["second"])
    evaluate(arithmetic_prompt(), adapter=adapter, session=session, transcript=transcript, input="q2")
    roles = [m.role for m in adapter.requests[0].context.messages]
    assert roles == ["system", "user", "assistant", "user"]
    assert [c.role for c in transcript.log()].count("system") == 1


def test_a_changed_render_edits_the_system_message_in_place(store: Store) -> None:
    from loop_support import disclosure_prompt

    session = Session()
    transcript = Transcript(store, session.session_id)
    evaluate(arithmetic_prompt(), adapter=ScriptedAdapter(["first"]), session=session, transcript=transcript)
    adapter = ScriptedAdapter(["second"])
    evaluate(disclosure_prompt(), adapter=adapter, session=session, transcript=transcript)
    messages = adapter.requests[0].context.messages
    assert messages[0].role == "system" and "Secrets" in messages[0].content
    log = transcript.log()
    edits = [c for c in log if c.edit_target is not None]
    assert len(edits) == 1 and edits[0].edit_target == log[0].hash


def test_adapter_usage_without_a_call_count_still_counts_one_call(store: Store) -> None:
    adapter = ScriptedAdapter([AssistantTurn(text="x", usage=Usage(input_tokens=5, output_tokens=2))])
    response = evaluate(arithmetic_prompt(), adapter=adapter, session=Session(), store=store)
    assert response.usage == Usage(input_tokens=5, output_tokens=2, model_calls=1)


def test_a_failing_subscriber_does_not_stop_the_evaluation(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    session = Session()

    def broken(event: ModelTurnCompleted) -> None:
        raise RuntimeError("subscriber bug")

    session.bus.subscribe(ModelTurnCompleted, broken)
    response = evaluate(arithmetic_prompt(), adapter=ScriptedAdapter(["fine"]), session=session, store=store)
    assert response.text == "fine"
    assert "subscriber bug" in caplog.text or any(
        "ModelTurnCompleted" in r.getMessage() for r in caplog.records
    )


def test_text_alongside_tool_calls_is_kept(store: Store) -> None:
    session = Session()
    adapter = ScriptedAdapter(
        [tool_call_turn(tool_call("echo", {"text": "hi"}), text="Let me echo."), text_turn("done")]
    )
    evaluate(arithmetic_prompt(), adapter=adapter, session=session, store=store)
    assistant = next(c for c in Transcript(store, session.session_id).log() if c.role == "assistant")
    assert assistant.content.content == "Let me echo."
    assert assistant.content.tool_calls[0].name == "echo"
