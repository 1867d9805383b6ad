"""Prompt-cache counts on OTel spans, as the GenAI semantic conventions name them."""

from __future__ import annotations

from otel_support import Recorder
from weakprompt import Agent
from weakprompt.adapters.testing import ScriptedAdapter, text_turn
from weakprompt.messages import Usage
from weakprompt.otel import OTelTracing

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
