"""A guardrail's trip is an event on the run's span (and on the tool call's span it stopped)."""

from __future__ import annotations

import pytest

from otel_support import Recorder
from weakprompt import Agent, ScriptedAdapter
from weakprompt.adapters.testing import tool_call, tool_call_turn
from weakprompt.errors import GuardrailTripped
from weakprompt.otel import OTelTracing
from weakprompt.otel import attributes as attr
from weakprompt.runtime import Guardrail, GuardrailCheck, Trip
from weakprompt.tools import tool


@tool
def fetch(url: str) -> str:
    """Fetch a page."""
    return f"page at {url}"


def _blocked(check: GuardrailCheck) -> Trip:
    return Trip("blocked host")


def test_a_tool_argument_trip_is_an_event_on_the_run_span_and_on_the_tool_span() -> None:
    recorder = Recorder()
    agent = Agent(
        ScriptedAdapter([tool_call_turn(tool_call("fetch", {"url": "http://evil"}, id="c1")), "done"]),
        instructions="Fetch.",
        tools=[fetch],
        name="fetcher",
        tracing=OTelTracing(recorder.provider),
        guardrails=[Guardrail("tool_arguments", _blocked, name="hosts")],
    )
    with pytest.raises(GuardrailTripped):
        agent.run_sync("go")
    run = recorder.one("invoke_agent fetcher")
    tool_span = recorder.one("execute_tool fetch")
    for span in (run, tool_span):
        (event,) = [e for e in span.events if e.name == attr.EVENT_GUARDRAIL_TRIPPED]
        assert event.attributes is not None
        assert event.attributes[attr.GUARDRAIL_NAME] == "hosts"
        assert event.attributes[attr.GUARDRAIL_POINT] == "tool_arguments"
        assert event.attributes[attr.GUARDRAIL_REASON] == "blocked host"
        assert event.attributes[attr.TOOL_CALL_ID] == "c1"


def test_an_input_trip_is_an_event_on_the_run_span() -> None:
    recorder = Recorder()
    agent = Agent(
        ScriptedAdapter(["never"]),
        instructions="x",
        name="greeter",
        tracing=OTelTracing(recorder.provider),
        guardrails=[Guardrail("input", _blocked, name="topic")],
    )
    with pytest.raises(GuardrailTripped):
        agent.run_sync("hi")
    (event,) = [
        e for e in recorder.one("invoke_agent greeter").events if e.name == attr.EVENT_GUARDRAIL_TRIPPED
    ]
    assert event.attributes is not None and attr.TOOL_CALL_ID not in event.attributes
