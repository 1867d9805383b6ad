"""The compacted view: covered prefixes, slim results, edits of covered commits, the queries."""

from __future__ import annotations

from compaction_support import request_problems
from weakprompt.messages import Message, ToolCall
from weakprompt.parts import ReasoningPart, TextPart
from weakprompt.transcript import COMPACTION_KEY, CompileOptions, Transcript
from weakprompt.transcript.compaction import (
    CompactionRecord,
    compaction_metadata,
    units_of,
)
from weakprompt.transcript.lazy import LazyToolResults


def _session(transcript: Transcript) -> list[str]:
    """system, user, two tool turns (one with reasoning, parallel calls), a final answer; origins."""
    hashes = [transcript.system("sys").hash, transcript.user("go").hash]
    calls = (ToolCall(id="a1", name="look"), ToolCall(id="a2", name="look"))
    parts = (ReasoningPart(text="hmm", issuer="p:m", signature="s"), TextPart("x"))
    hashes.append(transcript.assistant("x", tool_calls=calls, parts=parts).hash)
    hashes.append(transcript.tool_result("a1", "look", "r1 " * 200).hash)
    hashes.append(transcript.tool_result("a2", "look", "r2 " * 200).hash)
    hashes.append(transcript.assistant("", tool_calls=(ToolCall(id="b1", name="look"),)).hash)
    hashes.append(transcript.tool_result("b1", "look", "r3 " * 200).hash)
    hashes.append(transcript.assistant("done").hash)
    return hashes


def test_units_keep_calls_with_their_results() -> None:
    messages = [
        Message("system", "s"),
        Message("user", "u"),
        Message("assistant", "", tool_calls=(ToolCall(id="1", name="t"), ToolCall(id="2", name="t"))),
        Message("tool", "a", tool_call_id="1", name="t"),
        Message("tool", "b", tool_call_id="2", name="t"),
        Message("assistant", "done"),
    ]
    assert units_of(messages) == [(0, 1), (1, 2), (2, 5), (5, 6)]


def test_summary_stands_where_the_covered_prefix_was_and_queries_see_everything(
    transcript: Transcript,
) -> None:
    h = _session(transcript)
    transcript.commit(
        Message("user", "SUMMARY"),
        metadata=compaction_metadata("summary", h[1:5], tokens_before=1),
        tools=None,
    )
    view = transcript.compile()
    assert [m.content for m in view.messages][:2] == ["sys", "SUMMARY"]
    assert view.messages[2].tool_calls[0].id == "b1"
    assert request_problems(view.messages) == []
    assert len(transcript.find_tool_turns()) == 2  # the queries see the originals
    full = transcript.compile(options=CompileOptions(compacted=False))
    assert len(full.messages) == 9  # every message, and the compaction commit where it was written
    # Later transforms (lazy results) work on the compacted view.
    lazy = transcript.compile(load_tool_results=False)
    assert lazy.messages[1].content == "SUMMARY"


def test_slim_tier_shortens_covered_results_only(transcript: Transcript) -> None:
    h = _session(transcript)
    transcript.commit(
        Message("user", "s"), metadata=compaction_metadata("slim", [h[3]], tokens_before=1), tools=None
    )
    view = transcript.compile()
    assert view.messages[3].content.startswith("[Earlier result of tool call a1 (look)")
    assert view.messages[3].metadata[COMPACTION_KEY] == h[3]
    assert view.messages[4].content.startswith("r2")
    assert view.messages[2].parts[0].kind == "reasoning"  # the call keeps its reasoning
    assert view.token_count < transcript.compile(options=CompileOptions(compacted=False)).token_count


def test_edit_of_an_edit_of_a_covered_result_stays_covered(transcript: Transcript) -> None:
    h = _session(transcript)
    transcript.commit(
        Message("user", "S"), metadata=compaction_metadata("drop", h[1:5], tokens_before=1), tools=None
    )
    first = transcript.tool_result("a1", "look", "edited once", edit=h[3])
    transcript.tool_result("a1", "look", "edited twice", edit=first.hash)
    view = transcript.compile()
    assert request_problems(view.messages) == []
    assert all(m.content not in ("edited once", "edited twice") for m in view.messages)


def test_latest_prefix_compaction_wins_and_rollback_forgets_it(transcript: Transcript) -> None:
    h = _session(transcript)
    transcript.commit(
        Message("user", "ONE"), metadata=compaction_metadata("summary", h[1:2], tokens_before=1), tools=None
    )
    transcript.commit(
        Message("user", "TWO"), metadata=compaction_metadata("summary", h[1:5], tokens_before=1), tools=None
    )
    view = transcript.compile()
    assert [m.content for m in view.messages[:2]] == ["sys", "TWO"]
    assert "ONE" not in [m.content for m in view.messages]


def test_compaction_records_ignore_what_they_do_not_understand() -> None:
    assert CompactionRecord.from_json(None) is None
    assert CompactionRecord.from_json({"tier": "bogus", "covers": []}) is None
    assert CompactionRecord.from_json({"tier": "drop", "covers": "x"}) is None
    assert CompactionRecord.from_json({"tier": "drop", "covers": ["a", 3]}) == CompactionRecord(
        "drop", ("a",)
    )


def test_view_without_origins_falls_back_to_edit_targets(transcript: Transcript) -> None:
    h = _session(transcript)
    view = transcript.compile_view()
    bare = type(view)(context=view.context, commits=view.commits, token_counter=view.token_counter)
    assert bare.origin(3) == h[3]
    assert LazyToolResults(False)(bare).context.messages[0].content == "sys"
