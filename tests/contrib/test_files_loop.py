"""The files section inside evaluate(): rollback through snapshots, approval, large reads behind a handle."""

from __future__ import annotations

import pytest

from weakprompt.adapters.testing import ScriptedAdapter, text_turn, tool_call, tool_call_turn
from weakprompt.contrib.files import FilesSection, WriteFile, write_file
from weakprompt.events import ToolResultStored
from weakprompt.prompt import MarkdownSection, Prompt, PromptTemplate
from weakprompt.resources import Filesystem, InMemoryFilesystem, ResourceRegistry
from weakprompt.runtime import Approve, evaluate, resume_sync
from weakprompt.runtime.results import ToolOutputStore
from weakprompt.session import Session
from weakprompt.store import Store
from weakprompt.tools import AnyTool, ToolContext, ToolResult, tool
from weakprompt.transcript import Transcript


class ReportFailed(RuntimeError):
    pass


@tool(description="Write the report file, then check it (the check fails).")
def write_report(*, context: ToolContext) -> ToolResult[str]:
    fs = context.filesystem
    assert fs is not None
    write_file(fs, WriteFile(path="report.md", content="half-done\n"))
    fs.write_text("notes.md", "clobbered\n")
    raise ReportFailed("the report did not validate")


@tool(description="Edit the notes, then report failure.")
def edit_then_refuse(*, context: ToolContext) -> ToolResult[str]:
    fs = context.filesystem
    assert fs is not None
    fs.write_text("notes.md", "changed\n")
    return ToolResult.error("changed my mind")


def _prompt(section: FilesSection, *tools: AnyTool) -> Prompt[None]:
    template: PromptTemplate[None] = PromptTemplate(
        ns="tests/files",
        key="loop",
        sections=[
            MarkdownSection(title="Task", key="task", template="Work on the files.", tools=tools),
            section,
        ],
    )
    return Prompt(template)


def test_handler_failing_after_writing_leaves_the_filesystem_as_it_was() -> None:
    fs = InMemoryFilesystem({"notes.md": "original\n"})
    adapter = ScriptedAdapter(
        [
            tool_call_turn(tool_call("write_report", {}, id="c1")),
            tool_call_turn(tool_call("edit_then_refuse", {}, id="c2")),
            tool_call_turn(
                tool_call(
                    "edit_file", {"path": "notes.md", "old_text": "original", "new_text": "kept"}, id="c3"
                )
            ),
            text_turn("done"),
        ]
    )
    response = evaluate(
        _prompt(
            FilesSection(writable=True, require_approval_for_writes=False), write_report, edit_then_refuse
        ),
        adapter=adapter,
        session=Session(),
        resources=ResourceRegistry({Filesystem: fs}),
    )
    assert [e.success for e in response.tool_executions] == [False, False, True]
    # The failed calls' writes were rolled back; the successful edit stays.
    assert not fs.exists("report.md")
    assert fs.read_text("notes.md") == "kept\n"
    assert fs.list_dir() == ("notes.md",)


def test_read_only_section_offers_no_writing_tools_in_the_loop() -> None:
    fs = InMemoryFilesystem({"a.txt": "hello\n"})
    adapter = ScriptedAdapter(
        [tool_call_turn(tool_call("write_file", {"path": "a.txt", "content": "x"}, id="c1")), text_turn("ok")]
    )
    response = evaluate(
        _prompt(FilesSection()),
        adapter=adapter,
        session=Session(),
        resources=ResourceRegistry({Filesystem: fs}),
    )
    offered = [t.name for t in adapter.requests[0].tools]
    assert offered == ["list_files", "read_file", "glob_files", "grep_files"]
    assert not response.tool_executions[0].success
    assert fs.read_text("a.txt") == "hello\n"


def test_a_write_waits_for_approval_by_default_and_runs_once_approved() -> None:
    fs = InMemoryFilesystem({"a.txt": "hello\n"})
    resources = ResourceRegistry({Filesystem: fs})
    prompt = _prompt(FilesSection(writable=True))
    adapter = ScriptedAdapter(
        [
            tool_call_turn(tool_call("write_file", {"path": "a.txt", "content": "bye\n"}, id="c1")),
            text_turn("ok"),
        ]
    )
    with Store.open("sqlite://") as store:
        response = evaluate(
            prompt, adapter=adapter, session=Session(session_id="w"), store=store, resources=resources
        )
        assert response.paused is not None
        [waiting] = response.paused.pending
        assert (waiting.call_id, waiting.tool) == ("c1", "write_file")
        assert fs.read_text("a.txt") == "hello\n"
        approval = [Approve(waiting.call_id, waiting.token)]
        done = resume_sync(store, "w", approval, prompt=prompt, adapter=adapter, resources=resources)
    assert done.text == "ok"
    assert fs.read_text("a.txt") == "bye\n"


@pytest.fixture
def transcript() -> Transcript:
    return Transcript(Store.open("sqlite://"), "s1")


def test_a_large_read_is_stored_behind_a_handle(transcript: Transcript) -> None:
    big = "".join(f"line {n}: {'lorem ipsum ' * 4}\n" for n in range(1, 801))  # about 50 KB
    fs = InMemoryFilesystem({"big.log": big, "small.txt": "tiny\n"})
    session = Session(session_id="s1")
    stored: list[ToolResultStored] = []
    session.bus.subscribe(ToolResultStored, stored.append)
    adapter = ScriptedAdapter(
        [
            tool_call_turn(
                tool_call("read_file", {"path": "big.log"}, id="c1"),
                tool_call("read_file", {"path": "small.txt"}, id="c2"),
            ),
            text_turn("read it"),
        ]
    )
    try:
        evaluate(
            _prompt(FilesSection()),
            adapter=adapter,
            session=session,
            transcript=transcript,
            resources=ResourceRegistry({Filesystem: fs}),
        )
        by_call = {event.tool_call_id: event for event in stored}
        assert by_call["c1"].oversized and by_call["c1"].tool_name == "read_file"
        assert not by_call["c2"].oversized
        messages = {
            m.tool_call_id: m.content for m in adapter.requests[1].context.messages if m.role == "tool"
        }
        assert by_call["c1"].handle in messages["c1"] and "line 800" not in messages["c1"]
        assert "tool_output" in [t.name for t in adapter.requests[1].tools]
        assert messages["c2"] == "small.txt: lines 1-1 of 1\n1\ttiny"
        [meta] = [m for m in ToolOutputStore(transcript.store, "s1").list_results() if m.oversized]
        assert meta.handle == by_call["c1"].handle and meta.lines >= 800
    finally:
        transcript.store.close()
