"""Seed-000 phase 3: the tool_result hook and PendingToolResult."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from hooks_support import GREP_OUTPUT, start_call, summarizer, user_text
from weakprompt.clock import FakeClock
from weakprompt.errors import ConfigurationError
from weakprompt.messages import ToolCall
from weakprompt.store import Store
from weakprompt.transcript import (
    TOOL_SUMMARY_SYSTEM_PROMPT,
    CommitOperation,
    PendingToolResult,
    ToolResultHookError,
    ToolResultRejected,
    Transcript,
)


@pytest.fixture
def t() -> Iterator[Transcript]:
    with Store.open("sqlite://", clock=FakeClock()) as store:
        transcript = Transcript(store, "hooks")
        start_call(transcript, ToolCall("g1", "grep", '{"pattern": "main"}'))
        yield transcript


def test_hook_fires_on_tool_result(t: Transcript) -> None:
    seen: list[PendingToolResult] = []
    t.on("tool_result", seen.append)
    t.tool_result("g1", "grep", "src/app.py:10", metadata={"attempt": 2})
    [pending] = seen
    assert (pending.tool_call_id, pending.tool_name, pending.content) == ("g1", "grep", "src/app.py:10")
    assert pending.metadata == {"attempt": 2}
    assert pending.is_error is False
    assert pending.transcript is t
    assert pending.original_content is None


def test_hook_edit_result(t: Transcript) -> None:
    def handler(p: PendingToolResult) -> None:
        p.edit_result("src/app.py:10")
        p.approve()

    t.on("tool_result", handler)
    commit = t.tool_result("g1", "grep", GREP_OUTPUT)
    assert commit.content.content == "src/app.py:10"
    assert (commit.content.tool_call_id, commit.content.name) == ("g1", "grep")
    assert commit.operation is CommitOperation.APPEND
    assert t.compile().messages[-1].content == "src/app.py:10"
    # the tool's own output is kept, addressable by hash
    assert t.get_blob(str(commit.metadata["edited_from"])).content == GREP_OUTPUT
    assert "summarized_from" not in commit.metadata
    assert commit.message == "tool result: grep (edited)"


def test_hook_summarize(t: Transcript) -> None:
    model = summarizer()
    t.hooks.summarizer = model
    t.on("tool_result", lambda p: p.summarize(instructions="keep file:line only", target_tokens=20))
    commit = t.tool_result("g1", "grep", GREP_OUTPUT)
    [request] = model.requests
    assert request.context.messages[0].content == TOOL_SUMMARY_SYSTEM_PROMPT
    assert request.tools == () and request.tool_choice == "none"
    assert request.max_output_tokens == 64  # twice the goal, never below 64
    text = user_text(request)
    assert "Tool: grep" in text and "keep file:line only" in text and "about 20 tokens" in text
    assert GREP_OUTPUT in text
    assert commit.content.content == "app.py:10 defines main"
    assert commit.metadata["summarizer"] == "sum:tiny"
    assert commit.metadata["summary_usage"] == {
        "input_tokens": 50,
        "output_tokens": 7,
        "cached_input_tokens": 0,
        "model_calls": 1,
    }
    assert commit.message == "tool result: grep (summarized)"


def test_hook_summarize_keeps_original_content(t: Transcript) -> None:
    t.hooks.summarizer = summarizer()
    kept: list[tuple[str | None, int]] = []

    def handler(p: PendingToolResult) -> None:
        before = p.token_count
        assert p.summarize() is True
        assert p.token_count < before
        kept.append((p.original_content, p.token_count))

    t.on("tool_result", handler)
    t.tool_result("g1", "grep", GREP_OUTPUT)
    assert kept == [(GREP_OUTPUT, t.token_counter.count("app.py:10 defines main"))]


def test_hook_reject(t: Transcript) -> None:
    t.on("tool_result", lambda p: p.reject("secret output"))
    before = t.log()
    with pytest.raises(ToolResultRejected, match="secret output") as info:
        t.tool_result("g1", "grep", GREP_OUTPUT)
    assert t.log() == before
    assert (info.value.tool_call_id, info.value.tool_name, info.value.reason) == (
        "g1",
        "grep",
        "secret output",
    )
    assert info.value.triggered_by.startswith("hook:")


def test_hook_no_fire_on_edit(t: Transcript) -> None:
    first = t.tool_result("g1", "grep", GREP_OUTPUT)
    seen: list[PendingToolResult] = []
    t.on("tool_result", seen.append)
    edit = t.tool_result("g1", "grep", "short", edit=first.hash)
    assert seen == []
    assert edit.operation is CommitOperation.EDIT
    assert "triggered_by" not in edit.metadata


def test_hook_passthrough(t: Transcript) -> None:
    t.on("tool_result", lambda p: p.approve())
    commit = t.tool_result("g1", "grep", GREP_OUTPUT, metadata={"k": 1})
    assert commit.content.content == GREP_OUTPUT
    assert commit.metadata["k"] == 1
    assert str(commit.metadata["triggered_by"]).endswith("test_hook_passthrough.<locals>.<lambda>")
    assert commit.message == "tool result: grep"
    assert not {"summarized_from", "edited_from", "summary_usage"} & commit.metadata.keys()


def test_hook_carries_token_count(t: Transcript) -> None:
    counts: list[int] = []
    t.on("tool_result", lambda p: counts.append(p.token_count))
    t.tool_result("g1", "grep", GREP_OUTPUT)
    assert counts == [t.token_counter.count(GREP_OUTPUT)]


def test_no_hook_commits_directly(t: Transcript) -> None:
    commit = t.tool_result("g1", "grep", GREP_OUTPUT)
    assert commit.content.content == GREP_OUTPUT
    assert commit.metadata == {}
    assert t.hooks.handler("tool_result") is None


def test_handler_that_decides_nothing_approves(t: Transcript) -> None:
    statuses: list[PendingToolResult] = []
    t.on("tool_result", statuses.append)
    commit = t.tool_result("g1", "grep", "x")
    assert commit.content.content == "x"
    assert statuses[0].status == "approved"


def test_edit_without_approve_commits_the_edit(t: Transcript) -> None:
    t.on("tool_result", lambda p: p.edit_result("y"))
    assert t.tool_result("g1", "grep", "x").content.content == "y"


@pytest.mark.parametrize(
    ("first", "second"),
    [("approve", "approve"), ("approve", "reject"), ("reject", "approve"), ("reject", "reject")],
)
def test_deciding_twice_raises(t: Transcript, first: str, second: str) -> None:
    errors: list[str] = []

    def handler(p: PendingToolResult) -> None:
        getattr(p, first)()
        try:
            getattr(p, second)()
        except ToolResultHookError as exc:
            errors.append(str(exc))

    t.on("tool_result", handler)
    if first == "reject":
        with pytest.raises(ToolResultRejected):
            t.tool_result("g1", "grep", "x")
    else:
        t.tool_result("g1", "grep", "x")
    [message] = errors
    assert f"{second}() on the result of call 'g1' (grep)" in message
    assert "already approved" in message or "already rejected" in message


def test_changing_after_a_decision_raises(t: Transcript) -> None:
    t.hooks.summarizer = summarizer()
    failures: list[str] = []

    def handler(p: PendingToolResult) -> None:
        p.approve()
        for action in (lambda: p.edit_result("late"), p.summarize):
            try:
                action()
            except ToolResultHookError as exc:
                failures.append(str(exc).split(" on ")[0])

    t.on("tool_result", handler)
    commit = t.tool_result("g1", "grep", "x")
    assert failures == ["edit_result()", "summarize()"]
    assert commit.content.content == "x"


def test_edits_may_repeat_before_the_decision(t: Transcript) -> None:
    def handler(p: PendingToolResult) -> None:
        p.edit_result("one")
        p.edit_result("two")
        assert p.original_content == "x"

    t.on("tool_result", handler)
    commit = t.tool_result("g1", "grep", "x")
    assert commit.content.content == "two"
    assert t.get_blob(str(commit.metadata["edited_from"])).content == "x"


def test_edit_back_to_the_original_stores_no_provenance_blob(t: Transcript) -> None:
    def handler(p: PendingToolResult) -> None:
        p.edit_result("other")
        p.edit_result("x")

    t.on("tool_result", handler)
    commit = t.tool_result("g1", "grep", "x")
    assert "edited_from" not in commit.metadata
    assert commit.message == "tool result: grep"


def test_handler_that_raises_commits_the_original_and_reraises(t: Transcript) -> None:
    def handler(p: PendingToolResult) -> None:
        p.edit_result("half done")
        raise RuntimeError("handler bug")

    t.on("tool_result", handler)
    with pytest.raises(RuntimeError, match="handler bug") as info:
        t.tool_result("g1", "grep", GREP_OUTPUT)
    last = t.log()[-1]
    assert last.content.content == GREP_OUTPUT
    assert last.metadata["hook_error"] == "RuntimeError: handler bug"
    assert any(last.hash[:12] in note for note in info.value.__notes__)


def test_handler_that_rejects_then_raises_commits_nothing(t: Transcript) -> None:
    def handler(p: PendingToolResult) -> None:
        p.reject()
        raise RuntimeError("after reject")

    t.on("tool_result", handler)
    before = len(t.log())
    with pytest.raises(RuntimeError):
        t.tool_result("g1", "grep", "x")
    assert len(t.log()) == before


def test_results_committed_inside_a_handler_skip_the_hook(t: Transcript) -> None:
    calls: list[str] = []

    def handler(p: PendingToolResult) -> None:
        calls.append(p.tool_call_id)
        if p.tool_call_id == "g1":
            p.transcript.tool_result("side", "note", "written by the handler")

    t.on("tool_result", handler)
    t.tool_result("g1", "grep", "x")
    assert calls == ["g1"]
    assert [c.content.tool_call_id for c in t.log()[-2:]] == ["side", "g1"]
    t.tool_result("g2", "grep", "y")  # the guard is released afterwards
    assert calls == ["g1", "g2"]


def test_on_replaces_and_off_removes(t: Transcript) -> None:
    seen: list[str] = []

    def first(p: PendingToolResult) -> None:
        seen.append("first")

    def second(p: PendingToolResult) -> None:
        seen.append("second")

    t.on("tool_result", first)
    t.on("tool_result", second)
    t.tool_result("a", "grep", "x")
    assert seen == ["second"]
    assert t.off("tool_result", first) is False
    assert t.off("tool_result", second) is True
    assert t.off("tool_result") is False
    t.tool_result("b", "grep", "x")
    assert seen == ["second"]
    t.on("tool_result", first)
    assert t.off("tool_result") is True


def test_bad_registrations_fail_clearly(t: Transcript) -> None:
    with pytest.raises(ConfigurationError, match="unknown hook event 'commit'"):
        t.on("commit", lambda p: None)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="must be callable"):
        t.on("tool_result", "not a function")  # type: ignore[arg-type]


def test_bad_handler_arguments_fail_clearly(t: Transcript) -> None:
    messages: list[str] = []

    def handler(p: PendingToolResult) -> None:
        for bad in (lambda: p.edit_result(3), lambda: p.reject(reason=4)):  # type: ignore[arg-type]
            try:
                bad()
            except ToolResultHookError as exc:
                messages.append(str(exc))

    t.on("tool_result", handler)
    t.tool_result("g1", "grep", "x")
    assert messages == [
        "edit_result() takes the new text as a string, got int",
        "reject(reason=) takes a string, got int",
    ]


def test_handler_may_name_its_trigger(t: Transcript) -> None:
    def handler(p: PendingToolResult) -> None:
        p.triggered_by = "policy:trim-greps"
        p.edit_result("short")

    t.on("tool_result", handler)
    assert t.tool_result("g1", "grep", "long").metadata["triggered_by"] == "policy:trim-greps"


def test_error_results_reach_the_hook_and_keep_their_flag(t: Transcript) -> None:
    flags: list[bool] = []

    def handler(p: PendingToolResult) -> None:
        flags.append(p.is_error)
        p.edit_result("Error: shortened")

    t.on("tool_result", handler)
    commit = t.tool_result("g1", "grep", "Error: a very long traceback", is_error=True)
    assert flags == [True]
    assert commit.content.is_error is True
    assert t.get_blob(str(commit.metadata["edited_from"])).is_error is True


def test_tools_argument_passes_through_the_hook(t: Transcript) -> None:
    t.on("tool_result", lambda p: p.edit_result("short"))
    schema = {"name": "grep", "description": "search", "parameters": {"type": "object", "properties": {}}}
    commit = t.tool_result("g1", "grep", "long", tools=[schema])
    assert [s["name"] for s in t.get_commit_tools(commit.hash)] == ["grep"]


def test_pending_repr_names_the_call(t: Transcript) -> None:
    reprs: list[str] = []
    t.on("tool_result", lambda p: reprs.append(repr(p)))
    t.tool_result("g1", "grep", "x")
    assert reprs == [
        "PendingToolResult(tool_call_id='g1', tool_name='grep', token_count=1, status='pending')"
    ]
