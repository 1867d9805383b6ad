"""HostFilesystem rolls back like InMemoryFilesystem: a failed call's writes are undone (issue 30 item 7)."""

from __future__ import annotations

import gc
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from weakprompt.adapters.testing import ScriptedAdapter, text_turn, tool_call, tool_call_turn
from weakprompt.contrib.files import EditFile, FilesSection, WriteFile, edit_file, write_file
from weakprompt.prompt import MarkdownSection, Prompt, PromptTemplate
from weakprompt.resources import (
    Filesystem,
    HostFilesystem,
    InMemoryFilesystem,
    ResourceRegistry,
    Snapshotable,
)
from weakprompt.runtime.loop import evaluate
from weakprompt.session import Session
from weakprompt.tools import ToolContext, ToolResult, tool


def tree(root: Path) -> dict[str, bytes | None]:
    """Every file (its bytes) and directory (``None``) under ``root``."""
    return {
        p.relative_to(root).as_posix(): (None if p.is_dir() else p.read_bytes())
        for p in sorted(root.rglob("*"))
    }


@tool(description="Write a report in a new folder, change and delete files, then fail.")
def write_then_raise(*, context: ToolContext) -> ToolResult[str]:
    fs = context.filesystem
    assert fs is not None
    write_file(fs, WriteFile(path="out/deep/report.md", content="half-done\n"))
    edit_file(fs, EditFile(path="notes.md", old_text="original", new_text="clobbered"))
    fs.delete("old.bin")
    fs.write_bytes("notes.md", b"twice\n")
    raise RuntimeError("the report did not validate")


@tool(description="Write, then return a failed result.")
def write_then_refuse(*, context: ToolContext) -> ToolResult[str]:
    fs = context.filesystem
    assert fs is not None
    fs.write_text("notes.md", "changed\n")
    return ToolResult.error("changed my mind")


def test_a_host_write_tool_that_fails_after_writing_leaves_the_files_byte_identical(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("original\n")
    (tmp_path / "old.bin").write_bytes(b"\x00\xffkeep")
    before = tree(tmp_path)
    template: PromptTemplate[None] = PromptTemplate(
        ns="tests/files",
        key="host",
        sections=[
            MarkdownSection(
                title="Task", key="task", template="Work.", tools=[write_then_raise, write_then_refuse]
            ),
            FilesSection(writable=True, require_approval_for_writes=False),
        ],
    )
    adapter = ScriptedAdapter(
        [
            tool_call_turn(tool_call("write_then_raise", {}, id="c1")),
            tool_call_turn(tool_call("write_then_refuse", {}, id="c2")),
            tool_call_turn(
                tool_call(
                    "edit_file", {"path": "notes.md", "old_text": "original", "new_text": "kept"}, id="c3"
                )
            ),
            text_turn("done"),
        ]
    )
    fs = HostFilesystem(tmp_path)
    response = evaluate(
        Prompt(template), adapter=adapter, session=Session(), resources=ResourceRegistry({Filesystem: fs})
    )
    assert [e.success for e in response.tool_executions] == [False, False, True]
    assert tree(tmp_path) == {**before, "notes.md": b"kept\n"}  # only the successful edit stays


def test_restore_puts_back_exactly_what_was_there(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_bytes(b"A")
    fs = HostFilesystem(tmp_path)
    assert isinstance(fs, Snapshotable)
    before = tree(tmp_path)
    mark = fs.snapshot()
    fs.write_text("n/m/b.txt", "B")
    fs.write_text("a.txt", "changed")
    fs.delete("a.txt")
    fs.restore(mark)
    assert tree(tmp_path) == before


def test_a_folder_something_else_filled_meanwhile_is_kept(tmp_path: Path) -> None:
    fs = HostFilesystem(tmp_path)
    mark = fs.snapshot()
    fs.write_text("new/a.txt", "mine")
    (tmp_path / "new" / "theirs.txt").write_text("not journaled")  # written behind the filesystem's back
    fs.restore(mark)
    assert tree(tmp_path) == {"new": None, "new/theirs.txt": b"not journaled"}


def test_restore_refuses_a_snapshot_of_another_filesystem(tmp_path: Path) -> None:
    fs = HostFilesystem(tmp_path)
    with pytest.raises(TypeError, match="snapshot of this HostFilesystem, got InMemorySnapshot"):
        fs.restore(InMemoryFilesystem().snapshot())
    with pytest.raises(TypeError, match="snapshot of this HostFilesystem"):
        fs.restore(HostFilesystem(tmp_path).snapshot())


def test_writes_with_no_live_snapshot_are_not_kept_and_later_snapshots_still_work(tmp_path: Path) -> None:
    fs = HostFilesystem(tmp_path)
    fs.write_text("a.txt", "1")
    dropped = fs.snapshot()
    fs.write_text("a.txt", "2")
    del dropped
    gc.collect()
    fs.write_text("a.txt", "3")  # no snapshot alive: nothing to keep
    mark = fs.snapshot()
    fs.write_text("a.txt", "4")
    fs.restore(mark)
    assert (tmp_path / "a.txt").read_text() == "3"


NAMES = st.sampled_from(["a.txt", "b.txt", "d/c.txt", "d/e/f.txt", "g/h.txt"])
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("write"), NAMES, st.binary(max_size=6)),
        st.tuples(st.just("delete"), NAMES, st.just(b"")),
        st.tuples(st.just("snapshot"), st.just(""), st.just(b"")),
        st.tuples(st.just("drop"), st.just(""), st.just(b"")),
    ),
    max_size=25,
)


@settings(max_examples=60, deadline=None)
@given(ops=OPS, pick=st.integers(0, 30))
def test_restoring_any_live_snapshot_gives_the_files_of_that_moment(
    ops: list[tuple[str, str, bytes]], pick: int
) -> None:
    with tempfile.TemporaryDirectory() as where:
        root = Path(where)
        (root / "a.txt").write_bytes(b"seed")
        fs = HostFilesystem(root)
        model = InMemoryFilesystem({"a.txt": b"seed"})
        marks: list[tuple[object, dict[str, bytes | None]]] = [(fs.snapshot(), tree(root))]
        for op, name, data in ops:
            if op == "write":
                fs.write_bytes(name, data)
                model.write_bytes(name, data)
            elif op == "delete" and model.exists(name):
                fs.delete(name)
                model.delete(name)
            elif op == "snapshot":
                marks.append((fs.snapshot(), tree(root)))
            elif op == "drop" and len(marks) > 1:
                marks.pop(0)
                gc.collect()
        assert {k: v for k, v in tree(root).items() if v is not None} == {
            path: model.read_bytes(path) for path in _files(model)
        }
        mark, expected = marks[pick % len(marks)]
        fs.restore(mark)
        assert tree(root) == expected


def _files(fs: InMemoryFilesystem, under: str = "") -> list[str]:
    found: list[str] = []
    for name in fs.list_dir(under):
        path = f"{under}/{name}".strip("/") if under else name
        if name.endswith("/"):
            found.extend(_files(fs, path.rstrip("/")))
        else:
            found.append(path)
    return found
