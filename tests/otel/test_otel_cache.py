"""Prompt-cache counts on OTel spans, as the GenAI semantic conventions name them."""

from __future__ import annotations

from pathlib import Path

from otel_support import Recorder
from weakprompt import Agent, Store
from weakprompt.adapters.testing import ScriptedAdapter, text_turn
from weakprompt.messages import Usage
from weakprompt.otel import OTelTracing
from weakprompt.otel.attributes import EVENT_CACHE_BUSTED

READ = "gen_ai.usage.cache_read.input_tokens"
WRITTEN = "gen_ai.usage.cache_creation.input_tokens"


def test_chat_and_run_spans_carry_cache_reads_and_writes() -> None:
    recorder = Recorder()
    usage = Usage(
        input_tokens=900, output_tokens=3, cached_input_tokens=800, cache_write_tokens=60, model_calls=1
    )
    agent = Agent(ScriptedAdapter([text_turn("ok", usage=usage)]), instructions="Answer.")

    agent.run_sync("hi", tracing=OTelTracing(recorder.provider))

    (chat,) = recorder.named("chat ")
    (run,) = recorder.named("invoke_agent ")
    for span in (chat, run):
        attributes = dict(span.attributes or {})
        assert attributes[READ] == 800
        assert attributes[WRITTEN] == 60
        assert attributes["gen_ai.usage.input_tokens"] == 900


def test_spans_of_a_provider_that_reports_no_cache_say_nothing_about_it() -> None:
    recorder = Recorder()
    agent = Agent(
        ScriptedAdapter([text_turn("ok", usage=Usage(5, 1, model_calls=1))]), instructions="Answer."
    )

    agent.run_sync("hi", tracing=OTelTracing(recorder.provider))

    for span in recorder.spans:
        assert READ not in (span.attributes or {})
        assert WRITTEN not in (span.attributes or {})


def test_a_cache_bust_is_a_span_event_on_the_chat_span(tmp_path: Path) -> None:
    recorder = Recorder()
    with Store.open(tmp_path / "runs.db") as store:
        for instructions in ("Answer.", "Answer briefly."):
            agent = Agent(ScriptedAdapter(["ok"]), instructions=instructions, name="helper", store=store)
            agent.run_sync("hi", session="s", tracing=OTelTracing(recorder.provider))
    first, second = sorted(recorder.named("chat "), key=lambda s: s.start_time or 0)
    assert [e.name for e in first.events] == []
    (event,) = second.events
    assert event.name == EVENT_CACHE_BUSTED
    attributes = dict(event.attributes or {})
    assert attributes["weakprompt.cache.kind"] == "section"
    assert attributes["weakprompt.cache.cause"] == "changed"
    assert attributes["weakprompt.cache.name"] == "instructions"
    assert isinstance(attributes["weakprompt.cache.old_hash"], str)
    assert "weakprompt.cache.previous_session" not in attributes
