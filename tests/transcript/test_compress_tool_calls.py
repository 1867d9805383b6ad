"""Seed-000 phase 5: compress_tool_calls() over committed results."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from hooks_support import GREP_OUTPUT, READ_OUTPUT, agent_session, summarizer, user_text
from weakprompt.adapters.testing import FunctionAdapter
from weakprompt.clock import FakeClock
from weakprompt.errors import AdapterError, ConfigurationError, TranscriptError
from weakprompt.events import EventBus, ToolResultSummarized
from weakprompt.messages import AssistantTurn, Usage
from weakprompt.runtime import ModelRequest
from weakprompt.store import Store
from weakprompt.transcript import CommitInfo, CommitOperation, ToolTurn, Transcript

SCHEMA = {"name": "grep", "description": "search", "parameters": {"type": "object", "properties": {}}}


@pytest.fixture
def t() -> Iterator[Transcript]:
    with Store.open("sqlite://", clock=FakeClock()) as store:
        yield Transcript(store, "compress")


@pytest.fixture
def c(t: Transcript) -> dict[str, CommitInfo]:
    t.set_tools([SCHEMA])
    return agent_session(t)


def numbered() -> FunctionAdapter:
    """Answers 'summary of <tool> #n' so each edit is recognisable."""
    count = 0

    def fn(request: ModelRequest) -> str:
        nonlocal count
        count += 1
        tool = user_text(request).split("\n", 1)[0].removeprefix("Tool: ")
        return f"summary of {tool} #{count}"

    return FunctionAdapter(fn, name="sum", model="tiny")


def test_compress_uses_find_tool_turns(
    t: Transcript, c: dict[str, CommitInfo], monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[str | None] = []
    real = t.find_tool_turns

    def spy(name: str | None = None) -> list[ToolTurn]:
        asked.append(name)
        return real(name)

    monkeypatch.setattr(t, "find_tool_turns", spy)
    report = t.compress_tool_calls(summarizer=numbered())
    assert asked == [None]
    assert [e.edit_target for e in report.edits] == [c["grep1"].hash, c["grep2"].hash, c["read1"].hash]
    assert all(e.operation is CommitOperation.EDIT for e in report.edits)
    assert report.skipped == ()


def test_compress_name_filter(t: Transcript, c: dict[str, CommitInfo]) -> None:
    report = t.compress_tool_calls(name="grep", instructions="paths only", summarizer=numbered())
    assert [e.edit_target for e in report.edits] == [c["grep1"].hash, c["grep2"].hash]
    compiled = [m.content for m in t.compile().messages]
    assert "summary of grep #1" in compiled and "summary of grep #2" in compiled
    assert READ_OUTPUT * 20 in compiled  # the read result in the same turn is left alone


def test_compress_explicit_commits(t: Transcript, c: dict[str, CommitInfo]) -> None:
    model = numbered()
    report = t.compress_tool_calls([c["read1"].hash, c["grep1"]], summarizer=model)
    assert [e.edit_target for e in report.edits] == [c["grep1"].hash, c["read1"].hash]  # conversation order
    assert len(model.requests) == 2


def test_compress_explicit_call_commit_means_its_results(t: Transcript, c: dict[str, CommitInfo]) -> None:
    report = t.compress_tool_calls([c["call2"].hash], summarizer=numbered())
    assert [e.edit_target for e in report.edits] == [c["grep2"].hash, c["read1"].hash]
    report = t.compress_tool_calls(t.find_tool_turns()[0].all_hashes, name="read", summarizer=numbered())
    assert report.edits == ()


def test_compress_keeps_final_answer(t: Transcript, c: dict[str, CommitInfo]) -> None:
    t.compress_tool_calls(summarizer=numbered())
    view = t.compile_view()
    assert view.commits[-1].hash == c["answer"].hash
    assert view.context.messages[-1].content == "main is defined in src/app.py line 10."
    assert [m.role for m in view.context.messages] == [m.role for m in t.compile_view().context.messages]
    with pytest.raises(TranscriptError, match="neither a tool result nor a tool-calling assistant commit"):
        t.compress_tool_calls([c["answer"].hash], summarizer=numbered())


def test_compress_tool_call_id_and_name_survive(t: Transcript, c: dict[str, CommitInfo]) -> None:
    report = t.compress_tool_calls(summarizer=numbered())
    for result in report.compressed:
        before, after = result.before.content, result.after.content
        assert (after.tool_call_id, after.name, after.is_error) == (
            before.tool_call_id,
            before.name,
            before.is_error,
        )
        assert after.content.startswith(f"summary of {before.name}")
    params = t.compile().to_openai_params()
    messages = params["messages"]
    assert isinstance(messages, list)
    ids = [m.get("tool_call_id") for m in messages if isinstance(m, dict) and m.get("role") == "tool"]
    assert ids == ["g1", "g2", "r1"]
    # both versions stay in the log
    contents = [x.content.content for x in t.log()]
    assert GREP_OUTPUT in contents and "summary of grep #1" in contents


def test_compress_provenance_and_report(t: Transcript, c: dict[str, CommitInfo]) -> None:
    report = t.compress_tool_calls(summarizer=summarizer("tiny"))
    first = report.compressed[0]
    assert first.after.metadata["triggered_by"] == "compress_tool_calls"
    assert first.after.metadata["summarized_from"] == c["grep1"].blob_hash
    assert t.get_blob(str(first.after.metadata["summarized_from"])).content == GREP_OUTPUT
    assert first.after.metadata["summarizer"] == "sum:tiny"
    assert first.after.message == "compressed tool result: grep"
    assert report.usage == Usage(input_tokens=150, output_tokens=21, model_calls=3)
    assert (
        report.tokens_saved == sum(r.before.token_count - r.after.token_count for r in report.compressed) > 0
    )
    assert t.compile().token_count < sum(x.token_count for x in c.values())


def test_compress_an_already_edited_result(t: Transcript, c: dict[str, CommitInfo]) -> None:
    trimmed = t.tool_result(
        "g1", "grep", "src/app.py:10:def main():\n" * 5, edit=c["grep1"].hash, metadata={"keep": "me"}
    )
    report = t.compress_tool_calls([c["grep1"].hash], summarizer=summarizer("tiny"))
    [edit] = report.edits
    assert edit.edit_target == c["grep1"].hash  # edits are recorded against the original position
    assert edit.metadata["summarized_from"] == trimmed.blob_hash  # what was summarized: the trimmed text
    assert edit.metadata["keep"] == "me"  # unrelated metadata of the replaced version survives
    assert len(t.find_tool_results(name="grep")) == 2


def test_compress_does_not_change_the_linked_tools(t: Transcript, c: dict[str, CommitInfo]) -> None:
    t.set_tools(None)
    before = t.tool_set_changes()
    report = t.compress_tool_calls(summarizer=numbered())
    assert t.tool_set_changes() == before
    assert all(t.get_commit_tools(e.hash) == [] for e in report.edits)
    assert t.compile().tools == (SCHEMA,)


def test_compress_failures_leave_results_alone(t: Transcript, c: dict[str, CommitInfo]) -> None:
    def flaky(request: ModelRequest) -> AssistantTurn | str:
        if "Tool: read" in user_text(request):
            raise AdapterError("read summaries are broken")
        return "short"

    dispatcher = EventBus()
    events: list[ToolResultSummarized] = []
    dispatcher.subscribe(ToolResultSummarized, events.append)
    t.hooks.dispatcher = dispatcher
    report = t.compress_tool_calls(summarizer=summarizer(flaky))
    assert [e.edit_target for e in report.edits] == [c["grep1"].hash, c["grep2"].hash]
    [skip] = report.skipped
    assert skip.commit.hash == c["read1"].hash and "read summaries are broken" in skip.reason
    assert t.compile().messages[-2].content == READ_OUTPUT * 20
    assert [e.error is None for e in events] == [True, True, False]
    assert events[2].commit_hash == c["read1"].hash
    assert events[0].commit_hash == report.edits[0].hash
    assert events[0].triggered_by == "compress_tool_calls"


def test_compress_skips_empty_results(t: Transcript) -> None:
    from hooks_support import start_call
    from weakprompt.messages import ToolCall

    start_call(t, ToolCall("e", "grep", "{}"))
    empty = t.tool_result("e", "grep", "  ")
    model = numbered()
    report = t.compress_tool_calls(summarizer=model)
    assert [(s.commit.hash, s.reason) for s in report.skipped] == [(empty.hash, "the result is empty")]
    assert model.requests == ()


def test_compress_needs_a_summarizer_up_front(t: Transcript, c: dict[str, CommitInfo]) -> None:
    head = t.head
    with pytest.raises(ConfigurationError, match="no summarizer"):
        t.compress_tool_calls()
    assert t.head == head


def test_compress_uses_the_transcript_summarizer(t: Transcript, c: dict[str, CommitInfo]) -> None:
    t.hooks.summarizer = summarizer("via hooks")
    report = t.compress_tool_calls(name="read")
    assert report.edits[0].content.content == "via hooks"


def test_compress_does_not_fire_the_hook(t: Transcript, c: dict[str, CommitInfo]) -> None:
    seen: list[object] = []
    t.on("tool_result", seen.append)
    t.compress_tool_calls(summarizer=numbered())
    assert seen == []


def test_compress_with_nothing_to_do(t: Transcript) -> None:
    t.user("hi")
    t.assistant("hello")
    report = t.compress_tool_calls(summarizer=numbered())
    assert (report.compressed, report.skipped, report.usage, report.tokens_saved) == ((), (), Usage(), 0)


def test_compress_unknown_hash_fails_before_any_change(t: Transcript, c: dict[str, CommitInfo]) -> None:
    head = t.head
    with pytest.raises(TranscriptError, match="'nope' is neither"):
        t.compress_tool_calls([c["grep1"].hash, "nope"], summarizer=numbered())
    assert t.head == head


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [({"target_tokens": 0}, ValueError), ({"instructions": ["paths"]}, ConfigurationError)],
)
def test_compress_bad_arguments_fail_before_any_change(
    t: Transcript, c: dict[str, CommitInfo], kwargs: dict[str, object], error: type[Exception]
) -> None:
    head = t.head
    with pytest.raises(error):
        t.compress_tool_calls(summarizer=numbered(), **kwargs)  # type: ignore[arg-type]
    assert t.head == head


def test_compress_leaves_handle_messages_alone(t: Transcript) -> None:
    from hooks_support import start_call
    from weakprompt.messages import ToolCall

    start_call(t, ToolCall("big", "fetch", "{}"))
    handle = t.tool_result(
        "big",
        "fetch",
        "Tool output is too large ... tool_output(handle = ...)" * 5,
        metadata={"stored_output": {"oversized": True, "handle": "h1"}},
    )
    model = numbered()
    report = t.compress_tool_calls(summarizer=model)
    [skip] = report.skipped
    assert skip.commit.hash == handle.hash and "handle message" in skip.reason
    assert model.requests == ()
