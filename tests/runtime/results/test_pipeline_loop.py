"""The tool-result pipeline inside evaluate(): storage, handles, tool_output, lazy loading, retention."""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass

import pytest

from pipeline_support import EXTRACT_USAGE, MAIN_USAGE, NEEDLE, Outputs, World, fetch_prompt, log_text
from weakprompt.adapters.testing import FunctionAdapter, tool_call, tool_call_turn
from weakprompt.budget import Budget, BudgetTracker
from weakprompt.errors import ConfigurationError
from weakprompt.events import ToolOutputExtracted, ToolResultStored
from weakprompt.messages import AssistantTurn
from weakprompt.runtime import ForceTool, ModelRequest, evaluate
from weakprompt.runtime.results import SizePolicy, ToolOutputSettings, ToolOutputStore
from weakprompt.runtime.results.extraction import ExtractionConfig
from weakprompt.session import Session
from weakprompt.store import Store
from weakprompt.tools import ToolContext, ToolResult, tool
from weakprompt.transcript import Transcript
from weakprompt.transcript.lazy import LOADED_RESULT_KEY, SLIM_REFERENCE_KEY, STORED_OUTPUT_KEY

BIG = log_text(400, needle_at=123)  # about 24 KB: over the 12 KB cap
SMALL = "status: ok\n"
SETTINGS = ToolOutputSettings(extraction_config=ExtractionConfig(grep_isolate=False))


@pytest.fixture
def transcript() -> Generator[Transcript]:
    with Store.open("sqlite://") as store:
        yield Transcript(store, "s1")


def _tool_names(request: ModelRequest) -> list[str]:
    return [t.name for t in request.tools]


def test_large_output_goes_behind_a_handle_and_tool_output_brings_the_answer_back(
    transcript: Transcript,
) -> None:
    world = World("read-grep")
    session = Session(session_id="s1")
    stored: list[ToolResultStored] = []
    extracted: list[ToolOutputExtracted] = []
    session.bus.subscribe(ToolResultStored, stored.append)
    session.bus.subscribe(ToolOutputExtracted, extracted.append)
    tracker = BudgetTracker(Budget())

    response = evaluate(
        fetch_prompt(Outputs([BIG])),
        adapter=world.adapter,
        session=session,
        input="What failed?",
        transcript=transcript,
        budget=tracker,
        tool_outputs=SETTINGS,
    )

    first, second, third = world.requests["main"]
    # Turn 1: nothing is stored yet, so tool_output is not offered.
    assert _tool_names(first) == ["fetch"]
    # Turn 2: the model sees exactly the handle message, and tool_output is offered.
    outputs = ToolOutputStore(transcript.store, "s1")
    [meta] = outputs.list_results()
    handle_message = second.context.messages[-1].content
    assert handle_message == (
        f"Tool output is too large ({meta.size_bytes} bytes, {meta.lines} lines, {meta.tokens} tokens).\n"
        f'Call tool_output(handle = "{meta.handle}", extract = "what to extract").\n'
        "Provide precise and detailed instructions in `extract` about what you are looking for."
    )
    assert BIG not in [m.content for m in second.context.messages]
    assert _tool_names(second) == ["fetch", "tool_output"]
    # Turn 3: the extraction's answer reached the model.
    reply = third.context.messages[-1].content
    assert reply.startswith(
        f"ABSTRACT FROM TOOL OUTPUT fetch WITH HANDLE {meta.handle}, STRATEGY:read-grep:\n\n"
    )
    assert NEEDLE in reply
    assert NEEDLE in response.text
    # The extraction ran on the evaluation's adapter and counts in the evaluation's usage and budget.
    assert len(world.requests["grep"]) == 2
    assert response.usage == MAIN_USAGE + MAIN_USAGE + MAIN_USAGE + EXTRACT_USAGE + EXTRACT_USAGE
    assert tracker.usage == response.usage
    # One storage event per result; only fetch's output went to the output store (tool_output's
    # reply never does); one extraction event.
    assert [(e.tool_name, e.oversized, e.deduplicated, e.handle) for e in stored] == [
        ("fetch", True, False, meta.handle),
        ("tool_output", False, False, None),
    ]
    assert [(e.strategy, e.fallback_reason) for e in extracted] == [("read-grep", None)]
    # The commit keeps a reference to the stored output.
    fetch_result = transcript.find_tool_results(name="fetch")[0]
    ref = fetch_result.metadata[STORED_OUTPUT_KEY]
    assert isinstance(ref, dict)
    assert (ref["handle"], ref["stored_hash"], ref["oversized"]) == (meta.handle, meta.stored_hash, True)
    # The tool_output reply is not stored, but its commit says how the extraction went.
    assert transcript.find_tool_results(name="tool_output")[0].metadata == {
        "extraction": {
            "strategy": "read-grep",
            "fallback_reason": None,
            "model_calls": 2,
            "input_tokens": EXTRACT_USAGE.input_tokens * 2,
            "output_tokens": EXTRACT_USAGE.output_tokens * 2,
        }
    }


def test_small_results_stay_inline_but_are_stored(transcript: Transcript) -> None:
    world = World()
    response = evaluate(
        fetch_prompt(Outputs([SMALL])),
        adapter=world.adapter,
        session=Session(),
        input="status?",
        transcript=transcript,
    )
    assert response.text == f"final: {SMALL}"
    assert all("tool_output" not in _tool_names(r) for r in world.requests["main"])
    [meta] = ToolOutputStore(transcript.store, "s1").list_results()
    assert not meta.oversized and meta.preview == "status: ok"


def test_the_remaining_token_budget_also_makes_a_result_oversized(transcript: Transcript) -> None:
    world = World(None)
    medium = log_text(100)  # about 6 KB: under the byte cap
    evaluate(
        fetch_prompt(Outputs([medium])),
        adapter=world.adapter,
        session=Session(),
        input="q",
        transcript=transcript,
        budget=Budget(max_total_tokens=200),
    )
    assert world.requests["main"][1].context.messages[-1].content.startswith("Tool output is too large")


def test_a_custom_byte_cap(transcript: Transcript) -> None:
    world = World(None)
    evaluate(
        fetch_prompt(Outputs([log_text(100)])),
        adapter=world.adapter,
        session=Session(),
        input="q",
        transcript=transcript,
        tool_outputs=ToolOutputSettings(policy=SizePolicy(max_bytes=100_000)),
    )
    assert world.requests["main"][1].context.messages[-1].content == log_text(100)


def test_a_separate_extraction_adapter_can_be_configured(transcript: Transcript) -> None:
    main = World("read-grep")
    extractor = World()
    settings = ToolOutputSettings(
        extraction_adapter=extractor.adapter, extraction_config=ExtractionConfig(grep_isolate=False)
    )
    response = evaluate(
        fetch_prompt(Outputs([BIG])),
        adapter=main.adapter,
        session=Session(),
        input="q",
        transcript=transcript,
        tool_outputs=settings,
    )
    assert main.requests["grep"] == [] and len(extractor.requests["grep"]) == 2
    assert NEEDLE in response.text
    assert response.usage.model_calls == 5


def test_tool_output_is_not_offered_on_a_turn_that_may_not_call_tools(transcript: Transcript) -> None:
    world = World(None)
    session = Session(session_id="s1")
    prompt = fetch_prompt(Outputs([BIG]))
    evaluate(prompt, adapter=world.adapter, session=session, input="q", transcript=transcript)
    before = len(world.requests["main"])
    evaluate(
        prompt, adapter=world.adapter, session=session, input="q2", transcript=transcript, tool_choice="none"
    )
    first, second = world.requests["main"][before : before + 2]
    assert first.tool_choice == "none"
    assert "tool_output" not in _tool_names(first)
    assert "tool_output" in _tool_names(second)  # a later "auto" turn offers it again


def test_tool_output_can_be_forced_once_the_session_has_an_oversized_output(transcript: Transcript) -> None:
    session = Session(session_id="s1")
    prompt = fetch_prompt(Outputs([BIG]))
    with pytest.raises(ConfigurationError, match="tool_output"):
        evaluate(
            prompt,
            adapter=World(None).adapter,
            session=session,
            input="q",
            transcript=transcript,
            tool_choice=ForceTool("tool_output"),
        )
    evaluate(prompt, adapter=World(None).adapter, session=session, input="q", transcript=transcript)
    handle = ToolOutputStore(transcript.store, "s1").list_results()[0].handle

    def forced(request: ModelRequest) -> AssistantTurn | str:
        if isinstance(request.tool_choice, ForceTool):
            assert request.tool_choice.name in _tool_names(request)
            return tool_call_turn(
                tool_call("tool_output", {"handle": handle, "extract": "the error", "mode": "read-grep"})
            )
        return None  # type: ignore[return-value]

    world = World(None, next_call=lambda r: forced(r) if isinstance(r.tool_choice, ForceTool) else None)
    response = evaluate(
        prompt,
        adapter=world.adapter,
        session=session,
        input="again",
        transcript=transcript,
        tool_choice=ForceTool("tool_output"),
        tool_outputs=SETTINGS,
    )
    assert NEEDLE in response.text


@dataclass(frozen=True)
class OwnParams:
    handle: str
    extract: str


@tool(name="tool_output", description="The application's own tool_output.")
def own_tool_output(params: OwnParams, *, context: ToolContext) -> ToolResult[None]:
    return ToolResult(message="the application's answer")


def test_a_prompt_tool_with_a_pipeline_name_wins(transcript: Transcript) -> None:
    world = World("auto")
    response = evaluate(
        fetch_prompt(Outputs([BIG]), extra_tools=(own_tool_output,)),
        adapter=world.adapter,
        session=Session(),
        input="q",
        transcript=transcript,
    )
    assert response.text == "final: the application's answer"
    assert _tool_names(world.requests["main"][1]) == ["fetch", "tool_output"]


def test_the_offered_tool_set_is_linked_in_the_transcript(transcript: Transcript) -> None:
    world = World("read-grep")
    evaluate(
        fetch_prompt(Outputs([BIG])),
        adapter=world.adapter,
        session=Session(),
        input="q",
        transcript=transcript,
        tool_outputs=SETTINGS,
    )
    changes = transcript.tool_set_changes()
    assert [c.added for c in changes if c.added] == [("fetch",), ("tool_output",)]


def test_repeated_output_is_stored_once_with_one_handle(transcript: Transcript) -> None:
    session = Session(session_id="s1")
    stored: list[ToolResultStored] = []
    session.bus.subscribe(ToolResultStored, stored.append)

    def twice(request: ModelRequest) -> AssistantTurn | str | None:
        tools_results = [m for m in request.context.messages if m.role == "tool"]
        if len(tools_results) == 1:
            return tool_call_turn(tool_call("fetch", {"source": "logs again"}))
        return None

    world = World(None, next_call=twice)
    evaluate(
        fetch_prompt(Outputs([BIG])), adapter=world.adapter, session=session, input="q", transcript=transcript
    )
    assert [e.deduplicated for e in stored] == [False, True]
    assert stored[0].handle == stored[1].handle
    results = ToolOutputStore(transcript.store, "s1").list_results()
    assert len(results) == 2 and results[0].stored_hash == results[1].stored_hash


# -- lazy loading ---------------------------------------------------------------------------------


def _two_evaluations(transcript: Transcript, **kwargs: object) -> tuple[World, str]:
    session = Session(session_id="s1")
    medium = log_text(80, needle_at=5)  # about 5 KB: inline, but a slim reference is much shorter
    prompt = fetch_prompt(Outputs([medium]))
    evaluate(prompt, adapter=World(None).adapter, session=session, input="first", transcript=transcript)
    world = World(
        None, next_call=lambda r: "second answer" if r.context.messages[-1].role == "user" else None
    )
    evaluate(
        prompt,
        adapter=world.adapter,
        session=session,
        input="second",
        transcript=transcript,
        **kwargs,  # type: ignore[arg-type]
    )
    return world, medium


def test_by_default_earlier_results_are_slim_and_get_tool_result_is_offered(transcript: Transcript) -> None:
    world, medium = _two_evaluations(transcript)
    [request] = world.requests["main"]
    tool_messages = [m for m in request.context.messages if m.role == "tool"]
    assert [m.metadata.get(SLIM_REFERENCE_KEY) for m in tool_messages] == [tool_messages[0].tool_call_id]
    assert medium not in [m.content for m in request.context.messages]
    assert "get_tool_result" in _tool_names(request)


def test_load_tool_results_true_keeps_everything_inline(transcript: Transcript) -> None:
    world, medium = _two_evaluations(transcript, load_tool_results=True)
    [request] = world.requests["main"]
    assert medium in [m.content for m in request.context.messages]
    assert "get_tool_result" not in _tool_names(request)


def test_get_tool_result_loads_the_full_result_and_stays_ephemeral(transcript: Transcript) -> None:
    session = Session(session_id="s1")
    medium = log_text(80, needle_at=5)
    prompt = fetch_prompt(Outputs([medium]))
    evaluate(prompt, adapter=World(None).adapter, session=session, input="first", transcript=transcript)
    call_id = transcript.find_tool_results(name="fetch")[0].content.tool_call_id
    assert call_id is not None

    def load(request: ModelRequest) -> AssistantTurn | str | None:
        last = request.context.messages[-1]
        if last.role == "user":
            return tool_call_turn(tool_call("get_tool_result", {"tool_call_id": call_id}))
        return f"loaded {len(last.content)} chars"

    stored: list[ToolResultStored] = []
    session.bus.subscribe(ToolResultStored, stored.append)
    world = World(None, next_call=load)
    response = evaluate(prompt, adapter=world.adapter, session=session, input="second", transcript=transcript)
    assert response.text == f"loaded {len(medium)} chars"
    # get_tool_result replies are never put in the output store: their storage event has no handle
    assert [(e.tool_name, e.handle) for e in stored] == [("get_tool_result", None)]
    loaded = transcript.find_tool_results(name="get_tool_result")[0]
    assert loaded.metadata == {LOADED_RESULT_KEY: {"tool_call_id": call_id}}
    # A later evaluation sees neither the original nor the loaded copy in full.
    third = World(None, next_call=lambda r: "third")
    evaluate(prompt, adapter=third.adapter, session=session, input="third", transcript=transcript)
    contents = [m.content for m in third.requests["main"][0].context.messages]
    assert medium not in contents
    assert any("was shown here in an earlier turn" in c for c in contents)


def test_unknown_get_tool_result_id_gets_the_known_ids(transcript: Transcript) -> None:
    session = Session(session_id="s1")
    prompt = fetch_prompt(Outputs([log_text(80)]))
    evaluate(prompt, adapter=World(None).adapter, session=session, input="first", transcript=transcript)

    def ask(request: ModelRequest) -> AssistantTurn | str | None:
        last = request.context.messages[-1]
        if last.role == "user":
            return tool_call_turn(tool_call("get_tool_result", {"tool_call_id": "nope"}))
        return last.content

    response = evaluate(
        prompt, adapter=World(None, next_call=ask).adapter, session=session, input="2", transcript=transcript
    )
    known = ToolOutputStore(transcript.store, "s1").known_call_ids()
    assert response.text.startswith("No stored tool result has tool_call_id 'nope'.")
    assert known[0] in response.text


@pytest.mark.parametrize("bad", ["c1", 5])
def test_bad_load_tool_results_is_a_configuration_error(transcript: Transcript, bad: object) -> None:
    with pytest.raises(ConfigurationError, match="load_tool_results"):
        evaluate(
            fetch_prompt(Outputs([SMALL])),
            adapter=World().adapter,
            session=Session(),
            input="q",
            transcript=transcript,
            load_tool_results=bad,  # type: ignore[arg-type]
        )


# -- retention ------------------------------------------------------------------------------------


def test_retention_session_keeps_outputs_until_purged(transcript: Transcript) -> None:
    evaluate(
        fetch_prompt(Outputs([BIG])),
        adapter=World(None).adapter,
        session=Session(),
        input="q",
        transcript=transcript,
    )
    outputs = ToolOutputStore(transcript.store, "s1")
    assert len(outputs.list_results()) == 1
    assert outputs.purge_session("s1") == 1
    assert outputs.list_results() == []


def test_retention_evaluation_deletes_what_the_evaluation_stored(transcript: Transcript) -> None:
    session = Session(session_id="s1")
    prompt = fetch_prompt(Outputs([BIG, SMALL]))
    evaluate(prompt, adapter=World(None).adapter, session=session, input="q", transcript=transcript)
    evaluate(
        prompt,
        adapter=World(None).adapter,
        session=session,
        input="q2",
        transcript=transcript,
        retention="evaluation",
    )
    # The first evaluation's output stays; the second's is gone.
    assert [m.preview for m in ToolOutputStore(transcript.store, "s1").list_results()] == [
        ToolOutputStore(transcript.store, "s1").list_results()[0].preview
    ]
    assert len(ToolOutputStore(transcript.store, "s1").list_results()) == 1


def test_retention_evaluation_cleans_up_after_a_failure_too(transcript: Transcript) -> None:
    def boom(request: ModelRequest) -> AssistantTurn | str | None:
        if any(m.role == "tool" for m in request.context.messages):
            raise RuntimeError("model crashed")
        return None

    with pytest.raises(RuntimeError, match="model crashed"):
        evaluate(
            fetch_prompt(Outputs([BIG])),
            adapter=World(None, next_call=boom).adapter,
            session=Session(),
            input="q",
            transcript=transcript,
            retention="evaluation",
        )
    assert ToolOutputStore(transcript.store, "s1").list_results() == []


def test_bad_retention_is_refused(transcript: Transcript) -> None:
    with pytest.raises(ConfigurationError, match="retention"):
        evaluate(
            fetch_prompt(Outputs([SMALL])),
            adapter=World().adapter,
            session=Session(),
            input="q",
            transcript=transcript,
            retention="forever",  # type: ignore[arg-type]
        )


def test_extraction_usage_outside_this_session_is_not_counted(transcript: Transcript) -> None:
    session = Session(session_id="s1")

    def publish_foreign(request: ModelRequest) -> AssistantTurn | str | None:
        from weakprompt.clock import SYSTEM_CLOCK
        from weakprompt.messages import Usage

        session.bus.dispatch(
            ToolOutputExtracted(
                session_id="someone-else",
                handle="h",
                tool_name="t",
                strategy="truncate",
                fallback_reason=None,
                usage=Usage(input_tokens=999, model_calls=1),
                created_at=SYSTEM_CLOCK.now(),
            )
        )
        return AssistantTurn(text="done", usage=Usage(model_calls=1))  # no tokens of its own

    response = evaluate(
        fetch_prompt(Outputs([SMALL])),
        adapter=FunctionAdapter(lambda r: publish_foreign(r) or "done"),
        session=session,
        input="q",
        transcript=transcript,
    )
    assert response.usage.input_tokens == 0
