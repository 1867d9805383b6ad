"""The inspector's read models without the web app: sessions, turns, edits, tool sets, payload streaming."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from weakprompt.inspector import PausedRuns, list_sessions
from weakprompt.inspector._json import as_int, load_object, pretty
from weakprompt.inspector.charts import UsagePoint, usage_chart
from weakprompt.inspector.diffs import line_diff
from weakprompt.inspector.outputs import (
    DamagedOutput,
    _blob_info,
    _payload_pieces,
    check_payload,
    list_outputs,
    load_output,
    stream_payload,
)
from weakprompt.inspector.session_view import UnknownSession, find_trace, load_session
from weakprompt.inspector.sessions import prompt_label
from weakprompt.inspector.status import shape_status
from weakprompt.inspector.toolsets import ToolEntry, compare_sets, load_tool_set_page
from weakprompt.messages import ToolCall, Usage
from weakprompt.runtime.results import ToolOutputStore
from weakprompt.store import Store
from weakprompt.transcript import ToolSetChange, Transcript


@pytest.fixture
def store(tmp_path: Path) -> Store:
    with Store.open(tmp_path / "q.db") as opened:
        yield opened


def test_stored_json_is_read_without_raising() -> None:
    assert load_object("not json") == {} and load_object("[1]") == {} and load_object(None) == {}
    assert load_object('{"a": 1}') == {"a": 1}
    assert as_int(True) == 0 and as_int("3") == 0 and as_int(3) == 3
    assert pretty('{"b":1}') == '{\n  "b": 1\n}'
    assert pretty("not json") == "not json" and pretty('"text"') == '"text"'
    assert pretty({"x": [1]}) == '{\n  "x": [\n    1\n  ]\n}'


def test_line_diff_kinds_and_limits() -> None:
    diff = line_diff("a\nb\nc", "a\nB\nc")
    assert [(d.kind, d.text) for d in diff] == [
        ("hunk", "@@ -1,3 +1,3 @@"),
        ("ctx", "a"),
        ("del", "b"),
        ("add", "B"),
        ("ctx", "c"),
    ]
    assert [d.text for d in line_diff("same", "same")] == ["no change in the text"]
    long = line_diff("\n".join(map(str, range(3000))), "")
    assert len(long) == 2001 and long[-1].kind == "note"


@given(st.lists(st.sampled_from("abcd"), max_size=12), st.lists(st.sampled_from("abcd"), max_size=12))
def test_line_diff_rebuilds_both_texts(before: list[str], after: list[str]) -> None:
    """Context and removed lines give the old text, context and added lines the new one."""
    diff = line_diff("\n".join(before), "\n".join(after), context=10**6)
    if before == after:
        return
    assert [d.text for d in diff if d.kind in ("ctx", "del")] == before
    assert [d.text for d in diff if d.kind in ("ctx", "add")] == after


def test_usage_chart_draws_one_bar_pair_per_turn_and_escapes() -> None:
    assert "no model turns" in usage_chart([])
    svg = usage_chart([UsagePoint(1, 10, 5, href="?a=1&b=2"), UsagePoint(2, 0, 0)])
    assert svg.count('<rect class="in"') == 2 and svg.count('<rect class="out"') == 2
    assert 'href="?a=1&amp;b=2"' in svg and "turn 1: 10 in, 5 out" in svg


def _entries(*pairs: tuple[str, str]) -> tuple[ToolEntry, ...]:
    return tuple(ToolEntry(name=n, tool_hash=h) for n, h in pairs)


def test_tool_set_changes_by_name() -> None:
    first = compare_sets("c1", "s", _entries(("a", "1")), None)
    assert first.first and first.added == ("a",) and not first.same_as_before
    assert isinstance(first, ToolSetChange) and (first.set_hash, first.names) == ("s", ("a",))
    before = _entries(("a", "1"), ("b", "2"), ("c", "3"))
    same = compare_sets("c2", "s", before, ("c1", before))
    assert same.same_as_before and same.previous_commit == "c1"
    change = compare_sets("c3", "t", _entries(("a", "1"), ("b", "9"), ("d", "4")), ("c2", before))
    assert (change.added, change.removed, change.changed, change.reordered) == (("d",), ("c",), ("b",), False)
    moved = compare_sets("c4", "u", _entries(("b", "2"), ("a", "1"), ("c", "3")), ("c3", before))
    assert moved.reordered and not moved.same_as_before


def test_the_inspectors_old_tool_set_change_name_warns_and_is_the_transcripts() -> None:
    """There is one ``ToolSetChange`` (the transcript's); the inspector's old name points to it."""
    from weakprompt.inspector import toolsets

    with pytest.warns(DeprecationWarning, match=r"ToolSetChange is deprecated.*transcript"):
        old = toolsets.ToolSetChange  # pyright: ignore[reportAttributeAccessIssue]
    assert old is ToolSetChange
    assert "ToolSetChange" not in dir(toolsets)


def test_status_is_read_from_the_last_commit() -> None:
    assert shape_status("assistant", False) == "finished"
    assert shape_status("assistant", True) == "failed"
    assert shape_status("tool", False) == "failed" and shape_status(None, False) == "failed"


def test_prompt_label_falls_back_to_the_system_text() -> None:
    assert prompt_label('{"prompt": "p"}', "ignored") == "p"
    assert prompt_label("{}", None) == ""
    assert prompt_label("{}", "\n\n  First line  \nsecond") == "First line"
    assert prompt_label("{}", "x" * 200).endswith("…") and len(prompt_label("{}", "x" * 200)) == 80


def test_trace_ids_are_found_at_the_top_or_under_a_tracing_key() -> None:
    assert find_trace({}) is None
    top = find_trace({"trace_id": "t", "span_id": "s"})
    assert top is not None and (top.trace_id, top.span_id) == ("t", "s")
    nested = find_trace({"otel": {"trace_id": "u"}})
    assert nested is not None and (nested.trace_id, nested.span_id) == ("u", None)


def test_an_empty_store_lists_nothing_and_knows_no_session(store: Store) -> None:
    listing = list_sessions(store)
    assert listing.sessions == () and listing.total == 0
    with pytest.raises(UnknownSession):
        load_session(store, "nope")
    assert load_tool_set_page(store, "0" * 64) is None
    assert load_output(store, "nope", 0) is None
    assert list_outputs(store, "nope").total == 0


def test_odd_shapes_a_hand_written_transcript_can_take(store: Store) -> None:
    t = Transcript(store, "odd")
    t.user("first question")  # no system commit: the prompt is unknown
    t.tool_result("stray", "grep", "a result before any reply")
    t.assistant("", tool_calls=[ToolCall("c1", "grep", "{}"), ToolCall("c2", "read", "{not json")])
    t.tool_result("c1", "grep", "found", metadata={"summarized_from": "f" * 64})  # original not stored
    t.tool_result("zz", "grep", "answers no call of this turn")
    t.user("a follow-up that never got a reply")
    view = load_session(store, "odd")
    assert view.prompt == "" and view.status == "failed" and view.total_turns == 3
    first, reply_turn, unanswered_turn = view.turns
    assert first.reply is None and [r.content for r in first.unanswered] == ["a result before any reply"]
    assert [c.id for c in reply_turn.calls] == ["c1", "c2"]
    c1, c2 = reply_turn.calls
    assert c1.result is not None and c1.result.edits[0].diff[0].text == "original not found"
    assert c2.result is None and c2.arguments == "{not json"
    assert [r.content for r in reply_turn.unanswered] == ["answers no call of this turn"]
    assert unanswered_turn.reply is None and unanswered_turn.lead[0].content.startswith("a follow-up")
    summary = list_sessions(store).sessions[0]
    assert (summary.prompt, summary.turns, summary.status) == ("", 1, "failed")


def test_an_extraction_from_before_its_outcome_was_kept_reads_the_reply_header(store: Store) -> None:
    t = Transcript(store, "older")
    t.system("sys")
    arguments = '{"handle": "h-1", "extract": "errors"}'
    t.assistant("", tool_calls=[ToolCall("x1", "tool_output", arguments)])
    t.tool_result(
        "x1", "tool_output", "ABSTRACT FROM TOOL OUTPUT grep WITH HANDLE h-1, STRATEGY:truncate:\n\nhead"
    )
    t.assistant("", tool_calls=[ToolCall("x2", "tool_output", "{}")])
    t.tool_result("x2", "tool_output", "no header here")
    turns = load_session(store, "older").turns
    first = turns[0].calls[0].result
    assert first is not None and first.extraction is not None
    assert (first.extraction.strategy, first.extraction.mode, first.extraction.output_seq) == (
        "truncate",
        "auto",
        None,
    )
    second = turns[1].calls[0].result
    assert second is not None and second.extraction is not None
    assert (second.extraction.handle, second.extraction.strategy) == ("", "unknown")


def test_session_list_pages_and_counts_usage(store: Store) -> None:
    for index in range(5):
        t = Transcript(store, f"s{index}")
        t.system("You help.", metadata={"prompt": f"prompt-{index % 2}"})
        t.assistant("done", usage=Usage(input_tokens=10 * index, output_tokens=1))
    page = list_sessions(store, offset=1, limit=2)
    assert page.total == 5 and [s.session_id for s in page.sessions] == ["s3", "s2"]
    assert [(s.prompt, s.turns, s.tokens, s.status) for s in page.sessions] == [
        ("prompt-1", 1, 31, "finished"),
        ("prompt-0", 1, 21, "finished"),
    ]
    assert [s.session_id for s in list_sessions(store, query="PROMPT-1").sessions] == ["s3", "s1"]
    assert [s.session_id for s in list_sessions(store, query="s4").sessions] == ["s4"]


def test_a_long_listing_is_read_in_chunks(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    import weakprompt.inspector.sessions as sessions_module

    for index in range(5):
        t = Transcript(store, f"c{index}")
        t.system("You help.", metadata={"prompt": "p"})
        t.assistant("done", usage=Usage(input_tokens=index, output_tokens=0))
    whole = list_sessions(store, limit=100)
    monkeypatch.setattr(sessions_module, "_CHUNK", 2)
    assert list_sessions(store, limit=100) == whole
    assert [s.tokens for s in whole.sessions] == [4, 3, 2, 1, 0]


def test_paused_runs_need_their_table(store: Store) -> None:
    Transcript(store, "p").user("hi")
    probe = PausedRuns(table="not_there")
    with store.read() as conn:
        assert not probe.present(conn) and probe.paused(conn, ["p"]) == set()
        assert probe.paused(conn, []) == set()


@pytest.mark.parametrize("size", [0, 100, 3 * (1 << 20) + 17])
def test_payloads_stream_exactly_in_pieces(store: Store, size: int) -> None:
    data = os.urandom(size // 2) + b"a" * (size - size // 2)  # zlib for mostly repeated, raw otherwise
    outputs = ToolOutputStore(store, "big")
    record = outputs.store_result("c", "dump", "{}", data)
    check_payload(store, record)
    pieces = list(stream_payload(store, record))
    assert b"".join(pieces) == data
    assert all(len(p) <= 1 << 20 for p in pieces)
    with store.read() as conn:
        info = _blob_info(conn, record.stored_hash)
    # The portable path (SQL substr, no blob I/O), as other databases read it.
    import attrs

    portable = attrs.evolve(info, rowid=None)
    assert b"".join(_payload_pieces(store, portable)) == data


def test_a_missing_payload_is_damage(store: Store) -> None:
    record = ToolOutputStore(store, "m").store_result("c", "dump", "{}", "text")
    with store.write() as conn:
        conn.exec_driver_sql("DELETE FROM tool_outputs")
        conn.exec_driver_sql("DELETE FROM tool_output_blobs")
    with pytest.raises(DamagedOutput, match="missing from tool_output_blobs"):
        check_payload(store, record)


def test_a_payload_shorter_than_recorded_is_damage(store: Store) -> None:
    record = ToolOutputStore(store, "s").store_result("c", "dump", "{}", os.urandom(200))
    with store.write() as conn:
        conn.exec_driver_sql("UPDATE tool_output_blobs SET stored_bytes = stored_bytes + 3 * 1048576")
    with pytest.raises(DamagedOutput, match="ends before its recorded"):
        check_payload(store, record)


def test_paused_runs_table_without_a_condition(store: Store) -> None:
    Transcript(store, "p").user("hi")
    with store.write() as conn:
        conn.exec_driver_sql("CREATE TABLE runs_on_hold (run_session TEXT)")
        conn.exec_driver_sql("INSERT INTO runs_on_hold VALUES ('p'), ('p'), ('other')")
    probe = PausedRuns(table="runs_on_hold", session_column="run_session", where=None)
    with store.read() as conn:
        assert probe.paused(conn, ["p", "q"]) == {"p"}
    assert list_sessions(store, paused_runs=probe).sessions[0].status == "paused"


def test_unreadable_times_are_shown_as_stored() -> None:
    from weakprompt.inspector.app import _size, _when
    from weakprompt.inspector.outputs import _time
    from weakprompt.inspector.sessions import _sort_time

    assert _when("yesterday") == "yesterday" and _when("2026-01-02T03:04:05+00:00") == "2026-01-02 03:04:05"
    assert _sort_time("yesterday") == 0.0
    assert _time("yesterday").year == 1970
    assert [_size(n) for n in (5, 2048, 3 * 1024**2, 5 * 1024**4)] == ["5 B", "2.0 KB", "3.0 MB", "5120.0 GB"]


def test_the_package_names_what_it_has() -> None:
    import weakprompt.inspector as inspector

    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = inspector.nope


def test_the_inspectors_stored_output_view_is_the_transcripts_stored_output_ref() -> None:
    """The session page's commit holds the transcript's ``StoredOutputRef``; the old view's name warns."""
    from weakprompt.inspector import session_view
    from weakprompt.transcript.lazy import StoredOutputRef

    with pytest.warns(DeprecationWarning, match="StoredOutputView is deprecated.*StoredOutputRef"):
        old = session_view.StoredOutputView  # pyright: ignore[reportAttributeAccessIssue]
    assert old is StoredOutputRef
    assert "StoredOutputView" not in dir(session_view)
