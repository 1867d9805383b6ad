"""read and grep over one stored output, the regex time limit, and the read-grep sub-agent."""

from __future__ import annotations

import re
import subprocess
from datetime import datetime, timedelta

import pytest

from extraction_support import adapter, config, grep_then_read_agent, last_message, log_lines, source, wrapped
from weakprompt.adapters.testing import tool_call, tool_call_turn
from weakprompt.clock import FakeClock
from weakprompt.deadlines import Deadline
from weakprompt.errors import DeadlineExceededError, RateLimitError
from weakprompt.messages import AssistantTurn
from weakprompt.runtime import ModelRequest, ToolDispatcher, evaluate
from weakprompt.runtime.results.extraction import ExtractionConfig, Extractor, decode_text, regex_guard
from weakprompt.runtime.results.extraction.regex_guard import (
    MAX_PATTERN_CHARS,
    PatternError,
    compile_pattern,
    search_lines,
)
from weakprompt.runtime.results.extraction.stored_view import StoredOutputView, read_grep_tools
from weakprompt.session import Session

HANDLE = "h-1"


def dispatcher(
    data: bytes, *, deadline: Deadline | None = None, session: Session | None = None, **changes: object
) -> ToolDispatcher:
    view = StoredOutputView(source(data, handle=HANDLE), decode_text(data), config(**changes))
    return ToolDispatcher(read_grep_tools(view), session=session or Session(), deadline=deadline)


def call(tools: ToolDispatcher, name: str, **arguments: object) -> tuple[bool, str]:
    execution = tools.execute(tool_call(name, {"handle": HANDLE, **arguments}))  # type: ignore[dict-item]
    return execution.success, execution.message


# -- read ------------------------------------------------------------------------------------


def test_read_shows_numbered_lines() -> None:
    ok, text = call(dispatcher(log_lines(50)), "read", offset=10, limit=3)
    assert ok
    lines = text.splitlines()
    assert lines[0] == "Lines 10-12 of 50:"
    assert lines[1].startswith("10: ") and lines[1].endswith("processed batch 10")
    assert lines[3].startswith("12: ")
    assert len(lines) == 4


def test_read_defaults_start_at_line_one_and_mark_the_end() -> None:
    ok, text = call(dispatcher(b"first\nsecond\n"), "read")
    assert ok
    assert text == "Lines 1-2 of 2:\n1: first\n2: second\nThis is the end of the output."


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (
            {"offset": 51},
            "offset 51 is past the end: the output has 50 lines, so use an offset from 1 to 50.",
        ),
        ({"offset": 10_000}, "past the end"),
        ({"offset": 0}, "offset 0 is not a line number: lines are numbered from 1 to 50."),
        ({"offset": -3}, "not a line number"),
        ({"limit": 0}, "limit 0 shows nothing"),
    ],
)
def test_read_bad_positions_are_failed_results_the_model_can_read(
    arguments: dict[str, int], message: str
) -> None:
    ok, text = call(dispatcher(log_lines(50)), "read", **arguments)
    assert not ok
    assert message in text


def test_read_clamps_the_limit_and_says_how_to_continue() -> None:
    ok, text = call(dispatcher(log_lines(50), read_max_lines=5), "read", offset=1, limit=30)
    assert ok
    assert text.splitlines()[0] == "Lines 1-5 of 50:"
    assert text.endswith("One read shows at most 5 lines; continue with offset=6.")


def test_read_stops_at_the_reply_cap() -> None:
    data = ("x" * 900 + "\n").encode() * 100
    ok, text = call(dispatcher(data, tool_reply_max_bytes=4000), "read", offset=1, limit=100)
    assert ok
    assert len(text.encode()) <= 4000
    stopped = re.search(r"Stopped after line (\d+) .* continue with offset=(\d+)\.", text)
    assert stopped is not None and int(stopped.group(2)) == int(stopped.group(1)) + 1


def test_read_cuts_very_long_lines() -> None:
    ok, text = call(dispatcher(b"y" * 50_000, line_max_chars=100), "read")
    assert ok
    assert "1: " + "y" * 100 + " [... 49900 more characters]" in text


def test_a_first_line_larger_than_the_reply_is_cut_to_fit() -> None:
    ok, text = call(dispatcher(("é" * 3000).encode(), line_max_chars=3000, tool_reply_max_bytes=1000), "read")
    assert ok
    assert len(text.encode()) <= 1000
    assert text.splitlines()[1].startswith("1: éé")


def test_read_of_an_empty_output() -> None:
    ok, text = call(dispatcher(b""), "read")
    assert ok and "empty" in text


def test_another_handle_is_refused_with_the_right_one_named() -> None:
    tools = dispatcher(log_lines(5))
    for name, extra in (("read", {}), ("grep", {"pattern": "x"})):
        execution = tools.execute(tool_call(name, {"handle": "other", **extra}))
        assert not execution.success
        assert "'other'" in execution.message and "'h-1'" in execution.message


def test_non_utf8_bytes_are_shown_with_replacement_characters() -> None:
    ok, text = call(dispatcher(b"good line\nbad \xff\xfe line\n"), "read")
    assert ok
    assert "2: bad \ufffd\ufffd line" in text


# -- grep ------------------------------------------------------------------------------------


def test_grep_lists_matching_lines_with_numbers() -> None:
    ok, text = call(dispatcher(log_lines(200, needle_at=120)), "grep", pattern=r"NEEDLE secret=\d+")
    assert ok
    assert text.splitlines() == [
        "1 of 200 lines match 'NEEDLE secret=\\\\d+' (match lines N:, context N-):",
        "120: 2026-01-01T00:00:00 ERROR NEEDLE secret=4711",
    ]


def test_grep_context_lines_are_merged_and_groups_separated() -> None:
    data = b"\n".join(f"{'hit' if i in (5, 7, 20) else 'row'} {i}".encode() for i in range(1, 31))
    ok, text = call(dispatcher(data), "grep", pattern="^hit", context=2)
    assert ok
    lines = text.splitlines()[1:]
    assert lines == [
        "3- row 3",
        "4- row 4",
        "5: hit 5",
        "6- row 6",
        "7: hit 7",
        "8- row 8",
        "9- row 9",
        "--",
        "18- row 18",
        "19- row 19",
        "20: hit 20",
        "21- row 21",
        "22- row 22",
    ]


def test_grep_caps_matches_and_context() -> None:
    ok, text = call(
        dispatcher(log_lines(500), grep_max_matches=3, grep_max_context=0), "grep", pattern="INFO", context=5
    )
    assert ok
    lines = text.splitlines()
    assert lines[0].startswith("500 of 500 lines match 'INFO', showing the first 3")
    assert [line.split(":")[0] for line in lines[1:4]] == ["1", "2", "3"]
    assert lines[-1] == "Narrow the pattern to see the remaining matches."


def test_grep_reply_stays_under_its_cap() -> None:
    ok, text = call(
        dispatcher(log_lines(2000), grep_max_matches=2000, tool_reply_max_bytes=2000), "grep", pattern="batch"
    )
    assert ok
    assert len(text.encode()) <= 2000
    assert "Stopped after line" in text


def test_grep_shows_a_window_around_a_match_in_a_long_line() -> None:
    data = b"a" * 30_000 + b"NEEDLE" + b"b" * 30_000
    ok, text = call(dispatcher(data, line_max_chars=200), "grep", pattern="NEEDLE")
    assert ok
    shown = text.splitlines()[1]
    assert shown.startswith("1: [... ") and "NEEDLE" in shown and shown.endswith("more characters]")
    assert len(shown) < 400


def test_grep_without_matches_says_what_was_searched() -> None:
    ok, text = call(dispatcher(log_lines(30)), "grep", pattern="nothing-like-this")
    assert ok
    assert "No line matches 'nothing-like-this' (30 lines searched)" in text


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        ("(unclosed", "not a valid regular expression: missing ), unterminated subpattern at position 0"),
        ("[z-a]", "bad character range"),
        ("", "the pattern is empty"),
        ("a" * (MAX_PATTERN_CHARS + 1), f"the limit is {MAX_PATTERN_CHARS}"),
    ],
)
def test_invalid_patterns_are_failed_results(pattern: str, message: str) -> None:
    ok, text = call(dispatcher(log_lines(5)), "grep", pattern=pattern)
    assert not ok
    assert message in text


def test_negative_context_is_refused() -> None:
    ok, text = call(dispatcher(log_lines(5)), "grep", pattern="x", context=-1)
    assert not ok and "context -1 is negative" in text


def test_a_runaway_pattern_is_stopped_in_the_child_process() -> None:
    data = ("a" * 40 + "!\n").encode() * 3
    ok, text = call(dispatcher(data, grep_isolate=True, grep_timeout_seconds=1.0), "grep", pattern="^(a+)+$")
    assert not ok
    assert "ran longer than 1 s and was stopped" in text
    assert "simpler pattern" in text


def test_the_child_process_finds_the_same_lines_as_in_process() -> None:
    lines = [*decode_text(log_lines(300, needle_at=150)).splitlines(), "", "ünïcode NEEDLE ✓"]
    for pattern in ("NEEDLE", r"batch \d+5$", "(?i)needle", "^$"):
        isolated = search_lines(pattern, lines, max_hits=5, timeout=10)
        local = search_lines(pattern, lines, max_hits=5, timeout=10, isolate=False)
        assert isolated == local
    assert search_lines("^$", [], max_hits=5, timeout=10).total == 0


def test_in_process_search_checks_the_clock_between_lines() -> None:
    clock = FakeClock()

    class Ticking:
        def now(self) -> datetime:
            return clock.now()

        def monotonic(self) -> float:
            clock.advance(1)
            return clock.monotonic()

    with pytest.raises(regex_guard.SearchTimeout, match="stopped at line 3"):
        search_lines("x", ["a"] * 10, max_hits=5, timeout=2.5, isolate=False, clock=Ticking())


def test_search_falls_back_in_process_when_no_child_can_start(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise OSError("no processes here")

    monkeypatch.setattr(subprocess, "run", refuse)
    found = search_lines("b", ["a", "b", "cb"], max_hits=1, timeout=5)
    assert found.total == 2 and [hit.line for hit in found.hits] == [1]


def test_a_broken_child_process_is_a_failed_result(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: object, **kwargs: object) -> subprocess.CompletedProcess[bytes]:
        return subprocess.CompletedProcess(
            args=[], returncode=1, stdout=b"", stderr=b"Traceback\nMemoryError\n"
        )

    monkeypatch.setattr(subprocess, "run", broken)
    ok, text = call(dispatcher(log_lines(5), grep_isolate=True), "grep", pattern="x")
    assert not ok and "the search process failed: MemoryError" in text


def test_grep_time_limit_never_exceeds_the_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[float] = []

    def spy(pattern: str, lines: object, **kwargs: float) -> object:
        seen.append(kwargs["timeout"])
        raise regex_guard.SearchTimeout("too slow")

    monkeypatch.setattr("weakprompt.runtime.results.extraction.stored_view.search_lines", spy)
    clock = FakeClock()
    deadline = Deadline(clock.now() + timedelta(seconds=0.5), clock=clock)
    ok, _ = call(
        dispatcher(log_lines(5), deadline=deadline, session=Session(clock=clock)), "grep", pattern="x"
    )
    assert not ok
    assert seen == [0.5]


def test_compile_pattern_reports_overflowing_repeats() -> None:
    with pytest.raises(PatternError, match=r"cannot be compiled|not a valid"):
        compile_pattern("a{99999999999999999999}")


# -- the read-grep strategy ------------------------------------------------------------------


def test_read_grep_finds_a_needle_with_grep_then_read() -> None:
    # (not credential-shaped: plain evaluate redacts the sub-agent's read and grep replies by default)
    data = log_lines(5000, needle_at=4321, needle="NEEDLE code=4711")
    model = adapter(grep_then_read_agent())
    result = Extractor(model, run_agent=evaluate, config=config()).extract(
        source(data), "find the code in the ERROR line"
    )

    assert result.strategy_used == "read-grep"
    assert result.fallback_reason is None
    assert result.text == "Found it at 4321: 2026-01-01T00:00:00 ERROR NEEDLE code=4711"
    assert result.model_calls == 3
    first = model.requests[0]
    assert {tool.name for tool in first.tools} == {"read", "grep"}
    system = first.context.messages[0].content
    assert "handle: h-1" in system and "`fetch_logs`" in system and '{"service": "api"}' in system
    assert "find the code in the ERROR line" in system
    assert first.max_output_tokens == ExtractionConfig().max_output_tokens


def test_read_grep_nothing_found_is_an_answer() -> None:
    model = adapter(grep_then_read_agent(pattern="no-such-thing"))
    result = Extractor(model, run_agent=evaluate, config=config()).extract(
        source(log_lines(3000)), "q", mode="read-grep"
    )
    assert result.strategy_used == "read-grep"
    assert result.text.startswith("NO RELEVANT DATA FOUND")


def test_a_sub_agent_that_never_answers_falls_back_to_truncate() -> None:
    def forever(request: ModelRequest) -> AssistantTurn:
        return tool_call_turn(tool_call("grep", {"handle": "h-1", "pattern": "INFO"}))

    model = adapter(forever)
    result = Extractor(model, run_agent=evaluate, config=config(read_grep_max_turns=3)).extract(
        source(log_lines(3000)), "q", mode="read-grep"
    )
    assert result.strategy_used == "truncate"
    assert (
        result.fallback_reason == "read-grep failed: the sub-agent made 3 model calls without a final answer"
    )
    assert result.model_calls == 3
    assert "WARNING: this is not the whole output." in result.text


def test_without_a_sub_agent_runner_read_grep_falls_back_and_says_how_to_fix_it() -> None:
    # The pipeline never imports the loop: the loop passes itself in as run_agent.
    model = adapter(grep_then_read_agent())
    result = Extractor(model, config=config()).extract(source(log_lines(3000)), "q", mode="read-grep")
    assert result.strategy_used == "truncate"
    assert result.fallback_reason == (
        "read-grep failed: no sub-agent runner: build the Extractor with "
        "run_agent=weakprompt.runtime.evaluate"
    )
    assert result.model_calls == 0 and model.requests == ()


def test_an_empty_final_reply_is_reported_as_such() -> None:
    result = Extractor(adapter(lambda r: "  "), run_agent=evaluate, config=config()).extract(
        source(log_lines(3000)), "q", mode="read-grep"
    )
    assert result.fallback_reason is not None and result.fallback_reason.endswith("(an empty reply)")


def test_a_sub_agent_final_reply_without_wrapper_falls_back() -> None:
    result = Extractor(adapter(lambda r: "The secret is 4711."), run_agent=evaluate, config=config()).extract(
        source(log_lines(3000)), "q", mode="read-grep"
    )
    assert result.strategy_used == "truncate"
    assert result.fallback_reason is not None
    assert "final reply had no" in result.fallback_reason and "The secret is 4711." in result.fallback_reason


def test_a_sub_agent_model_error_falls_back() -> None:
    def fail(request: ModelRequest) -> str:
        raise RateLimitError("try later", provider="test")

    result = Extractor(adapter(fail), run_agent=evaluate, config=config()).extract(
        source(log_lines(3000)), "q", mode="read-grep"
    )
    assert (
        result.fallback_reason
        == "read-grep failed: the sub-agent's model call failed: RateLimitError: try later"
    )


def test_the_sub_agent_recovers_from_its_own_tool_mistakes() -> None:
    def clumsy(request: ModelRequest) -> AssistantTurn | str:
        last = last_message(request)
        if last.role == "user":
            return tool_call_turn(tool_call("grep", {"handle": "h-1", "pattern": "(broken"}))
        if last.role == "tool" and "not a valid regular expression" in last.content:
            return tool_call_turn(tool_call("read", {"handle": "h-1", "offset": 99999}))
        assert last.is_error and "past the end" in last.content
        return wrapped(request, "gave up politely")

    result = Extractor(adapter(clumsy), run_agent=evaluate, config=config()).extract(
        source(log_lines(3000)), "q", mode="read-grep"
    )
    assert result.text == "gave up politely"
    assert result.strategy_used == "read-grep"


def test_the_sub_agent_respects_the_deadline() -> None:
    clock = FakeClock()
    deadline = Deadline(clock.now() + timedelta(seconds=5), clock=clock)

    def slow(request: ModelRequest) -> AssistantTurn:
        clock.advance(10)
        return tool_call_turn(tool_call("grep", {"handle": "h-1", "pattern": "x"}))

    with pytest.raises(DeadlineExceededError):
        Extractor(adapter(slow), run_agent=evaluate, config=config(), clock=clock).extract(
            source(log_lines(3000)), "q", mode="read-grep", deadline=deadline
        )
