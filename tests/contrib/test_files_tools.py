"""The file tools over InMemoryFilesystem (properties) and HostFilesystem (escapes), called directly."""

from __future__ import annotations

import os
from pathlib import Path
from typing import cast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from weakprompt.contrib.files import (
    EditFile,
    FileLimits,
    FileListing,
    FilesSection,
    FileToolError,
    FileWindow,
    GlobFiles,
    GrepFiles,
    ListFiles,
    ReadFile,
    WriteFile,
    edit_file,
    file_tools,
    glob_files,
    glob_regex,
    grep_files,
    list_files,
    read_file,
    split_lines,
    walk_files,
    write_file,
)
from weakprompt.errors import ConfigurationError
from weakprompt.resources import (
    Filesystem,
    HostFilesystem,
    InMemoryFilesystem,
    ResourceRegistry,
)
from weakprompt.session import Session
from weakprompt.tools import AnyTool, ToolContext, ToolResult

LIMITS = FileLimits(grep_isolate=False)

names = st.text(alphabet="abcxyz_-", min_size=1, max_size=6)
rel_paths = st.lists(names, min_size=1, max_size=3).map("/".join)
texts = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=200)
line_texts = st.lists(st.text(alphabet="ab \t\r.x", max_size=8), max_size=30).map("\n".join)


def _context(fs: Filesystem | None) -> ToolContext:
    resources = ResourceRegistry({Filesystem: fs}) if fs is not None else None
    return ToolContext(session=Session(), resources=resources)


def _tool(name: str, *, writable: bool = True) -> AnyTool:
    return next(t for t in file_tools(writable=writable, limits=LIMITS) if t.name == name)


def _call(fs: Filesystem | None, name: str, params: object) -> ToolResult[object]:
    return _handle(_tool(name), fs, params)


def _handle(tool: AnyTool, fs: Filesystem | None, params: object) -> ToolResult[object]:
    result = tool.handler(params, context=_context(fs))
    assert isinstance(result, ToolResult)
    return cast("ToolResult[object]", result)


# -- properties --------------------------------------------------------------


@given(path=rel_paths, text=texts)
def test_write_then_read_gives_back_the_text(path: str, text: str) -> None:
    fs = InMemoryFilesystem()
    written = write_file(fs, WriteFile(path=path, content=text))
    assert written.created and written.size_bytes == len(text.encode())
    window = read_file(fs, ReadFile(path=path))
    assert "\n".join(window.lines) == text.removesuffix("\n")
    assert window.remaining == 0
    assert write_file(fs, WriteFile(path=path, content="x")).created is False


@given(text=line_texts, offset=st.integers(1, 40), limit=st.integers(1, 7))
def test_read_windows_cover_the_file_in_order(text: str, offset: int, limit: int) -> None:
    fs = InMemoryFilesystem({"f.txt": text})
    lines = split_lines(text)
    windows: list[FileWindow] = []
    start = 1
    while start <= len(lines):
        window = read_file(fs, ReadFile(path="f.txt", offset=start, limit=limit))
        assert window.offset == start and window.total_lines == len(lines)
        assert window.remaining == len(lines) - window.end_line
        windows.append(window)
        start = window.end_line + 1
    assert tuple(line for window in windows for line in window.lines) == lines
    if offset <= len(lines):
        one = read_file(fs, ReadFile(path="f.txt", offset=offset, limit=limit))
        assert one.lines == lines[offset - 1 : offset - 1 + limit]
        if one.remaining:
            assert f"read_file with offset={one.end_line + 1}" in one.render()


@given(
    before=st.text(alphabet="ab\n", max_size=20),
    after=st.text(alphabet="ab\n", max_size=20),
    new=st.text(alphabet="xyz", max_size=5),
)
def test_edit_replaces_exactly_the_one_occurrence(before: str, after: str, new: str) -> None:
    old = "NEEDLE"
    fs = InMemoryFilesystem({"f.txt": before + old + after})
    edited = edit_file(fs, EditFile(path="f.txt", old_text=old, new_text=new))
    assert edited.replacements == 1
    assert fs.read_text("f.txt") == before + new + after


@given(count=st.integers(2, 5), filler=st.text(alphabet="ab", max_size=4))
def test_edit_refuses_an_ambiguous_old_text_unless_replace_all(count: int, filler: str) -> None:
    text = (filler + "X") * count
    fs = InMemoryFilesystem({"f.txt": text})
    with pytest.raises(FileToolError, match=f"occurs {count} times"):
        edit_file(fs, EditFile(path="f.txt", old_text="X", new_text="Y"))
    assert fs.read_text("f.txt") == text
    done = edit_file(fs, EditFile(path="f.txt", old_text="X", new_text="Y", replace_all=True))
    assert done.replacements == count and fs.read_text("f.txt") == text.replace("X", "Y")


@settings(max_examples=50)
@given(files=st.dictionaries(rel_paths, st.text(alphabet="ab", max_size=3), max_size=8))
def test_list_walk_and_glob_agree_with_what_was_written(files: dict[str, str]) -> None:
    fs = InMemoryFilesystem()
    written: set[str] = set()
    for path, text in files.items():
        try:
            fs.write_text(path, text)
        except (NotADirectoryError, IsADirectoryError):  # a/b after a, or the other way round
            continue
        written.add(path)
    walk = walk_files(fs, "", max_entries=1000)
    assert walk.complete and set(walk.files) == written
    assert set(glob_files(fs, GlobFiles(pattern="**"), LIMITS).paths) == written
    top = {path.split("/")[0] + ("/" if "/" in path else "") for path in written}
    assert set(list_files(fs, "").entries) == top
    for path in written:
        assert glob_files(fs, GlobFiles(pattern=path), LIMITS).paths == (path,)


@given(path=st.text(max_size=12))
def test_no_path_leaves_the_root(path: str) -> None:
    fs = InMemoryFilesystem({"inside.txt": "x"})
    for params in (ReadFile(path=path), WriteFile(path=path, content="y"), ListFiles(path=path)):
        name = {ReadFile: "read_file", WriteFile: "write_file", ListFiles: "list_files"}[type(params)]
        result = _call(fs, name, params)
        if ".." in path.split("/") or path.startswith("/"):
            assert not result.success
    assert all(not key.startswith(("/", "..")) for key in walk_files(fs, "", max_entries=100).files)


# -- examples ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "error"),
    [("../secret", "contains '..'"), ("/etc/passwd", "is absolute"), ("a/../../b", "contains '..'")],
)
def test_escaping_paths_are_failed_results_naming_the_path(path: str, error: str) -> None:
    fs = InMemoryFilesystem({"a/b": "x"})
    for name, params in [
        ("read_file", ReadFile(path=path)),
        ("list_files", ListFiles(path=path)),
        ("glob_files", GlobFiles(pattern="*", path=path)),
        ("grep_files", GrepFiles(pattern="x", path=path)),
        ("glob_files", GlobFiles(pattern=path)),
        ("write_file", WriteFile(path=path, content="x")),
        ("edit_file", EditFile(path=path, old_text="x", new_text="y")),
    ]:
        result = _call(fs, name, params)
        assert not result.success and error in result.message and repr(path) in result.message


def test_host_symlink_leading_out_of_the_root_is_refused_and_skipped(tmp_path: Path) -> None:
    root = tmp_path / "root"
    outside = tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text("password=hunter2\n")
    (root / "ok.txt").write_text("password is elsewhere\n")
    os.symlink(outside / "secret.txt", root / "link.txt")
    os.symlink(outside, root / "linkdir")
    fs = HostFilesystem(root)
    for name, params in [
        ("read_file", ReadFile(path="link.txt")),
        ("read_file", ReadFile(path="linkdir/secret.txt")),
        ("list_files", ListFiles(path="linkdir")),
        ("write_file", WriteFile(path="linkdir/new.txt", content="x")),
        ("edit_file", EditFile(path="link.txt", old_text="hunter2", new_text="x")),
    ]:
        result = _call(fs, name, params)
        assert not result.success and "outside the filesystem root" in result.message, name
        assert str(tmp_path) not in result.message
    grep = grep_files(fs, GrepFiles(pattern="password"), LIMITS)
    assert [hit.path for hit in grep.hits] == ["ok.txt"]
    assert grep.skipped == ("link.txt",)
    assert "hunter2" not in grep.render()
    assert glob_files(fs, GlobFiles(pattern="**/*.txt"), LIMITS).paths == ("link.txt", "ok.txt")
    assert (outside / "secret.txt").read_text() == "password=hunter2\n"
    assert not (outside / "new.txt").exists()


def test_host_symlink_loop_inside_the_root_ends_the_walk_and_says_so(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("needle\n")
    os.symlink(tmp_path, tmp_path / "loop")
    fs = HostFilesystem(tmp_path)
    limits = FileLimits(max_walk_entries=50, grep_isolate=False)
    found = grep_files(fs, GrepFiles(pattern="needle"), limits)
    assert not found.complete and found.hits[0].path == "a.txt"
    assert "stopped early" in found.render()


def test_read_renders_numbered_lines_and_what_remains() -> None:
    fs = InMemoryFilesystem({"notes.md": "one\ntwo\r\nthree\n" + "x\n" * 9})
    window = read_file(fs, ReadFile(path="notes.md", offset=2, limit=2))
    assert window.render() == (
        "notes.md: lines 2-3 of 12\n2\ttwo\n3\tthree\n(9 more lines: read_file with offset=4 to continue)"
    )
    assert window.lines == ("two\r", "three")
    last = read_file(fs, ReadFile(path="notes.md", offset=12))
    assert last.render() == "notes.md: lines 12-12 of 12\n12\tx"
    empty = InMemoryFilesystem({"e.txt": ""})
    assert read_file(empty, ReadFile(path="e.txt", offset=3)).render() == "e.txt is empty (0 lines)."


@pytest.mark.parametrize(
    ("params", "error"),
    [
        (ReadFile(path="f.txt", offset=0), "offset must be 1 or more"),
        (ReadFile(path="f.txt", limit=0), "limit must be 1 or more"),
        (ReadFile(path="f.txt", offset=5), "offset 5 is past the end of f.txt, which has 2 lines"),
        (ReadFile(path="missing.txt"), "no such file: 'missing.txt'"),
        (ReadFile(path="bin.dat"), "bin.dat is not UTF-8 text (byte 0"),
        (ReadFile(path="d"), "is a directory"),
    ],
)
def test_bad_reads_are_failed_results(params: ReadFile, error: str) -> None:
    fs = InMemoryFilesystem({"f.txt": "a\nb\n", "bin.dat": b"\xff\xfe", "d/x": "1"})
    result = _call(fs, "read_file", params)
    assert not result.success and error in result.message


@pytest.mark.parametrize(
    ("params", "error"),
    [
        (EditFile(path="f.txt", old_text="", new_text="x"), "old_text is empty"),
        (EditFile(path="f.txt", old_text="a", new_text="a"), "the same"),
        (EditFile(path="f.txt", old_text="zzz", new_text="x"), "old_text was not found in f.txt"),
        (EditFile(path="f.txt", old_text="a", new_text="x"), "old_text occurs 2 times in f.txt"),
        (EditFile(path="nope.txt", old_text="a", new_text="x"), "no such file"),
    ],
)
def test_bad_edits_are_failed_results_and_change_nothing(params: EditFile, error: str) -> None:
    fs = InMemoryFilesystem({"f.txt": "a\na\n"})
    result = _call(fs, "edit_file", params)
    assert not result.success and error in result.message
    assert fs.read_text("f.txt") == "a\na\n"


def test_files_over_the_size_limit_are_refused_by_read_and_edit() -> None:
    fs = InMemoryFilesystem({"big.txt": "x" * 2000})
    limits = FileLimits(max_file_bytes=1000)
    with pytest.raises(
        FileToolError, match=r"big\.txt is 2000 bytes; the file tools read files of at most 1000"
    ):
        read_file(fs, ReadFile(path="big.txt", limit=1), limits)
    with pytest.raises(FileToolError, match="at most 1000 bytes"):
        edit_file(fs, EditFile(path="big.txt", old_text="x", new_text="y", replace_all=True), limits)
    assert read_file(fs, ReadFile(path="big.txt")).total_lines == 1


def test_lone_surrogates_in_written_text_are_refused_not_raised() -> None:
    fs = InMemoryFilesystem({"f.txt": "abc\n"})
    wrote = _call(fs, "write_file", WriteFile(path="g.txt", content="x\ud800"))
    assert not wrote.success and "content contains a lone surrogate at index 1" in wrote.message
    edited = _call(fs, "edit_file", EditFile(path="f.txt", old_text="abc", new_text="\udc00"))
    assert not edited.success and "new_text contains a lone surrogate at index 0" in edited.message
    assert fs.list_dir() == ("f.txt",) and fs.read_text("f.txt") == "abc\n"


def test_listing_and_glob_render() -> None:
    fs = InMemoryFilesystem({"README.md": "#", "docs/a.md": "", "docs/deep/b.md": "", "src/c.py": ""})
    assert list_files(fs, "").render() == "3 entries in .:\nREADME.md\ndocs/\nsrc/"
    assert list_files(fs, "docs/deep").render() == "1 entry in docs/deep:\nb.md"
    assert FileListing(path="", entries=()).render() == ". is empty."
    assert glob_files(fs, GlobFiles(pattern="*.md"), LIMITS).paths == ("README.md",)
    assert glob_files(fs, GlobFiles(pattern="**/*.md"), LIMITS).paths == (
        "README.md",
        "docs/a.md",
        "docs/deep/b.md",
    )
    assert glob_files(fs, GlobFiles(pattern="*.md", path="docs"), LIMITS).paths == ("docs/a.md",)
    assert glob_files(fs, GlobFiles(pattern="d??s/**"), LIMITS).paths == ("docs/a.md", "docs/deep/b.md")
    assert glob_files(fs, GlobFiles(pattern="a.md", path="docs/a.md"), LIMITS).paths == ("docs/a.md",)
    assert glob_files(fs, GlobFiles(pattern="*.rs"), LIMITS).render() == "No file matches '*.rs'."
    assert glob_regex("[x].md").fullmatch("[x].md")
    one = glob_files(fs, GlobFiles(pattern="src/*"), LIMITS).render()
    assert one == "1 file matches 'src/*':\nsrc/c.py"
    capped = glob_files(fs, GlobFiles(pattern="**"), FileLimits(max_matches=2, grep_isolate=False))
    assert len(capped.paths) == 2 and not capped.complete and "stopped early" in capped.render()
    walked = walk_files(fs, "", max_entries=2)
    assert not walked.complete


def test_grep_finds_lines_caps_matches_and_filters_by_glob() -> None:
    fs = InMemoryFilesystem(
        {
            "a.py": "def parse(x):\n    return x\n",
            "b.md": "parse the docs\n" + "long " * 100 + "parse\n",
            "c.bin": b"\xff parse",
            "d/e.py": "parse = 1\n",
        }
    )
    found = grep_files(fs, GrepFiles(pattern=r"parse"), LIMITS)
    where = [(hit.path, hit.line) for hit in found.hits]
    assert where == [("a.py", 1), ("b.md", 1), ("b.md", 2), ("d/e.py", 1)]
    assert found.total == 4 and found.files_searched == 3 and found.skipped == ("c.bin",)
    assert found.hits[2].text.endswith("…") and len(found.hits[2].text) == 301
    assert "c.bin" in found.render()
    only_py = grep_files(fs, GrepFiles(pattern="parse", glob="**/*.py"), LIMITS)
    assert [hit.path for hit in only_py.hits] == ["a.py", "d/e.py"]
    in_dir = grep_files(fs, GrepFiles(pattern="parse", path="d"), LIMITS)
    assert in_dir.render() == "1 matching line in 1 file:\nd/e.py:1: parse = 1"
    one_file = grep_files(fs, GrepFiles(pattern="return", path="a.py"), LIMITS)
    assert [(hit.path, hit.line) for hit in one_file.hits] == [("a.py", 2)]
    capped = grep_files(fs, GrepFiles(pattern="parse"), FileLimits(max_matches=1, grep_isolate=False))
    assert len(capped.hits) == 1 and capped.total == 4 and "3 more not shown" in capped.render()
    none = grep_files(fs, GrepFiles(pattern="zebra", path="d"), LIMITS)
    assert none.render() == "No line matches 'zebra' in 1 file."
    small = grep_files(fs, GrepFiles(pattern="parse"), FileLimits(max_grep_bytes=30, grep_isolate=False))
    assert not small.complete and small.files_searched == 1 and "stopped early" in small.render()


def test_grep_refuses_bad_patterns_and_stops_a_catastrophic_one() -> None:
    fs = InMemoryFilesystem({"f.txt": "a" * 40 + "!\n"})
    bad = _call(fs, "grep_files", GrepFiles(pattern="(unclosed"))
    assert not bad.success and "not a valid regular expression" in bad.message
    assert not _call(fs, "grep_files", GrepFiles(pattern="")).success
    tools = file_tools(limits=FileLimits(grep_timeout=0.5))
    grep = next(t for t in tools if t.name == "grep_files")
    slow = _handle(grep, fs, GrepFiles(pattern="(a+)+$"))
    assert not slow.success and "did not finish" in slow.message


def test_missing_directory_and_missing_filesystem() -> None:
    fs = InMemoryFilesystem({"a.txt": "x"})
    result = _call(fs, "glob_files", GlobFiles(pattern="*", path="nowhere"))
    assert not result.success and "no such directory: 'nowhere'" in result.message
    missing = _call(None, "list_files", ListFiles())
    assert not missing.success and "No Filesystem resource is registered" in missing.message


def test_writes_are_absent_unless_enabled_and_ask_for_approval_by_default() -> None:
    read_only = FilesSection()
    assert [t.name for t in read_only.tools] == ["list_files", "read_file", "glob_files", "grep_files"]
    assert not read_only.writable and "read-only" in read_only.template
    writable = FilesSection(writable=True)
    assert writable.writable and "edit_file replaces exact text" in writable.template
    writers = {t.name: t for t in writable.tools if t.name in ("write_file", "edit_file")}
    assert set(writers) == {"write_file", "edit_file"}
    assert all(t.requires_approval is True and t.sequential for t in writers.values())
    quiet = FilesSection(writable=True, require_approval_for_writes=False)
    assert all(t.requires_approval is False for t in quiet.tools)


@pytest.mark.parametrize(
    ("field", "value"),
    [("max_matches", 0), ("max_walk_entries", True), ("grep_timeout", 0.0), ("max_grep_bytes", -1)],
)
def test_limits_refuse_nonsense(field: str, value: object) -> None:
    with pytest.raises(ConfigurationError, match=f"FileLimits.{field}"):
        FileLimits(**{field: value})  # pyright: ignore[reportArgumentType]
