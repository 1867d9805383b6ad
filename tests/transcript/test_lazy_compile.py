"""Lazy loading in compile: earlier turns' stored results become slim references unless loaded."""

from __future__ import annotations

from collections.abc import Generator

import pytest

from outputs_support import log_lines
from weakprompt.errors import TranscriptError
from weakprompt.messages import ToolCall
from weakprompt.runtime.results import SizePolicy, ToolOutputStore, ToolResultPipeline
from weakprompt.store import Store
from weakprompt.transcript import CompileOptions, CompileView, Transcript
from weakprompt.transcript.lazy import (
    LOADED_RESULT_KEY,
    SLIM_REFERENCE_KEY,
    STORED_OUTPUT_KEY,
    LazyToolResults,
    StoredOutputRef,
    loaded_note_text,
    normalize_load,
    slim_reference_text,
)

BIG = log_lines(60)  # about 3.4 KB: stored and shown inline, slimmed in later turns
HUGE = log_lines(400)  # over the 12 KB cap: shown by handle


@pytest.fixture
def world() -> Generator[tuple[Transcript, ToolResultPipeline]]:
    with Store.open("sqlite://") as store:
        transcript = Transcript(store, "lazy")
        outputs = ToolOutputStore(store, "lazy")
        yield transcript, ToolResultPipeline(outputs, policy=SizePolicy())


def _tool_turn(transcript: Transcript, pipeline: ToolResultPipeline, *results: tuple[str, str, str]) -> None:
    calls = [ToolCall(call_id, name, '{"path": "x"}') for call_id, name, _ in results]
    transcript.assistant(tool_calls=calls)
    for call, (_, _, content) in zip(calls, results, strict=True):
        processed = pipeline.process(call, content)
        transcript.tool_result(call.id, call.name, processed.content, metadata=processed.metadata)


def _conversation(transcript: Transcript, pipeline: ToolResultPipeline) -> None:
    transcript.system("You read logs.")
    transcript.user("First question")
    _tool_turn(
        transcript, pipeline, ("c1", "read_log", BIG), ("c2", "status", "ok"), ("c3", "read_log", HUGE)
    )
    transcript.assistant("First answer")
    transcript.user("Second question")
    _tool_turn(transcript, pipeline, ("c4", "read_log", BIG + "tail\n"))


def _lazy(transcript: Transcript, load: bool | list[str], turn_start: str | None = None) -> list[str]:
    options = CompileOptions(transforms=(LazyToolResults(normalize_load(load), turn_start),))
    return [m.content for m in transcript.compile(options=options).messages]


def test_earlier_turn_results_compile_slim_and_the_current_turn_stays_inline(
    world: tuple[Transcript, ToolResultPipeline],
) -> None:
    transcript, pipeline = world
    _conversation(transcript, pipeline)
    plain = transcript.compile()
    options = CompileOptions(transforms=(LazyToolResults(False),))
    lazy = transcript.compile(options=options)
    by_id = {m.tool_call_id: m for m in lazy.messages if m.role == "tool"}
    # c1: a large result of an earlier turn -> slim reference with id, tool, summary, preview.
    slim = by_id["c1"]
    assert slim.content.startswith("[Result of tool call c1 (read_log) from an earlier turn")
    assert "Summary: read_log: 60 lines" in slim.content
    assert "Preview:\n2026-01-01T00:00:00 INFO worker-0 processed batch 0 ok" in slim.content
    assert 'get_tool_result(tool_call_id = "c1")' in slim.content
    assert slim.metadata == {SLIM_REFERENCE_KEY: "c1"}
    assert (slim.tool_call_id, slim.name) == ("c1", "read_log")
    # c2: tiny, the reference would be longer -> inline. c3: handle message is already short -> kept.
    assert by_id["c2"].content == "ok"
    assert by_id["c3"].content.startswith("Tool output is too large (")
    # c4: the current turn -> inline in full.
    assert by_id["c4"].content == BIG + "tail\n"
    assert lazy.token_count < plain.token_count
    # Nothing stored changed.
    assert transcript.compile() == plain
    assert [c.content.content for c in transcript.log() if c.content.tool_call_id == "c1"] == [BIG]


def test_load_true_changes_nothing_and_ids_load_only_those(
    world: tuple[Transcript, ToolResultPipeline],
) -> None:
    transcript, pipeline = world
    _conversation(transcript, pipeline)
    plain = [m.content for m in transcript.compile().messages]
    assert _lazy(transcript, True) == plain
    loaded = _lazy(transcript, ["c1"])
    assert BIG in loaded
    none_loaded = _lazy(transcript, [])
    assert BIG not in none_loaded and none_loaded == _lazy(transcript, False)


def test_turn_start_moves_the_boundary(world: tuple[Transcript, ToolResultPipeline]) -> None:
    transcript, pipeline = world
    _conversation(transcript, pipeline)
    first_user = next(c for c in transcript.log() if c.role == "user")
    # Everything from the first question on is "current": nothing is slimmed.
    assert BIG in _lazy(transcript, False, turn_start=first_user.hash)
    # An unknown turn start falls back to the last user message.
    assert BIG not in _lazy(transcript, False, turn_start="not-a-commit")


def test_without_a_user_message_everything_is_the_current_turn(
    world: tuple[Transcript, ToolResultPipeline],
) -> None:
    transcript, pipeline = world
    transcript.system("sys")
    _tool_turn(transcript, pipeline, ("c1", "read_log", BIG))
    assert BIG in _lazy(transcript, False)


def test_a_loaded_result_compiles_to_a_short_note_in_later_turns(
    world: tuple[Transcript, ToolResultPipeline],
) -> None:
    transcript, pipeline = world
    _conversation(transcript, pipeline)
    call = ToolCall("g1", "get_tool_result", '{"tool_call_id": "c1"}')
    transcript.assistant(tool_calls=[call])
    processed = pipeline.process(call, BIG)
    assert processed.metadata == {LOADED_RESULT_KEY: {"tool_call_id": "c1"}}
    assert processed.reference is None and processed.content == BIG
    transcript.tool_result("g1", "get_tool_result", processed.content, metadata=processed.metadata)
    assert _lazy(transcript, False).count(BIG) == 1  # in the current turn: shown in full
    transcript.user("Third question")
    lazy = _lazy(transcript, False)
    assert BIG not in lazy
    assert loaded_note_text("c1") in lazy
    assert BIG in _lazy(transcript, ["c1"])  # loading c1 keeps both the result and its loaded copy


def test_edited_results_without_a_reference_stay_as_edited(
    world: tuple[Transcript, ToolResultPipeline],
) -> None:
    transcript, pipeline = world
    _conversation(transcript, pipeline)
    target = next(c for c in transcript.log() if c.content.tool_call_id == "c1")
    transcript.tool_result("c1", "read_log", "edited " * 200, edit=target.hash)
    assert "edited " * 200 in _lazy(transcript, False)


def test_malformed_references_are_ignored(world: tuple[Transcript, ToolResultPipeline]) -> None:
    transcript, _ = world
    transcript.user("q")
    transcript.assistant(tool_calls=[ToolCall("c1", "t", "{}"), ToolCall("c2", "t", "{}")])
    transcript.tool_result("c1", "t", "x" * 2000, metadata={STORED_OUTPUT_KEY: {"tool_call_id": "c1"}})
    transcript.tool_result("c2", "t", "y" * 2000, metadata={LOADED_RESULT_KEY: "c1"})
    transcript.user("next")
    assert _lazy(transcript, False)[2:4] == ["x" * 2000, "y" * 2000]


def test_stored_output_ref_json_round_trip_and_rejects() -> None:
    ref = StoredOutputRef(
        tool_call_id="c",
        tool_name="t",
        handle="h",
        stored_hash="0" * 64,
        summary="s",
        preview="p",
        size_bytes=1,
        lines=1,
        tokens=1,
        is_error=True,
        oversized=True,
    )
    assert StoredOutputRef.from_json(ref.to_json()) == ref
    assert StoredOutputRef.from_json(None) is None
    assert StoredOutputRef.from_json({**ref.to_json(), "lines": -1}) is None
    assert StoredOutputRef.from_json({**ref.to_json(), "tokens": True}) is None
    assert StoredOutputRef.from_json({**ref.to_json(), "summary": 3}) is None
    assert "Summary: s\nPreview:\np\n" in slim_reference_text(ref)


@pytest.mark.parametrize("bad", ["c1", 3, None, ["c1", ""], [1]])
def test_bad_load_values_are_refused(bad: object) -> None:
    with pytest.raises(TranscriptError, match="load_tool_results"):
        normalize_load(bad)  # type: ignore[arg-type]


def test_compile_keyword_matches_the_transform_and_defaults_to_everything(
    world: tuple[Transcript, ToolResultPipeline],
) -> None:
    transcript, pipeline = world
    _conversation(transcript, pipeline)
    assert transcript.compile() == transcript.compile(load_tool_results=True)
    for load in (False, ["c1"], []):
        via_keyword = [m.content for m in transcript.compile(load_tool_results=load).messages]
        assert via_keyword == _lazy(transcript, load)
    view = transcript.compile_view(load_tool_results=False)
    assert BIG not in [m.content for m in view.context.messages]
    assert len(view.commits) == len(view.context.messages)
    # Combined with other transforms: lazy loading runs first.
    seen: list[int] = []

    def count_slim(v: CompileView) -> CompileView:
        seen.append(sum(SLIM_REFERENCE_KEY in m.metadata for m in v.context.messages))
        return v

    transcript.compile(options=CompileOptions(transforms=(count_slim,)), load_tool_results=False)
    assert seen == [1]
    with pytest.raises(TranscriptError, match="load_tool_results"):
        transcript.compile(load_tool_results="c1")  # type: ignore[arg-type]
