"""The tool_output tool: its exact schema, its replies, its event, and the Phase 2 harness cases."""

from __future__ import annotations

import json
import logging
import uuid
from dataclasses import dataclass

import pytest

from extraction_support import (
    USAGE,
    adapter,
    config,
    grep_then_read_agent,
    last_message,
    log_lines,
    tool_names,
    wrapped,
)
from weakprompt.adapters._support import parameters_schema
from weakprompt.adapters.testing import tool_call, tool_call_turn
from weakprompt.budget import Budget, BudgetTracker
from weakprompt.clock import FakeClock
from weakprompt.events import ToolInvoked, ToolOutputExtracted
from weakprompt.messages import AssistantTurn
from weakprompt.prompt import MarkdownSection, Prompt, PromptTemplate
from weakprompt.runtime import ModelRequest, ToolDispatcher, evaluate
from weakprompt.runtime.results import NEVER_STORED_TOOLS
from weakprompt.runtime.results.extraction import (
    EXTRACTION_MODES,
    NO_RELEVANT_DATA,
    TOOL_OUTPUT_SCHEMA,
    ExtractionResult,
    ExtractionSource,
    Extractor,
    context_extractor,
    handle_message,
    make_tool_output_tool,
)
from weakprompt.serde import StrictSchemaError
from weakprompt.session import Session
from weakprompt.tools import AnyTool, Tool, ToolContext, ToolResult


class Outputs:
    """A stand-in for the store's lookup: handle -> source, nothing more."""

    def __init__(self) -> None:
        self.by_handle: dict[str, ExtractionSource] = {}

    def add(self, data: bytes, *, session_id: str | None, tool_name: str = "fetch_logs") -> str:
        handle = str(uuid.uuid4())
        self.by_handle[handle] = ExtractionSource(
            handle=handle,
            tool_name=tool_name,
            arguments='{"service": "api"}',
            data=data,
            session_id=session_id,
        )
        return handle

    def lookup(self, handle: str, context: ToolContext) -> ExtractionSource | None:
        return self.by_handle.get(handle)


def tool_for(outputs: Outputs, model_fn=None, **changes: object) -> AnyTool:  # type: ignore[no-untyped-def]
    model = adapter(model_fn or (lambda request: wrapped(request, "extracted")))
    return make_tool_output_tool(
        outputs.lookup, lambda context: Extractor(model, run_agent=evaluate, config=config(**changes))
    )


def run(tool: AnyTool, arguments: dict[str, object], session: Session, tracker: BudgetTracker | None = None):  # type: ignore[no-untyped-def]
    return ToolDispatcher([tool], session=session, budget_tracker=tracker).execute(
        tool_call("tool_output", arguments)
    )  # type: ignore[arg-type]


# -- schema ----------------------------------------------------------------------------------


def test_schema_has_exactly_the_documented_structure() -> None:
    schema = make_tool_output_tool(
        Outputs().lookup, lambda c: Extractor(adapter(lambda r: ""))
    ).parameters_schema()
    descriptions = {name: prop.pop("description") for name, prop in schema["properties"].items()}  # type: ignore[union-attr]
    assert schema == {
        "type": "object",
        "additionalProperties": False,
        "required": ["handle", "extract"],
        "properties": {
            "handle": {"type": "string", "minLength": 1},
            "extract": {"type": "string", "minLength": 1},
            "mode": {"type": "string", "enum": ["auto", "full-chunked", "read-grep", "truncate"]},
        },
    }
    assert list(schema) == ["type", "additionalProperties", "required", "properties"]
    assert list(schema["properties"]) == ["handle", "extract", "mode"]  # type: ignore[arg-type]
    assert all(isinstance(text, str) and len(text) > 20 for text in descriptions.values())
    assert "truncate" in descriptions["mode"] and "read-grep" in descriptions["mode"]


def test_schema_copies_cannot_change_the_tool() -> None:
    tool = make_tool_output_tool(Outputs().lookup, lambda c: Extractor(adapter(lambda r: "")))
    tool.parameters_schema()["properties"] = {}
    assert tool.parameters_schema() == TOOL_OUTPUT_SCHEMA
    assert tool.spec()["parameters"] == TOOL_OUTPUT_SCHEMA


def test_there_is_no_strict_variant_so_adapters_send_it_unflagged() -> None:
    tool = make_tool_output_tool(Outputs().lookup, lambda c: Extractor(adapter(lambda r: "")))
    with pytest.raises(StrictSchemaError):
        tool.parameters_schema(strict=True)
    assert parameters_schema(tool, strict=True) == (TOOL_OUTPUT_SCHEMA, False)


def test_rendered_prompts_advertise_the_fixed_schema() -> None:
    tool = make_tool_output_tool(Outputs().lookup, lambda c: Extractor(adapter(lambda r: "")))
    template: PromptTemplate[None] = PromptTemplate(
        ns="tests/extraction",
        key="schema",
        sections=[MarkdownSection(title="T", key="t", template="x", tools=[tool])],
    )
    rendered = Prompt(template).render()
    assert rendered.tool_schema("tool_output")["parameters"] == TOOL_OUTPUT_SCHEMA
    assert rendered.descriptor.tools == ()  # no override may change the fixed schema


def test_never_stored_tools_are_exported_for_the_store() -> None:
    assert NEVER_STORED_TOOLS == frozenset({"tool_output", "get_tool_result"})
    assert EXTRACTION_MODES == ("auto", "full-chunked", "read-grep", "truncate")


# -- replies ---------------------------------------------------------------------------------


def test_a_successful_extraction_uses_the_exact_success_header() -> None:
    session = Session()
    outputs = Outputs()
    handle = outputs.add(log_lines(20), session_id=session.session_id)
    execution = run(tool_for(outputs), {"handle": handle, "extract": "the errors"}, session)

    assert execution.success
    assert (
        execution.message
        == f"ABSTRACT FROM TOOL OUTPUT fetch_logs WITH HANDLE {handle}, STRATEGY:full-chunked:\n\nextracted"
    )
    value = execution.result.value
    assert isinstance(value, ExtractionResult)
    assert value.strategy_used == "full-chunked" and value.model_calls == 1
    assert execution.result.exclude_value_from_context


@pytest.mark.parametrize("owner", [None, "same"])
def test_outputs_without_or_with_the_same_session_are_found(owner: str | None) -> None:
    session = Session()
    outputs = Outputs()
    handle = outputs.add(b"data", session_id=session.session_id if owner else None)
    assert run(tool_for(outputs), {"handle": handle, "extract": "x"}, session).message.startswith(
        "ABSTRACT FROM TOOL OUTPUT fetch_logs"
    )


def test_an_unknown_handle_is_a_successful_nothing_found_reply() -> None:
    session = Session()
    seen: list[ToolOutputExtracted] = []
    session.bus.subscribe(ToolOutputExtracted, seen.append)
    execution = run(tool_for(Outputs()), {"handle": "no-such-handle", "extract": "x"}, session)
    assert execution.success
    assert execution.message.startswith(
        "ABSTRACT FROM TOOL OUTPUT UNKNOWN WITH HANDLE no-such-handle, STRATEGY:none:\n\n"
    )
    assert "no stored tool output" in execution.message
    assert seen == []


def test_a_handle_from_another_session_is_not_found() -> None:
    outputs = Outputs()
    handle = outputs.add(b"other people's data", session_id="someone-else")
    calls: list[ModelRequest] = []
    tool = tool_for(outputs, lambda request: calls.append(request) or wrapped(request, "leak"))
    execution = run(tool, {"handle": handle, "extract": "x"}, Session())
    assert execution.success
    assert "STRATEGY:none" in execution.message and "nothing was extracted" in execution.message
    assert "other people" not in execution.message
    assert calls == []


@pytest.mark.parametrize("extract", ["", "   \n\t"])
def test_an_empty_extract_is_a_failure_reply(extract: str) -> None:
    session = Session()
    outputs = Outputs()
    handle = outputs.add(b"data", session_id=session.session_id)
    execution = run(tool_for(outputs), {"handle": handle, "extract": extract}, session)
    assert not execution.success
    assert execution.message.startswith(
        f"TOOL_OUTPUT FAILED FOR fetch_logs WITH HANDLE {handle}, STRATEGY:auto:\n\n"
    )
    assert "`extract` is empty" in execution.message


def test_an_unknown_mode_is_a_failure_reply_listing_the_modes() -> None:
    session = Session()
    outputs = Outputs()
    handle = outputs.add(b"data", session_id=session.session_id)
    execution = run(tool_for(outputs), {"handle": handle, "extract": "x", "mode": "fast"}, session)
    assert not execution.success
    assert execution.message.startswith(
        f"TOOL_OUTPUT FAILED FOR fetch_logs WITH HANDLE {handle}, STRATEGY:fast:"
    )
    assert "auto, full-chunked, read-grep, truncate" in execution.message


def test_extra_or_missing_arguments_are_refused_by_the_dispatcher() -> None:
    session = Session()
    extra = run(tool_for(Outputs()), {"handle": "h", "extract": "x", "limit": 3}, session)
    missing = run(tool_for(Outputs()), {"handle": "h"}, session)
    assert not extra.success and "limit" in extra.message
    assert not missing.success and "extract" in missing.message


def test_explicit_truncate_mode_needs_no_model() -> None:
    session = Session()
    outputs = Outputs()
    handle = outputs.add(log_lines(2000), session_id=session.session_id)
    tool = make_tool_output_tool(outputs.lookup, lambda context: Extractor(adapter(lambda r: 1 / 0)))  # type: ignore[arg-type, return-value]
    execution = run(tool, {"handle": handle, "extract": "x", "mode": "truncate"}, session)
    assert execution.success
    assert execution.message.startswith(
        f"ABSTRACT FROM TOOL OUTPUT fetch_logs WITH HANDLE {handle}, STRATEGY:truncate:\n\nWARNING:"
    )


def test_an_extractor_that_cannot_be_built_is_a_failure_reply(caplog: pytest.LogCaptureFixture) -> None:
    session = Session()
    outputs = Outputs()
    handle = outputs.add(b"data", session_id=session.session_id)

    def no_model(context: ToolContext) -> Extractor:
        raise LookupError("no adapter configured")

    with caplog.at_level(logging.WARNING):
        execution = run(
            make_tool_output_tool(outputs.lookup, no_model), {"handle": handle, "extract": "x"}, session
        )
    assert not execution.success
    assert execution.message.startswith("TOOL_OUTPUT FAILED FOR fetch_logs")
    assert (
        "LookupError: no adapter configured" in execution.message and 'mode "truncate"' in execution.message
    )


def test_non_utf8_outputs_are_extracted_safely() -> None:
    session = Session()
    outputs = Outputs()
    handle = outputs.add(b"\xff\xfe binary \x00\x80 head\n" * 10, session_id=session.session_id)
    seen: list[str] = []
    tool = tool_for(
        outputs,
        lambda request: seen.append(request.context.messages[1].content) or wrapped(request, "binary"),
    )
    execution = run(tool, {"handle": handle, "extract": "x"}, session)
    assert execution.success
    assert "\ufffd" in seen[0]


def test_context_extractor_uses_the_evaluations_model() -> None:
    session = Session()
    outputs = Outputs()
    handle = outputs.add(b"data", session_id=session.session_id)
    model = adapter(lambda request: wrapped(request, "from the evaluation's model"))
    tool = make_tool_output_tool(outputs.lookup, context_extractor(config(truncate_max_bytes=600)))
    with_model = ToolDispatcher([tool], session=session, adapter=model).execute(
        tool_call("tool_output", {"handle": handle, "extract": "x"})
    )
    without = ToolDispatcher([tool], session=session).execute(
        tool_call("tool_output", {"handle": handle, "extract": "x"})
    )
    assert with_model.message.endswith("\n\nfrom the evaluation's model")
    assert not without.success and "this tool context has no adapter" in without.message


# -- event and accounting --------------------------------------------------------------------


def test_each_extraction_publishes_one_event_and_charges_the_budget() -> None:
    clock = FakeClock()
    session = Session(clock=clock)
    outputs = Outputs()
    handle = outputs.add(log_lines(20), session_id=session.session_id)
    seen: list[ToolOutputExtracted] = []
    session.bus.subscribe(ToolOutputExtracted, seen.append)
    tracker = BudgetTracker(Budget(max_total_tokens=10_000))
    tool = tool_for(outputs, lambda request: AssistantTurn(text=wrapped(request, "x"), usage=USAGE))
    run(tool, {"handle": handle, "extract": "x"}, session, tracker)

    (event,) = seen
    assert (event.session_id, event.handle, event.tool_name) == (session.session_id, handle, "fetch_logs")
    assert (event.strategy, event.fallback_reason) == ("full-chunked", None)
    assert event.usage == USAGE
    assert event.created_at == clock.now()
    assert tracker.usage == USAGE


def test_a_fallback_event_carries_the_reason() -> None:
    session = Session()
    outputs = Outputs()
    handle = outputs.add(log_lines(20), session_id=session.session_id)
    seen: list[ToolOutputExtracted] = []
    session.bus.subscribe(ToolOutputExtracted, seen.append)
    reply = AssistantTurn(text="no tags at all", usage=USAGE)
    execution = run(tool_for(outputs, lambda request: reply), {"handle": handle, "extract": "x"}, session)

    assert execution.success
    assert execution.message.startswith(
        f"ABSTRACT FROM TOOL OUTPUT fetch_logs WITH HANDLE {handle}, STRATEGY:truncate:\n\n"
        "NOTE: full-chunked failed"
    )
    (event,) = seen
    assert event.strategy == "truncate"
    assert event.fallback_reason is not None and "no tags at all" in event.fallback_reason
    assert event.usage == USAGE  # the failed attempt's call is still charged


def test_a_failing_subscriber_does_not_fail_the_tool(caplog: pytest.LogCaptureFixture) -> None:
    session = Session()
    outputs = Outputs()
    handle = outputs.add(b"data", session_id=session.session_id)

    def broken(event: ToolOutputExtracted) -> None:
        raise RuntimeError("subscriber bug")

    session.bus.subscribe(ToolOutputExtracted, broken)
    with caplog.at_level(logging.ERROR):
        execution = run(tool_for(outputs), {"handle": handle, "extract": "x"}, session)
    assert execution.success
    assert any("ToolOutputExtracted" in record.getMessage() for record in caplog.records)


def test_the_sub_agent_leaves_no_trace_in_the_callers_session() -> None:
    session = Session()
    outputs = Outputs()
    handle = outputs.add(log_lines(3000, needle_at=10), session_id=session.session_id)
    execution = run(
        tool_for(outputs, grep_then_read_agent(), grep_isolate=False),
        {"handle": handle, "extract": "needle"},
        session,
    )
    assert "STRATEGY:read-grep" in execution.message
    assert [event.name for event in session[ToolInvoked].all()] == ["tool_output"]


# -- Phase 2 harness: the evaluation loop, a tool with large output, and tool_output ------------


@dataclass(frozen=True)
class FetchParams:
    service: str


def harness(outputs: Outputs, payload: bytes, extraction_model) -> tuple[Prompt[None], AnyTool]:  # type: ignore[no-untyped-def]
    """A prompt with a tool whose output is always too large, and tool_output."""

    def fetch_logs(params: FetchParams, *, context: ToolContext) -> ToolResult[None]:
        handle = outputs.add(payload, session_id=context.session.session_id)
        return ToolResult(
            message=handle_message(handle, len(payload), payload.count(b"\n"), len(payload) // 4)
        )

    fetch: AnyTool = Tool(name="fetch_logs", description="Fetch the service logs.", handler=fetch_logs)
    tool_output = make_tool_output_tool(
        outputs.lookup, lambda context: Extractor(extraction_model, run_agent=evaluate, config=config())
    )
    template: PromptTemplate[None] = PromptTemplate(
        ns="tests/extraction",
        key="harness",
        sections=[
            MarkdownSection(
                title="Task", key="task", template="Answer from the logs.", tools=[fetch, tool_output]
            )
        ],
    )
    return Prompt(template), tool_output


def main_agent(extract: str, mode: str | None = None):  # type: ignore[no-untyped-def]
    """The main model: fetch, then call tool_output with the handle it was given, then answer."""

    def reply(request: ModelRequest) -> AssistantTurn | str:
        assert tool_names(request) == {"fetch_logs", "tool_output"}
        last = last_message(request)
        if last.role == "user":
            return tool_call_turn(tool_call("fetch_logs", {"service": "api"}))
        if last.name == "fetch_logs":
            assert last.content.startswith("Tool output is too large (")
            handle = last.content.split('handle = "')[1].split('"')[0]
            arguments: dict[str, str] = {"handle": handle, "extract": extract}
            if mode:
                arguments["mode"] = mode
            return tool_call_turn(tool_call("tool_output", arguments))  # type: ignore[arg-type]
        assert last.name == "tool_output"
        return f"Final: {last.content}"

    return reply


def test_harness_large_output_goes_behind_a_handle_and_read_grep_finds_the_needle() -> None:
    session = Session()
    seen: list[ToolOutputExtracted] = []
    session.bus.subscribe(ToolOutputExtracted, seen.append)
    outputs = Outputs()
    # (a needle that is not credential-shaped: the evaluation redacts output by default)
    payload = log_lines(20_000, needle_at=15_555, needle="NEEDLE code=4711")
    extraction_model = adapter(grep_then_read_agent())
    prompt, _ = harness(outputs, payload, extraction_model)
    tracker = BudgetTracker(Budget(max_model_calls=50))

    response = evaluate(
        prompt,
        adapter=adapter(main_agent("the ERROR line with the code")),
        session=session,
        input="What is the code?",
        budget=tracker,
    )

    assert "STRATEGY:read-grep" in response.text
    assert "15555: 2026-01-01T00:00:00 ERROR NEEDLE code=4711" in response.text
    assert response.turns == 3
    assert tracker.usage.model_calls == 3 + 3  # main loop + extraction sub-agent
    assert [(event.strategy, event.usage.model_calls) for event in seen] == [("read-grep", 3)]


def test_harness_huge_single_line_json_goes_full_chunked() -> None:
    session = Session()
    outputs = Outputs()
    payload = json.dumps([{"id": i, "owner": f"user-{i}"} for i in range(30_000)]).encode()

    def extraction(request: ModelRequest) -> str:
        if "Findings from part" in request.context.messages[1].content:
            return wrapped(request, "id 29999 is owned by user-29999")
        return wrapped(
            request, "user-29999" if "user-29999" in request.context.messages[1].content else NO_RELEVANT_DATA
        )

    prompt, _ = harness(outputs, payload, adapter(extraction, window=65536))
    response = evaluate(
        prompt, adapter=adapter(main_agent("owner of id 29999")), session=session, input="Who owns 29999?"
    )
    assert "STRATEGY:full-chunked:\n\nid 29999 is owned by user-29999" in response.text


def test_harness_failing_strategy_reaches_the_model_as_a_labelled_truncation() -> None:
    session = Session()
    outputs = Outputs()
    payload = log_lines(2_000, needle_at=3, needle="NEEDLE code=4711")
    extraction_model = adapter(lambda request: "I refuse to use tags.")
    prompt, _ = harness(outputs, payload, extraction_model)
    response = evaluate(
        prompt, adapter=adapter(main_agent("the code", mode="full-chunked")), session=session, input="?"
    )

    assert "STRATEGY:truncate:\n\nNOTE: full-chunked failed: the answer for part 1 of " in response.text
    assert "I refuse to use tags." in response.text
    assert len(extraction_model.requests) == 1
    assert "WARNING: this is not the whole output." in response.text
    assert "NEEDLE code=4711" in response.text  # line 3 is in the kept head
