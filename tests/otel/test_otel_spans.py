"""OpenTelemetry spans of a run: names, GenAI attributes, parent links, content policy, ids on commits."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF
from opentelemetry.trace import StatusCode

from otel_support import (
    BIG,
    FIRST_CALLS,
    SECRET,
    SUMMARY,
    Recorder,
    configure,
    hang_started,
    hanging_prompt,
    prompt,
    world,
)
from weakprompt.adapters.testing import ScriptedAdapter, StreamScript, text_turn, tool_call, tool_call_turn
from weakprompt.errors import ProviderError
from weakprompt.model import TextDelta
from weakprompt.otel import (
    CONTENT_ATTRIBUTES,
    EVENT_HANDLE,
    EVENT_RUN_ROLLED_BACK,
    EVENT_TOOL_ROLLED_BACK,
    PURPOSE,
    OTelTracing,
    instrument,
    uninstrument,
)
from weakprompt.runtime import evaluate, run, stream_sync
from weakprompt.runtime.loop import TRACE_KEY
from weakprompt.runtime.tracing import installed_tracing
from weakprompt.session import Session
from weakprompt.store import Store
from weakprompt.transcript import Transcript


@pytest.fixture
def transcript() -> Iterator[Transcript]:
    with Store.open("sqlite://") as store:
        record = Transcript(store, "s1")
        configure(record)
        yield record


def _run(transcript: Transcript, recorder: Recorder, *, capture_content: bool = False) -> str:
    response = evaluate(
        prompt(),
        adapter=world().adapter,
        session=Session(session_id="s1"),
        input=f"What failed? my password={SECRET}",
        transcript=transcript,
        tracing=OTelTracing(recorder.provider, capture_content=capture_content),
    )
    return response.text


def _attrs(span: ReadableSpan) -> dict[str, object]:
    return dict(span.attributes or {})


def _parent_id(span: ReadableSpan) -> int | None:
    return None if span.parent is None else span.parent.span_id


def _id(span: ReadableSpan) -> int:
    assert span.context is not None
    return span.context.span_id


def test_span_tree_of_a_scripted_run(transcript: Transcript) -> None:
    recorder = Recorder()
    _run(transcript, recorder)

    run = recorder.one("invoke_agent pipeline")
    assert run.parent is None
    assert _attrs(run) == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.provider.name": "world",
        "gen_ai.agent.name": "pipeline",
        "gen_ai.request.model": "scripted",
        "gen_ai.conversation.id": "s1",
        "gen_ai.usage.input_tokens": _attrs(run)["gen_ai.usage.input_tokens"],
        "gen_ai.usage.output_tokens": _attrs(run)["gen_ai.usage.output_tokens"],
        "gen_ai.response.finish_reasons": ("stop",),
        "weakprompt.turns": 3,
    }
    assert _attrs(run)["gen_ai.usage.input_tokens"] == 3 * 10 + 100 + 4 * 100  # turns, summary, chunks
    assert run.status.status_code is StatusCode.UNSET

    # The run's direct children: three model turns and one span per tool call, in order.
    names = [s.name for s in sorted(recorder.children(run), key=lambda s: s.start_time or 0)]
    assert names == [
        "chat scripted",
        *(f"execute_tool {c.name}" for c in FIRST_CALLS),
        "chat scripted",
        "execute_tool tool_output",
        "chat scripted",
    ]
    turns = [s for s in recorder.children(run) if s.name.startswith("chat")]
    for turn in turns:
        attributes = _attrs(turn)
        assert attributes["gen_ai.operation.name"] == "chat"
        assert attributes["gen_ai.provider.name"] == "world"
        assert attributes["gen_ai.request.model"] == attributes["gen_ai.response.model"] == "scripted"
        assert (attributes["gen_ai.usage.input_tokens"], attributes["gen_ai.usage.output_tokens"]) == (10, 2)
        assert PURPOSE not in attributes
    assert sorted(_attrs(t)["gen_ai.response.finish_reasons"] for t in turns) == [
        ("stop",),
        ("tool_calls",),
        ("tool_calls",),
    ]

    for call in FIRST_CALLS:
        span = recorder.one(f"execute_tool {call.name}")
        assert _attrs(span)["gen_ai.operation.name"] == "execute_tool"
        assert _attrs(span)["gen_ai.tool.name"] == call.name
        assert _attrs(span)["gen_ai.tool.call.id"] == call.id
        assert _attrs(span)["gen_ai.tool.type"] == "function"

    # The failure: error status, the exception's type, a rollback event.
    failed = recorder.one("execute_tool broken")
    assert failed.status.status_code is StatusCode.ERROR
    assert _attrs(failed)["error.type"] == "RuntimeError"
    assert [e.name for e in failed.events] == ["exception", EVENT_TOOL_ROLLED_BACK]
    assert dict(failed.events[0].attributes or {}) == {"exception.type": "RuntimeError"}
    for name in ("fetch", "grep", "probe", "aprobe", "tool_output"):
        assert recorder.one(f"execute_tool {name}").status.status_code is StatusCode.UNSET

    # The oversized output: a handle event.
    fetch = recorder.one("execute_tool fetch")
    (handle,) = fetch.events
    assert handle.name == EVENT_HANDLE
    assert dict(handle.attributes or {})["weakprompt.oversize_reason"] == "max_bytes"
    assert dict(handle.attributes or {})["weakprompt.size_bytes"] == len(BIG.encode())
    assert str(dict(handle.attributes or {})["weakprompt.handle"]) in _tool_result(transcript, "c-fetch")

    # The summary: a chat span under the summarized call.
    (summary,) = recorder.children(recorder.one("execute_tool grep"))
    assert summary.name == "chat scripted"
    assert _attrs(summary)[PURPOSE] == "summarization"
    assert (_attrs(summary)["gen_ai.usage.input_tokens"], _attrs(summary)["gen_ai.usage.output_tokens"]) == (
        100,
        5,
    )
    assert _tool_result(transcript, "c-grep") == SUMMARY

    # The extraction: its model calls under the tool_output call.
    chunks = recorder.children(recorder.one("execute_tool tool_output"))
    assert len(chunks) == 4
    assert {_attrs(c)[PURPOSE] for c in chunks} == {"extraction"}
    assert all(_parent_id(c) == _id(recorder.one("execute_tool tool_output")) for c in chunks)

    # Everything is one trace.
    assert {s.context.trace_id for s in recorder.spans if s.context is not None} == {run.context.trace_id}  # type: ignore[union-attr]


def _tool_result(transcript: Transcript, call_id: str) -> str:
    (message,) = [m for m in transcript.compile().messages if m.tool_call_id == call_id]
    return message.content


def test_concurrent_tool_calls_each_parent_their_own_work(transcript: Transcript) -> None:
    recorder = Recorder()
    _run(transcript, recorder)
    # probe (a sync handler, on a worker thread) and aprobe (async, a task) ran at the same time
    for tool_name, inner in (("probe", "probe one"), ("aprobe", "aprobe two")):
        assert _parent_id(recorder.one(inner)) == _id(recorder.one(f"execute_tool {tool_name}"))
    for span in recorder.named("execute_tool"):
        if span.name not in (
            "execute_tool probe",
            "execute_tool aprobe",
            "execute_tool grep",
            "execute_tool tool_output",
        ):
            assert recorder.children(span) == []


def test_each_commit_of_a_turn_names_its_span(transcript: Transcript) -> None:
    recorder = Recorder()
    _run(transcript, recorder)
    by_id = {format(_id(s), "016x"): s for s in recorder.spans}
    trace_ids = {format(s.context.trace_id, "032x") for s in recorder.spans if s.context is not None}
    seen: list[str] = []
    for commit in transcript.log():
        ids = commit.content.metadata.get(TRACE_KEY)
        if commit.role in ("system", "user"):
            assert ids is None
            continue
        assert isinstance(ids, dict)
        assert ids["trace_id"] in trace_ids
        span = by_id[str(ids["span_id"])]
        if commit.role == "assistant":
            assert span.name == "chat scripted" and PURPOSE not in _attrs(span)
        else:
            assert span.name.startswith("execute_tool")
            assert _attrs(span)["gen_ai.tool.call.id"] == commit.content.tool_call_id
        seen.append(commit.role)
    assert seen.count("assistant") == 3
    assert seen.count("tool") >= 6


def test_a_traced_extraction_keeps_how_it_went_beside_its_span_ids(transcript: Transcript) -> None:
    # Tracing adds its ids to a tool_output reply's commit; it must not replace the extraction record.
    _run(transcript, Recorder())
    replies = [c for c in transcript.log() if "extraction" in c.content.metadata]
    assert replies, "the scripted run asks tool_output once"
    for commit in replies:
        assert isinstance(commit.content.metadata["extraction"], dict)
        assert isinstance(commit.content.metadata.get(TRACE_KEY), dict)


def test_content_is_absent_unless_opted_in(transcript: Transcript) -> None:
    recorder = Recorder()
    _run(transcript, recorder)
    for span in recorder.spans:
        assert not CONTENT_ATTRIBUTES & set(_attrs(span)), span.name
        for event in span.events:
            assert "exception.message" not in dict(event.attributes or {})
    assert recorder.one("execute_tool broken").status.description == "the tool call failed"
    assert not any(SECRET in repr(_attrs(s)) or SECRET in repr(s.events) for s in recorder.spans)


def test_content_when_opted_in_goes_through_the_redaction_hook(transcript: Transcript) -> None:
    recorder = Recorder()
    _run(transcript, recorder, capture_content=True)
    everything = " ".join(repr(_attrs(s)) + repr([e.attributes for e in s.events]) for s in recorder.spans)
    assert SECRET not in everything
    assert "[REDACTED]" in everything

    run = recorder.one("invoke_agent pipeline")
    (user,) = json.loads(str(_attrs(run)["gen_ai.input.messages"]))
    assert user["role"] == "user" and "What failed?" in user["parts"][0]["content"]
    (answer,) = json.loads(str(_attrs(run)["gen_ai.output.messages"]))
    assert answer["parts"] == [{"type": "text", "content": "found NEEDLE-7f3a"}]

    first_turn = min(recorder.children(run), key=lambda s: s.start_time or 0)
    sent = json.loads(str(_attrs(first_turn)["gen_ai.input.messages"]))
    assert [m["role"] for m in sent] == ["system", "user"]
    (reply,) = json.loads(str(_attrs(first_turn)["gen_ai.output.messages"]))
    assert [p["name"] for p in reply["parts"]] == [c.name for c in FIRST_CALLS]
    assert reply["finish_reason"] == "tool_calls"

    broken = recorder.one("execute_tool broken")
    assert _attrs(broken)["gen_ai.tool.call.arguments"] == '{"key":"password=[REDACTED]"}'
    assert "RuntimeError" in str(_attrs(broken)["gen_ai.tool.call.result"])
    assert "RuntimeError" in (broken.status.description or "")
    assert "token=[REDACTED]" in str(dict(broken.events[0].attributes or {})["exception.message"])
    probe = recorder.one("execute_tool probe")
    assert _attrs(probe)["gen_ai.tool.call.result"] == "probed one with api_key=[REDACTED]"
    assert _attrs(recorder.one("execute_tool grep"))["gen_ai.tool.call.result"] == SUMMARY
    later = [s for s in recorder.children(run) if s.name.startswith("chat")]
    second = sorted(later, key=lambda s: s.start_time or 0)[1]
    responses = [
        p
        for m in json.loads(str(_attrs(second)["gen_ai.input.messages"]))
        for p in m["parts"]
        if p["type"] == "tool_call_response"
    ]
    assert [p["id"] for p in responses] == [c.id for c in FIRST_CALLS]


def test_a_streaming_run_is_traced_the_same_way() -> None:
    recorder = Recorder()
    adapter = ScriptedAdapter(
        [
            tool_call_turn(tool_call("add", {"a": 1, "b": 2}, id="s-add"), text="Let me add."),
            text_turn("3"),
        ]
    )
    from loop_support import arithmetic_prompt

    with stream_sync(
        arithmetic_prompt(),
        adapter=adapter,
        session=Session(),
        input="1+2?",
        tracing=OTelTracing(recorder.provider),
    ) as events:
        kinds = [type(e).__name__ for e in events]
    assert "TextDelta" in kinds and kinds[-1] == "RunFinished"
    run = recorder.one("invoke_agent arithmetic")
    children = sorted(recorder.children(run), key=lambda s: s.start_time or 0)
    assert [s.name for s in children] == ["chat scripted", "execute_tool add", "chat scripted"]
    assert _attrs(children[0])["gen_ai.response.finish_reasons"] == ("tool_calls",)
    assert _attrs(children[1])["gen_ai.tool.call.id"] == "s-add"


def test_a_failed_run_ends_every_span_with_an_error() -> None:
    recorder = Recorder()
    adapter = ScriptedAdapter(
        [
            tool_call_turn(tool_call("add", {"a": 1, "b": 2}, id="a1")),
            StreamScript(parts=(TextDelta("partial"),), error=ProviderError("upstream down")),
        ]
    )
    from loop_support import arithmetic_prompt

    with pytest.raises(ProviderError):
        evaluate(
            arithmetic_prompt(),
            adapter=adapter,
            session=Session(),
            input="go",
            tracing=OTelTracing(recorder.provider),
        )
    run = recorder.one("invoke_agent arithmetic")
    assert run.status.status_code is StatusCode.ERROR
    assert _attrs(run)["error.type"] == "weakprompt.errors.ProviderError"
    assert [e.name for e in run.events] == [EVENT_RUN_ROLLED_BACK]
    chats = sorted(recorder.named("chat"), key=lambda s: s.start_time or 0)
    assert [c.status.status_code for c in chats] == [StatusCode.UNSET, StatusCode.ERROR]
    assert all(s.end_time is not None for s in recorder.spans)


def test_a_cancelled_concurrent_batch_ends_its_open_tool_spans() -> None:
    recorder = Recorder()
    adapter = ScriptedAdapter(
        [
            tool_call_turn(
                tool_call("hang", {"label": "a"}, id="h1"), tool_call("hang", {"label": "b"}, id="h2")
            )
        ]
    )

    async def main() -> None:
        hang_started.append(asyncio.Event())
        task = asyncio.ensure_future(
            run(
                hanging_prompt(),
                adapter=adapter,
                session=Session(),
                input="go",
                tracing=OTelTracing(recorder.provider),
            )
        )
        await hang_started[-1].wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    tools = recorder.named("execute_tool hang")
    assert len(tools) == 2
    assert all(s.status.status_code is StatusCode.ERROR for s in tools)
    assert {_attrs(s)["error.type"] for s in tools} == {"asyncio.exceptions.CancelledError"}
    (agent,) = recorder.named("invoke_agent")
    assert [e.name for e in agent.events] == [EVENT_RUN_ROLLED_BACK]


def test_instrument_traces_every_run_until_uninstrumented() -> None:
    from loop_support import arithmetic_prompt

    recorder = Recorder()
    tracing = instrument(recorder.provider)
    try:
        assert installed_tracing() is tracing
        evaluate(
            arithmetic_prompt(), adapter=ScriptedAdapter([text_turn("hi")]), session=Session(), input="x"
        )
    finally:
        uninstrument()
    assert installed_tracing() is None
    evaluate(arithmetic_prompt(), adapter=ScriptedAdapter([text_turn("hi")]), session=Session(), input="x")
    assert [s.name for s in recorder.spans] == ["chat scripted", "invoke_agent arithmetic"]


def _hashes(tracing: OTelTracing | None) -> list[str]:
    from loop_support import arithmetic_prompt

    with Store.open("sqlite://") as store:
        record = Transcript(store, "fixed")
        adapter = ScriptedAdapter(
            [tool_call_turn(tool_call("add", {"a": 1, "b": 2}, id="h")), text_turn("3")]
        )
        evaluate(
            arithmetic_prompt(),
            adapter=adapter,
            session=Session(session_id="fixed"),
            input="1+2",
            transcript=record,
            tracing=tracing,
        )
        return [c.hash for c in record.log()]


def test_untraced_and_unsampled_runs_keep_their_commit_hashes() -> None:
    plain = _hashes(None)
    unsampled = _hashes(OTelTracing(TracerProvider(sampler=ALWAYS_OFF)))
    assert unsampled == plain  # a span that is not recorded names nothing
    traced = _hashes(OTelTracing(Recorder().provider))
    assert traced[:2] == plain[:2] and traced[2:] != plain[2:]  # system, user untouched; the turns carry ids
    assert _hashes(OTelTracing()) == plain  # the global provider, no SDK configured: nothing recorded


def test_importing_weakprompt_does_not_import_opentelemetry() -> None:
    code = (
        "import sys, weakprompt, weakprompt.runtime; from weakprompt.runtime import evaluate;"
        "print(any(m.startswith('opentelemetry') for m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.strip() == "False"
