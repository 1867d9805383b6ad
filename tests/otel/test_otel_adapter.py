"""The traced adapter the pipeline's model calls go through, and sub-agent runs inside a trace."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

import pytest
from opentelemetry.trace import StatusCode

from otel_support import Recorder
from pipeline_support import Outputs, World, fetch_prompt, log_text
from weakprompt.adapters import GeminiAdapter, OpenAIAdapter, OpenAIResponsesAdapter
from weakprompt.adapters.testing import ScriptedAdapter, StreamScript, text_turn
from weakprompt.errors import ProviderError
from weakprompt.messages import AssistantTurn, Message, ToolCall, Usage
from weakprompt.model import (
    CompiledContext,
    ModelEvent,
    ModelRequest,
    ProviderAdapter,
    ReplyCompleted,
    TextDelta,
)
from weakprompt.otel import PURPOSE, OTelTracing
from weakprompt.otel.traced_adapter import TracedAdapter
from weakprompt.otel.tracing import RunSpan, ToolSpan
from weakprompt.runtime import evaluate
from weakprompt.runtime.redaction import default_redact
from weakprompt.runtime.results import ToolOutputSettings
from weakprompt.runtime.results.extraction import ExtractionConfig
from weakprompt.session import Session

REQUEST = ModelRequest(
    context=CompiledContext(messages=(Message(role="user", content="hi"),)), max_output_tokens=7
)


def _run_span(recorder: Recorder, adapter: ScriptedAdapter) -> RunSpan:
    return OTelTracing(recorder.provider).start_run(
        agent_name="unit", adapter=adapter, conversation_id="c", input=None, redact=default_redact
    )


async def _drain(events: AsyncIterator[ModelEvent], *, stop_early: bool = False) -> list[ModelEvent]:
    seen: list[ModelEvent] = []
    async for event in events:
        seen.append(event)
        if stop_early:
            break
    if stop_early:
        await events.aclose()  # type: ignore[attr-defined]
    return seen


def test_the_traced_adapter_speaks_for_its_inner_adapter() -> None:
    inner = ScriptedAdapter([text_turn("x")], name="prov", model="m9", context_window=123)
    wrapped = _run_span(Recorder(), inner).traced_adapter(inner, "extraction")
    assert isinstance(wrapped, TracedAdapter) and wrapped.inner is inner
    assert (wrapped.name, wrapped.model, wrapped.context_window, wrapped.token_counter) == (
        "prov",
        "m9",
        123,
        inner.token_counter,
    )


def test_a_streamed_pipeline_call_is_one_chat_span_under_the_current_step() -> None:
    recorder = Recorder()
    inner = ScriptedAdapter([text_turn("streamed answer")])
    run = _run_span(recorder, inner)
    wrapped = run.traced_adapter(inner, "extraction")
    with run.activated():
        events = asyncio.run(_drain(wrapped.stream(REQUEST)))
    run.finish(text="", usage=events[-1].turn.usage, turns=1, finish_reason="stop")  # type: ignore[union-attr]
    assert isinstance(events[-1], ReplyCompleted)
    (chat,) = recorder.named("chat")
    assert dict(chat.attributes or {})[PURPOSE] == "extraction"
    assert dict(chat.attributes or {})["gen_ai.request.max_tokens"] == 7
    assert dict(chat.attributes or {})["gen_ai.response.finish_reasons"] == ("stop",)
    assert (
        chat.parent is not None and chat.parent.span_id == recorder.one("invoke_agent unit").context.span_id
    )  # type: ignore[union-attr]


def test_a_failing_or_abandoned_stream_ends_its_span_with_an_error() -> None:
    recorder = Recorder()
    inner = ScriptedAdapter(
        [
            StreamScript(parts=(TextDelta("half"),), error=ProviderError("gone")),
            StreamScript(parts=(TextDelta("a"), TextDelta("b"))),
        ]
    )
    wrapped = _run_span(recorder, inner).traced_adapter(inner, "extraction")
    with pytest.raises(ProviderError):
        asyncio.run(_drain(wrapped.stream(REQUEST)))
    asyncio.run(_drain(wrapped.stream(REQUEST), stop_early=True))
    first, second = sorted(recorder.named("chat"), key=lambda s: s.start_time or 0)
    assert first.status.status_code is StatusCode.ERROR
    assert dict(first.attributes or {})["error.type"] == "weakprompt.errors.ProviderError"
    assert second.status.status_code is StatusCode.ERROR
    assert dict(second.attributes or {})["error.type"] == "GeneratorExit"


def test_a_failing_complete_ends_its_span_with_an_error() -> None:
    recorder = Recorder()
    inner = ScriptedAdapter([StreamScript(parts=(), error=ProviderError("no"))])
    wrapped = _run_span(recorder, inner).traced_adapter(inner, "summarization")
    with pytest.raises(ProviderError):
        wrapped.complete(REQUEST)
    (chat,) = recorder.named("chat")
    assert chat.status.status_code is StatusCode.ERROR
    assert chat.parent is not None  # no current span: the run's


def test_inside_a_model_call_the_traced_adapter_adds_no_second_span() -> None:
    recorder = Recorder()
    inner = ScriptedAdapter([text_turn("one"), text_turn("two")])
    run = _run_span(recorder, inner)
    wrapped = run.traced_adapter(inner, "extraction")
    call = run.model_call(REQUEST)
    with call.activated():
        assert wrapped.complete(REQUEST).text == "one"
        events = asyncio.run(_drain(wrapped.stream(REQUEST)))
    assert isinstance(events[-1], ReplyCompleted) and events[-1].turn.text == "two"
    call.finish(events[-1].turn, events[-1].turn.usage)
    assert [s.name for s in recorder.spans] == ["chat scripted"]


def test_a_read_grep_sub_agent_runs_as_a_nested_agent_under_its_tool_call() -> None:
    recorder = Recorder()
    world = World("read-grep")
    evaluate(
        fetch_prompt(Outputs([log_text(400, needle_at=123)])),
        adapter=world.adapter,
        session=Session(),
        input="What failed?",
        tool_outputs=ToolOutputSettings(extraction_config=ExtractionConfig(grep_isolate=False)),
        tracing=OTelTracing(recorder.provider),
    )
    outer = recorder.one("invoke_agent pipeline")
    extraction = recorder.one("execute_tool tool_output")
    (sub_agent,) = [s for s in recorder.named("invoke_agent") if s is not outer]
    assert sub_agent.parent is not None and sub_agent.parent.span_id == extraction.context.span_id  # type: ignore[union-attr]
    sub_children = recorder.children(sub_agent)
    assert {s.name for s in sub_children} == {"chat scripted", "execute_tool grep"}
    # the sub-agent's model calls are its own turns, not pipeline calls wrapped a second time
    assert all(PURPOSE not in dict(s.attributes or {}) for s in sub_children)
    assert all(recorder.children(s) == [] for s in sub_children if s.name.startswith("chat"))


def test_an_opened_section_and_a_failing_result_hook_are_traced_too() -> None:
    from loop_support import disclosure_prompt
    from weakprompt.adapters.testing import tool_call, tool_call_turn
    from weakprompt.store import Store
    from weakprompt.transcript import Transcript

    recorder = Recorder()
    adapter = ScriptedAdapter(
        [
            tool_call_turn(
                tool_call("open_sections", {"section_keys": ["secrets"], "reason": "codes"}, id="o1")
            ),
            tool_call_turn(tool_call("secret_lookup", {"name": "x"}, id="s1")),
        ]
    )
    with Store.open("sqlite://") as store:
        record = Transcript(store, "d1")

        def explode(pending: object) -> None:
            if getattr(pending, "tool_name", "") == "secret_lookup":
                raise RuntimeError("hook bug")

        record.hooks.on("tool_result", explode)  # type: ignore[arg-type]
        with pytest.raises(Exception, match="hook bug"):
            evaluate(
                disclosure_prompt(),
                adapter=adapter,
                session=Session(session_id="d1"),
                input="code?",
                transcript=record,
                tracing=OTelTracing(recorder.provider),
            )
    opened = recorder.one("execute_tool open_sections")
    assert opened.status.status_code is StatusCode.UNSET
    lookup = recorder.one("execute_tool secret_lookup")
    assert lookup.status.status_code is StatusCode.ERROR


def test_the_sync_dispatcher_runs_a_handler_under_its_span() -> None:
    from otel_support import probe
    from weakprompt.adapters.testing import tool_call
    from weakprompt.runtime import ToolDispatcher

    recorder = Recorder()
    inner = ScriptedAdapter([])
    run = _run_span(recorder, inner)
    spans: list[ToolSpan] = []

    def start(call: ToolCall) -> ToolSpan:
        spans.append(run.tool_call(call))
        return spans[-1]

    dispatcher = ToolDispatcher([probe], session=Session(), tool_spans=start)
    execution = dispatcher.execute(tool_call("probe", {"label": "sync"}, id="p1"))
    assert execution.success
    (span,) = spans
    span.handle("h-1", "max_bytes", None)
    span.finish("probed", is_error=False)
    span.fail(RuntimeError("late"))  # an ended span is left as it was
    run.finish(text="", usage=Usage(), turns=0, finish_reason=None)
    tool = recorder.one("execute_tool probe")
    assert recorder.one("probe sync").parent.span_id == tool.context.span_id  # type: ignore[union-attr]
    assert tool.status.status_code is StatusCode.UNSET
    assert dict(tool.events[0].attributes or {}) == {
        "weakprompt.handle": "h-1",
        "weakprompt.oversize_reason": "max_bytes",
    }
    assert "gen_ai.response.finish_reasons" not in dict(recorder.one("invoke_agent unit").attributes or {})


def test_an_adapter_reports_its_retries_on_the_model_call_span() -> None:
    from loop_support import arithmetic_prompt
    from weakprompt.adapters.testing import FunctionAdapter
    from weakprompt.errors import RateLimitError
    from weakprompt.otel import EVENT_RETRY
    from weakprompt.runtime.tracing import report_retry

    def flaky_provider(request: ModelRequest) -> str:
        report_retry(1, RateLimitError("slow down"), 0.25)  # what an adapter's retry loop does
        report_retry(2, TimeoutError())
        return "done"

    report_retry(1, RuntimeError("no model call in progress"))  # outside a traced call: nothing happens
    recorder = Recorder()
    evaluate(
        arithmetic_prompt(),
        adapter=FunctionAdapter(flaky_provider),
        session=Session(),
        input="x",
        tracing=OTelTracing(recorder.provider),
    )
    (chat,) = recorder.named("chat")
    assert [dict(e.attributes or {}) for e in chat.events if e.name == EVENT_RETRY] == [
        {
            "weakprompt.retry.attempt": 1,
            "error.type": "weakprompt.errors.RateLimitError",
            "weakprompt.retry.delay_seconds": 0.25,
        },
        {"weakprompt.retry.attempt": 2, "error.type": "TimeoutError"},
    ]
    # untraced, the same adapter runs as before
    assert (
        evaluate(arithmetic_prompt(), adapter=FunctionAdapter(flaky_provider), session=Session()).text
        == "done"
    )


def test_a_summary_call_reports_its_retries_on_its_own_span() -> None:
    from weakprompt.otel import EVENT_RETRY
    from weakprompt.runtime.tracing import report_retry

    class Retrying(ScriptedAdapter):
        def complete(self, request: ModelRequest) -> AssistantTurn:
            report_retry(1, ConnectionError("reset"))
            return super().complete(request)

    recorder = Recorder()
    inner = Retrying([text_turn("summary")])
    wrapped = _run_span(recorder, inner).traced_adapter(inner, "summarization")
    wrapped.complete(REQUEST)
    (chat,) = recorder.named("chat")
    assert [e.name for e in chat.events] == [EVENT_RETRY]


@pytest.mark.parametrize(
    ("adapter", "provider"),
    [
        (lambda: GeminiAdapter("gemini-2.5-flash", api_key="test-key"), "gcp.gemini"),
        (lambda: OpenAIResponsesAdapter("gpt-5-mini", api_key="test-key"), "openai"),
        (lambda: OpenAIAdapter("gpt-5-mini", api_key="test-key"), "openai"),
    ],
)
def test_gemini_and_the_responses_adapter_report_their_genai_provider(
    adapter: Callable[[], ProviderAdapter], provider: str
) -> None:
    recorder = Recorder()
    built = adapter()
    run = OTelTracing(recorder.provider).start_run(
        agent_name="unit", adapter=built, conversation_id="c", input=None, redact=default_redact
    )
    run.model_call(REQUEST).finish(AssistantTurn(text="x"), Usage(model_calls=1))
    run.finish(text="x", usage=Usage(model_calls=1), turns=1, finish_reason="stop")
    (chat,) = recorder.named("chat")
    (agent,) = recorder.named("invoke_agent")
    assert chat.attributes is not None and agent.attributes is not None
    assert chat.attributes["gen_ai.provider.name"] == agent.attributes["gen_ai.provider.name"] == provider
