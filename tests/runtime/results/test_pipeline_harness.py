"""Seed 003's "Phase 2 harness" through the whole loop, plus bad input to tool_output.

Large output -> handle -> tool_output -> extraction -> the answer reaches the
model; huge single-line JSON routes to full-chunked; multi-line text routes
to read-grep; a failing strategy ends in truncate. One scripted model plays
the agent and the extractors (the evaluation's adapter is the default
extraction model).
"""

from __future__ import annotations

from collections.abc import Generator

import pytest

from pipeline_support import NEEDLE, Outputs, World, fetch_prompt, log_text, single_line_json
from weakprompt.adapters.testing import tool_call, tool_call_turn
from weakprompt.events import ToolOutputExtracted
from weakprompt.messages import AssistantTurn
from weakprompt.runtime import ModelRequest, evaluate
from weakprompt.runtime.results import ToolOutputSettings, ToolOutputStore
from weakprompt.runtime.results.extraction import ExtractionConfig
from weakprompt.session import Session
from weakprompt.store import Store
from weakprompt.transcript import Transcript

SETTINGS = ToolOutputSettings(extraction_config=ExtractionConfig(grep_isolate=False))


@pytest.fixture
def transcript() -> Generator[Transcript]:
    with Store.open("sqlite://") as store:
        yield Transcript(store, "s1")


def _run(transcript: Transcript, world: World, output: str) -> tuple[str, list[ToolOutputExtracted], str]:
    session = Session(session_id="s1")
    events: list[ToolOutputExtracted] = []
    session.bus.subscribe(ToolOutputExtracted, events.append)
    response = evaluate(
        fetch_prompt(Outputs([output])),
        adapter=world.adapter,
        session=session,
        input="What failed?",
        transcript=transcript,
        tool_outputs=SETTINGS,
    )
    reply = transcript.find_tool_results(name="tool_output")[-1].content.content
    return response.text, events, reply


def test_large_output_handle_then_auto_extraction(transcript: Transcript) -> None:
    world = World("auto")
    text, events, reply = _run(transcript, world, log_text(400, needle_at=300))
    assert reply.split("\n\n", 1)[0].startswith("ABSTRACT FROM TOOL OUTPUT fetch WITH HANDLE ")
    assert NEEDLE in reply and NEEDLE in text
    assert [e.strategy for e in events] == ["read-grep"]


def test_huge_single_line_json_forces_full_chunked(transcript: Transcript) -> None:
    world = World("auto", extract=f"the record whose note is {NEEDLE}")
    text, events, reply = _run(transcript, world, single_line_json(400, needle_at=350))
    assert [e.strategy for e in events] == ["full-chunked"]
    assert ", STRATEGY:full-chunked:\n\n" in reply
    assert NEEDLE in text
    assert world.requests["grep"] == []
    assert len(world.requests["chunk"]) >= 2  # map calls over several chunks, then one reduce


def test_multi_line_text_goes_to_read_grep(transcript: Transcript) -> None:
    world = World("auto")
    text, events, _ = _run(transcript, world, log_text(2000, needle_at=1500))
    assert [e.strategy for e in events] == ["read-grep"]
    assert world.requests["chunk"] == []
    assert NEEDLE in text


@pytest.mark.parametrize("mode", ["read-grep", "full-chunked"])
def test_a_failing_strategy_falls_back_to_truncate(transcript: Transcript, mode: str) -> None:
    world = World(mode, fail_extraction=True)
    _, events, reply = _run(transcript, world, log_text(400, needle_at=300))
    assert [e.strategy for e in events] == ["truncate"]
    assert events[0].fallback_reason is not None and events[0].fallback_reason.startswith(f"{mode} failed")
    assert ", STRATEGY:truncate:\n\n" in reply
    assert "NOTE: " in reply  # the explicit warning that this is a cut, not an answer


def test_truncate_mode_needs_no_model(transcript: Transcript) -> None:
    world = World("truncate")
    _, events, reply = _run(transcript, world, log_text(400))
    assert [(e.strategy, e.usage.model_calls) for e in events] == [("truncate", 0)]
    assert world.requests["grep"] == world.requests["chunk"] == []
    assert ", STRATEGY:truncate:\n\nWARNING: " in reply
    assert "2026-01-01T00:00:00 INFO worker-0 processed batch 000000 ok" in reply  # the head is kept


# -- bad input: always a reply in the seed's formats, never an exception ---------------------------


def _agent_calling(arguments: dict[str, str]) -> World:
    def call(request: ModelRequest) -> AssistantTurn | str | None:
        last = request.context.messages[-1]
        if last.role == "tool" and last.name == "fetch":
            return tool_call_turn(tool_call("tool_output", arguments))
        return None

    return World(None, next_call=call)


def test_unknown_handle_is_a_successful_nothing_found_reply(transcript: Transcript) -> None:
    _, events, reply = _run(
        transcript, _agent_calling({"handle": "no-such-handle", "extract": "x"}), log_text(400)
    )
    assert reply.startswith(
        "ABSTRACT FROM TOOL OUTPUT UNKNOWN WITH HANDLE no-such-handle, STRATEGY:none:\n\n"
    )
    assert "Nothing was found" in reply
    assert events == []
    result = transcript.find_tool_results(name="tool_output")[-1]
    assert not result.content.is_error


def test_a_handle_from_another_session_is_not_found(transcript: Transcript) -> None:
    other = ToolOutputStore(transcript.store, "someone-else")
    foreign = other.store_result("c1", "fetch", "{}", log_text(400, needle_at=1), oversized=True)
    _, _, reply = _run(
        transcript, _agent_calling({"handle": foreign.handle, "extract": "the error"}), log_text(400)
    )
    assert reply.startswith(f"ABSTRACT FROM TOOL OUTPUT UNKNOWN WITH HANDLE {foreign.handle}, STRATEGY:none:")
    assert NEEDLE not in reply


def _own_handle(transcript: Transcript) -> str:
    return ToolOutputStore(transcript.store, "s1").list_results()[0].handle


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"extract": "   "}, "`extract` is empty"),
        ({"extract": "x", "mode": "psychic"}, "Unknown mode 'psychic'"),
    ],
)
def test_bad_requests_get_the_failure_format(
    transcript: Transcript, arguments: dict[str, str], expected: str
) -> None:
    def call(request: ModelRequest) -> AssistantTurn | str | None:
        last = request.context.messages[-1]
        if last.role == "tool" and last.name == "fetch":
            return tool_call_turn(tool_call("tool_output", {"handle": _own_handle(transcript), **arguments}))
        return None

    _, _, reply = _run(transcript, World(None, next_call=call), log_text(400))
    assert reply.startswith("TOOL_OUTPUT FAILED FOR fetch WITH HANDLE ")
    assert expected in reply
    assert transcript.find_tool_results(name="tool_output")[-1].content.is_error


def test_invalid_regex_in_read_grep_is_reported_to_the_sub_agent(transcript: Transcript) -> None:
    seen: list[str] = []
    world = World("read-grep")
    original = world._grep_agent  # pyright: ignore[reportPrivateUsage]

    def bad_pattern(request: ModelRequest) -> AssistantTurn | str:
        last = request.context.messages[-1]
        if last.role == "user":
            handle = ToolOutputStore(transcript.store, "s1").list_results()[0].handle
            return tool_call_turn(tool_call("grep", {"handle": handle, "pattern": "([unclosed"}))
        if len(seen) == 0:
            seen.append(last.content)
            return tool_call_turn(tool_call("grep", {"handle": _own_handle(transcript), "pattern": NEEDLE}))
        return original(request)

    world._grep_agent = bad_pattern  # type: ignore[method-assign]
    text, events, _ = _run(transcript, world, log_text(400, needle_at=10))
    assert "([unclosed" in seen[0] or "regular expression" in seen[0].lower()
    assert [e.strategy for e in events] == ["read-grep"]
    assert NEEDLE in text
