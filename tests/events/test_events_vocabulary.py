"""One event vocabulary (specs/EVENTS.md): the classes, one place to import them, one event per happening."""

from __future__ import annotations

import asyncio
import importlib
import tempfile
import warnings
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import weakprompt.events as events_package
from otel_support import Recorder
from weakprompt.adapters.testing import ScriptedAdapter, text_turn, tool_call
from weakprompt.errors import ConfigurationError
from weakprompt.events import (
    EventBus,
    RunFinished,
    TextDelta,
    ToolCallDelta,
    ToolCallReady,
    ToolCallStarted,
    ToolInvoked,
    ToolResultStored,
    TurnCommitted,
    UsageReported,
)
from weakprompt.messages import AssistantTurn, ToolCall
from weakprompt.model import CompiledContext, ModelRequest
from weakprompt.otel import OTelTracing
from weakprompt.prompt import MarkdownSection, Prompt, PromptTemplate
from weakprompt.runtime import RunEvent, run
from weakprompt.runtime.recording import TRACE_KEY
from weakprompt.runtime.results import ToolOutputStore
from weakprompt.session import Session
from weakprompt.store import Store
from weakprompt.tools import ToolContext, ToolResult, tool
from weakprompt.transcript import Transcript
from weakprompt.transcript.lazy import STORED_OUTPUT_KEY

STREAM_EVENTS = (TextDelta, ToolCallStarted, ToolCallDelta, ToolCallReady, UsageReported)


# -- the classes ---------------------------------------------------------------------------------


def test_stream_events_are_the_model_stream_classes() -> None:
    """A run streams the adapter's own event classes: an isinstance check with any import path matches."""
    paths = ("weakprompt.events", "weakprompt.model", "weakprompt.model.stream", "weakprompt.runtime")
    paths += ("weakprompt.runtime.run_events",)
    for event_type in STREAM_EVENTS:
        homes = {id(getattr(importlib.import_module(path), event_type.__name__)) for path in paths}
        assert homes == {id(event_type)}, event_type.__name__

    script = [
        AssistantTurn(text="thinking", tool_calls=(tool_call("ok", {"text": "a"}, id="c1"),)),
        text_turn("done"),
    ]
    seen: list[RunEvent[Any]] = []
    asyncio.run(run(_prompt(TOOLS), adapter=ScriptedAdapter(script), session=Session(), on_event=seen.append))
    streamed = [e for e in seen if isinstance(e, STREAM_EVENTS)]
    assert {type(e) for e in streamed} == set(STREAM_EVENTS)
    import weakprompt.model.stream as model_stream

    assert all(
        isinstance(
            e,
            (
                model_stream.TextDelta,
                model_stream.ToolCallReady,
                model_stream.UsageReported,
                model_stream.ToolCallStarted,
                model_stream.ToolCallDelta,
            ),
        )
        for e in streamed
    )
    assert [e.turn for e in streamed if isinstance(e, TextDelta)] == [1, 2]  # the run says which call
    (usage, last) = [e for e in seen if isinstance(e, UsageReported)]
    assert last.total == usage.usage + last.usage
    assert TextDelta("x") == TextDelta("x", turn=0) != TextDelta("x", turn=1)  # from an adapter: turn 0


def test_old_names_of_the_runs_copies_warn_and_answer_the_one_class() -> None:
    import weakprompt.runtime as runtime
    import weakprompt.runtime.loop_events as loop_events
    import weakprompt.runtime.run_events as run_events

    for module, old, new in (
        (runtime, "ToolCallArgumentsDelta", ToolCallDelta),
        (runtime, "ToolCallCompleted", ToolCallReady),
        (runtime, "ToolResultReady", ToolResultStored),
        (runtime, "ToolResultCommitted", ToolResultStored),
        (run_events, "ToolCallCompleted", ToolCallReady),
        (run_events, "ToolResultReady", ToolResultStored),
        (loop_events, "ToolResultCommitted", ToolResultStored),
    ):
        with pytest.warns(DeprecationWarning, match=f"{old} is deprecated.*{new.__name__}"):
            assert getattr(module, old) is new
        assert old not in dir(module)


def test_the_event_bus_is_named_as_a_bus_and_dispatcher_is_its_deprecated_name() -> None:
    with pytest.warns(DeprecationWarning, match=r"weakprompt\.events\.Dispatcher is deprecated.*EventBus"):
        old = events_package.Dispatcher
    assert old is EventBus
    assert "Dispatcher" not in dir(events_package)
    bus = EventBus()
    session = Session(bus)
    assert session.bus is bus
    with pytest.warns(DeprecationWarning, match=r"Session\.dispatcher is deprecated.*Session\.bus"):
        assert session.dispatcher is bus
    with pytest.warns(DeprecationWarning, match=r"Session\(dispatcher=\.\.\.\) is deprecated"):
        assert Session(dispatcher=bus).bus is bus
    with pytest.warns(DeprecationWarning), pytest.raises(ConfigurationError, match="give the event bus once"):
        Session(EventBus(), dispatcher=bus)
    request = ModelRequest(context=CompiledContext(messages=()), bus=bus)
    with pytest.warns(DeprecationWarning, match=r"ModelRequest\.dispatcher is deprecated.*ModelRequest\.bus"):
        assert request.dispatcher is bus


def test_every_event_is_imported_from_weakprompt_events() -> None:
    """Each event the library publishes or streams is one class, importable from ``weakprompt.events``."""
    import weakprompt.model as model
    import weakprompt.runtime as runtime
    import weakprompt.runtime.loop_events as loop_events
    import weakprompt.runtime.pause_events as pause_events
    import weakprompt.runtime.run_events as run_events

    names = (
        "TextDelta ToolCallStarted ToolCallDelta ToolCallReady UsageReported ReplyCompleted ToolInvoked "
        "ToolResultStored PromptRendered PromptExecuted ModelTurnCompleted SectionsExpanded OutputRejected "
        "TurnCommitted RunFinished ToolResultSummarized ToolOutputExtracted ModelCallRetried AdapterFellBack "
        "RunPaused RunResumed ToolCallDecided"
    ).split()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # none of them is a deprecated name
        for name in names:
            event = getattr(events_package, name)
            assert name in events_package.__all__ and event.__module__.startswith("weakprompt.events")
            for module in (model, runtime, loop_events, pause_events, run_events):
                if name in module.__all__:
                    assert getattr(module, name) is event


def test_a_bare_output_store_reports_a_stored_output_without_a_commit() -> None:
    bus = EventBus()
    seen: list[ToolResultStored] = []
    bus.subscribe(ToolResultStored, seen.append)
    with Store.open("sqlite://") as store:
        ToolOutputStore(store, "s", dispatcher=bus).store_result("c1", "fetch", '{"u": 1}', "body")
    (event,) = seen
    assert (event.tool_call_id, event.tool_name, event.call.arguments) == ("c1", "fetch", '{"u": 1}')
    assert (event.commit_hash, event.content, event.turn, event.handle is not None) == (None, "", 0, True)


# -- one event per happening -------------------------------------------------------------------


@dataclass(frozen=True)
class Work:
    text: str


@tool(name="ok", description="Succeed.")
def ok(params: Work, *, context: ToolContext) -> ToolResult[None]:
    return ToolResult(message="ok " + params.text)


@tool(name="boom", description="Raise.")
def boom(params: Work, *, context: ToolContext) -> ToolResult[None]:
    raise RuntimeError("boom " + params.text)


@tool(name="aok", description="Succeed, awaited.")
async def aok(params: Work, *, context: ToolContext) -> ToolResult[None]:
    await asyncio.sleep(0)
    return ToolResult(message="aok " + params.text)


@tool(name="aboom", description="Raise, awaited.")
async def aboom(params: Work, *, context: ToolContext) -> ToolResult[None]:
    await asyncio.sleep(0)
    raise RuntimeError("aboom " + params.text)


@tool(name="big", description="Return more than the model is shown.")
def big(params: Work, *, context: ToolContext) -> ToolResult[None]:
    return ToolResult(message=params.text * 20_000)  # over the size cap: stored, shown by handle


TOOLS = [ok, boom, aok, aboom, big]
KINDS = ("ok", "boom", "aok", "aboom", "big", "unknown", "bad arguments")


def _prompt(tools: list[Any]) -> Prompt[None]:
    section = MarkdownSection(title="Task", key="task", template="Use the tools.", tools=tools)
    return Prompt(PromptTemplate(ns="tests/events", key="vocabulary", sections=[section]))


def _call(kind: str, call_id: str) -> ToolCall:
    if kind == "unknown":
        return tool_call("nope", {"text": "x"}, id=call_id)
    if kind == "bad arguments":
        return ToolCall(id=call_id, name="ok", arguments="{not json")
    return tool_call(kind, {"text": call_id}, id=call_id)


turns_strategy = st.lists(st.lists(st.sampled_from(KINDS), min_size=1, max_size=4), min_size=1, max_size=3)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(turns=turns_strategy, concurrent=st.booleans())
def test_one_finished_tool_call_is_one_event_per_happening(turns: list[list[str]], concurrent: bool) -> None:
    """One ToolInvoked per call, one ToolResultStored per stored result; the stream, bus and spans agree."""
    script: list[AssistantTurn] = []
    calls: list[ToolCall] = []
    for number, kinds in enumerate(turns, start=1):
        made = tuple(_call(kind, f"t{number}c{index}") for index, kind in enumerate(kinds))
        calls.extend(made)
        script.append(AssistantTurn(tool_calls=made))
    script.append(text_turn("done"))
    call_ids = [c.id for c in calls]

    session = Session()
    bus: list[object] = []
    session.bus.subscribe(ToolInvoked, bus.append)
    session.bus.subscribe(ToolResultStored, bus.append)
    stream: list[RunEvent[Any]] = []
    recorder = Recorder()
    with tempfile.TemporaryDirectory() as folder, Store.open(f"sqlite:///{Path(folder) / 'run.db'}") as store:
        asyncio.run(
            run(
                _prompt(TOOLS),
                adapter=ScriptedAdapter(script),
                session=session,
                store=store,
                concurrent_tools=concurrent,
                on_event=stream.append,
                tracing=OTelTracing(recorder.provider),
            )
        )
        commits = {
            c.content.tool_call_id: c for c in Transcript(store, session.session_id).log() if c.role == "tool"
        }

    # The bus: one ToolInvoked per call, one ToolResultStored per stored result, and nothing else of theirs.
    invoked = [e for e in bus if isinstance(e, ToolInvoked)]
    stored = [e for e in bus if isinstance(e, ToolResultStored)]
    assert Counter(e.call_id for e in invoked) == Counter(call_ids)
    assert Counter(e.tool_call_id for e in stored) == Counter(call_ids) == Counter(list(commits))
    for event in stored:  # the storage event names the stored commit, with its text
        commit = commits[event.tool_call_id]
        assert (event.commit_hash, event.content, event.is_error) == (
            commit.hash,
            commit.content.content,
            commit.content.is_error,
        )
        assert event.oversized == (event.tool_name == "big")
        assert (event.handle is not None) == (
            STORED_OUTPUT_KEY in commit.content.metadata
        )  # its stored output

    # The stream: the same objects; a call finishes, then its result is stored, then its turn.
    assert {id(e) for e in stream if isinstance(e, ToolInvoked)} == {id(e) for e in invoked}
    assert {id(e) for e in stream if isinstance(e, ToolResultStored)} == {id(e) for e in stored}
    assert len([e for e in stream if isinstance(e, (ToolInvoked, ToolResultStored))]) == len(bus)
    allowed = (*STREAM_EVENTS, ToolInvoked, ToolResultStored, TurnCommitted, RunFinished)
    assert all(isinstance(e, allowed) for e in stream)
    position = {id(e): i for i, e in enumerate(stream)}
    turn_of = {h: i for i, e in enumerate(stream) if isinstance(e, TurnCommitted) for h in e.commit_hashes}
    for started, finished in zip(
        sorted(invoked, key=lambda e: e.call_id), sorted(stored, key=lambda e: e.tool_call_id), strict=True
    ):
        assert started.call_id == finished.tool_call_id
        assert position[id(started)] < position[id(finished)] < turn_of[finished.commit_hash or ""]

    # The spans: one tool span per call, and each stored result's commit names its call's span.
    spans = recorder.named("execute_tool")
    by_call = {dict(s.attributes or {})["gen_ai.tool.call.id"]: s for s in spans}
    assert Counter(dict(s.attributes or {})["gen_ai.tool.call.id"] for s in spans) == Counter(call_ids)
    for event in stored:
        ids = commits[event.tool_call_id].content.metadata[TRACE_KEY]
        span = by_call[event.tool_call_id]
        assert isinstance(ids, dict) and span.context is not None
        assert ids["span_id"] == format(span.context.span_id, "016x")


def test_an_unobserved_run_builds_no_storage_event(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nobody listens (no subscriber, no ``on_event``): no ToolResultStored is built; a listener: one each."""
    import weakprompt.runtime.recording as recording

    built: list[object] = []

    class Counting(ToolResultStored):
        def __init__(self, **fields: Any) -> None:
            super().__init__(**fields)
            built.append(self)

    monkeypatch.setattr(recording, "ToolResultStored", Counting)
    script = [AssistantTurn(tool_calls=(tool_call("ok", {"text": "a"}, id="c1"),)), text_turn("done")]
    asyncio.run(run(_prompt(TOOLS), adapter=ScriptedAdapter(script), session=Session()))
    assert built == []
    session = Session()
    session.bus.subscribe(ToolResultStored, lambda event: None)
    asyncio.run(run(_prompt(TOOLS), adapter=ScriptedAdapter(list(script)), session=session))
    assert [e.tool_call_id for e in built if isinstance(e, ToolResultStored)] == ["c1"]


def test_an_open_sections_call_is_streamed_like_any_call() -> None:
    """The loop answers ``open_sections`` itself, but the dispatcher's ToolInvoked for it is streamed too."""
    from loop_support import disclosure_prompt

    session = Session()
    bus: list[ToolInvoked] = []
    session.bus.subscribe(ToolInvoked, bus.append)
    opening = tool_call("open_sections", {"section_keys": ["secrets"], "reason": "need it"}, id="open")
    script = [AssistantTurn(tool_calls=(opening,)), text_turn("done")]
    seen: list[RunEvent[Any]] = []
    asyncio.run(
        run(disclosure_prompt(), adapter=ScriptedAdapter(script), session=session, on_event=seen.append)
    )
    (invoked,) = bus
    assert invoked.call_id == "open"
    assert [e for e in seen if isinstance(e, ToolInvoked)] == [invoked]
    (stored,) = [e for e in seen if isinstance(e, ToolResultStored)]
    assert (stored.tool_call_id, stored.handle, stored.is_error) == ("open", None, False)
