"""Structured output in the loop: parsing, the corrective turn, and the errors with paths."""

from __future__ import annotations

import pytest

from loop_support import Answer, Recorder, arithmetic_prompt
from weakprompt.adapters.testing import ScriptedAdapter, tool_call, tool_call_turn
from weakprompt.errors import OutputParseError
from weakprompt.events import PromptExecuted
from weakprompt.runtime.loop import evaluate
from weakprompt.runtime.loop_events import OutputRejected
from weakprompt.session import Session
from weakprompt.store import Store
from weakprompt.transcript import Transcript


def test_valid_answer_is_parsed_into_the_output_type() -> None:
    session = Session()
    events = Recorder(session.bus)
    adapter = ScriptedAdapter(
        [tool_call_turn(tool_call("add", {"a": 20, "b": 22})), '```json\n{"value": 42, "note": "sum"}\n```']
    )
    response = evaluate(arithmetic_prompt(output=True), adapter=adapter, session=session)
    assert response.output == Answer(value=42, note="sum")
    assert response.output_retries_used == 0
    # The adapter was told the output schema and name on every call.
    for request in adapter.requests:
        assert request.output_schema is not None
        assert request.output_schema["properties"].keys() == {"value", "note"}  # type: ignore[union-attr]
        assert request.output_name == "arith_output"
    executed = events.of(PromptExecuted)
    assert isinstance(executed[0], PromptExecuted) and executed[0].output == Answer(42, "sum")


def test_a_bad_answer_gets_one_corrective_turn_naming_the_paths() -> None:
    session = Session()
    store = Store.open("sqlite://")
    events = Recorder(session.bus)
    adapter = ScriptedAdapter(['{"value": "many", "note": "x"}', '{"value": 3, "note": "fixed"}'])
    response = evaluate(arithmetic_prompt(output=True), adapter=adapter, session=session, store=store)

    assert response.output == Answer(3, "fixed")
    assert response.output_retries_used == 1
    assert response.turns == 2
    correction = adapter.requests[1].context.messages[-1]
    assert correction.role == "user"
    assert "$.value" in correction.content
    assert "JSON Schema" in correction.content
    rejected = events.of(OutputRejected)
    assert len(rejected) == 1
    assert isinstance(rejected[0], OutputRejected) and rejected[0].retrying
    roles = [c.role for c in Transcript(store, session.session_id).log()]
    assert roles == ["system", "assistant", "user", "assistant"]


def test_without_retries_the_parse_error_is_raised_with_paths() -> None:
    adapter = ScriptedAdapter(['{"value": 1}'])
    with pytest.raises(OutputParseError, match=r"\$\.note"):
        evaluate(arithmetic_prompt(output=True), adapter=adapter, session=Session(), output_retries=0)


def test_retries_run_out() -> None:
    session = Session()
    events = Recorder(session.bus)
    adapter = ScriptedAdapter(["no json here", '{"value": "x", "note": 1}'])
    with pytest.raises(OutputParseError) as info:
        evaluate(arithmetic_prompt(output=True), adapter=adapter, session=session, output_retries=1)
    assert "$.value" in str(info.value)
    assert any("1 corrective turn" in note for note in info.value.__notes__)
    flags = [e.retrying for e in events.of(OutputRejected)]  # type: ignore[attr-defined]
    assert flags == [True, False]


def test_no_corrective_turn_when_max_turns_is_used_up() -> None:
    adapter = ScriptedAdapter(["not json"])
    with pytest.raises(OutputParseError, match="no JSON value") as info:
        evaluate(arithmetic_prompt(output=True), adapter=adapter, session=Session(), max_turns=1)
    assert any("max_turns" in note for note in info.value.__notes__)
    assert len(adapter.requests) == 1


def test_the_correction_text_without_a_schema_still_names_the_errors() -> None:
    from weakprompt.runtime.loop_messages import output_correction

    text = output_correction("$.value: expected integer", None, None)
    assert "$.value: expected integer" in text
    assert "JSON Schema" not in text
    assert "required output," in text
