"""The Filesystem contract, checked against both implementations."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from weakprompt.resources import (
    Filesystem,
    HostFilesystem,
    InMemoryFilesystem,
    UnsafePathError,
    normalize_path,
)


@pytest.fixture(params=["memory", "host"])
def fs(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Filesystem]:
    if request.param == "memory":
        yield InMemoryFilesystem()
    else:
        root = tmp_path / "root"
        root.mkdir()
        yield HostFilesystem(root)


def test_both_implementations_satisfy_the_protocol(fs: Filesystem) -> None:
    assert isinstance(fs, Filesystem)


def test_text_and_bytes_round_trip(fs: Filesystem) -> None:
    fs.write_text("notes/today.md", "héllo")
    fs.write_bytes("data.bin", b"\x00\xff")
    assert fs.read_text("notes/today.md") == "héllo"
    assert fs.read_bytes("notes/today.md") == "héllo".encode()
    assert fs.read_bytes("data.bin") == b"\x00\xff"
    fs.write_text("notes/today.md", "replaced")
    assert fs.read_text("./notes//today.md") == "replaced"


def test_encoding_is_honoured(fs: Filesystem) -> None:
    fs.write_text("latin.txt", "é", encoding="latin-1")
    assert fs.read_bytes("latin.txt") == b"\xe9"
    assert fs.read_text("latin.txt", encoding="latin-1") == "é"


def test_exists_and_list_dir(fs: Filesystem) -> None:
    assert fs.exists("")
    assert fs.list_dir() == ()
    fs.write_text("a/b/c.txt", "1")
    fs.write_text("a/d.txt", "2")
    fs.write_text("z.txt", "3")
    assert fs.exists("a") and fs.exists("a/b") and fs.exists("a/b/c.txt")
    assert not fs.exists("a/missing")
    assert fs.list_dir() == ("a/", "z.txt")
    assert fs.list_dir("a") == ("b/", "d.txt")
    assert fs.list_dir("a/b/") == ("c.txt",)


def test_delete_removes_a_file_and_empty_parents_disappear_in_memory(fs: Filesystem) -> None:
    fs.write_text("a/b.txt", "x")
    fs.delete("a/b.txt")
    assert not fs.exists("a/b.txt")
    with pytest.raises(FileNotFoundError, match=re.escape("a/b.txt")):
        fs.read_text("a/b.txt")


def test_missing_files_and_directories_raise_with_the_path(fs: Filesystem) -> None:
    with pytest.raises(FileNotFoundError, match=re.escape("'nope.txt'")):
        fs.read_bytes("nope.txt")
    with pytest.raises(FileNotFoundError, match=re.escape("'nope.txt'")):
        fs.delete("nope.txt")
    with pytest.raises(FileNotFoundError, match="'nodir'"):
        fs.list_dir("nodir")


def test_files_and_directories_are_not_confused(fs: Filesystem) -> None:
    fs.write_text("dir/file.txt", "x")
    with pytest.raises(IsADirectoryError, match="'dir'"):
        fs.read_text("dir")
    with pytest.raises(IsADirectoryError, match="'dir'"):
        fs.write_text("dir", "y")
    with pytest.raises(IsADirectoryError, match="'dir'"):
        fs.delete("dir")
    with pytest.raises(NotADirectoryError, match=re.escape("'dir/file.txt' is a file")):
        fs.write_text("dir/file.txt/inner", "y")
    with pytest.raises(NotADirectoryError, match="is a file, not a directory"):
        fs.list_dir("dir/file.txt")
    assert fs.read_text("dir/file.txt") == "x"


def test_wrong_content_types_are_rejected(fs: Filesystem) -> None:
    with pytest.raises(TypeError, match="takes bytes"):
        fs.write_bytes("a", "text")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="takes str"):
        fs.write_text("a", b"bytes")  # type: ignore[arg-type]
    assert not fs.exists("a")


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("../outside.txt", "'..'"),
        ("a/../../outside.txt", "'..'"),
        ("a/..", "'..'"),
        ("/etc/passwd", "absolute"),
        ("a\\b", "backslash"),
        ("a\x00b", "NUL"),
        ("a\ud800b", "lone surrogate"),
    ],
)
def test_unsafe_paths_are_refused_naming_the_path(fs: Filesystem, path: str, reason: str) -> None:
    for op in (fs.read_bytes, fs.exists, fs.delete, fs.list_dir, lambda p: fs.write_text(p, "x")):
        with pytest.raises(UnsafePathError) as info:
            op(path)
        assert repr(path) in str(info.value)
        assert reason in str(info.value)


def test_root_is_not_a_file(fs: Filesystem) -> None:
    with pytest.raises(UnsafePathError, match="root directory"):
        fs.write_text("", "x")
    with pytest.raises(UnsafePathError, match="root directory"):
        fs.read_text(".")


def test_non_string_path_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="paths are str"):
        normalize_path(Path("a"))  # type: ignore[arg-type]


segment = st.text(alphabet="abc.-_", min_size=1, max_size=4).filter(lambda s: s not in (".", ".."))


@settings(max_examples=40)
@given(st.dictionaries(st.lists(segment, min_size=1, max_size=3).map("/".join), st.binary(max_size=20)))
def test_memory_and_host_agree_on_random_trees(files: dict[str, bytes]) -> None:
    import tempfile

    memory = InMemoryFilesystem()
    with tempfile.TemporaryDirectory() as tmp:
        host = HostFilesystem(tmp)
        outcomes: list[tuple[str, str]] = []
        for path, data in files.items():
            for target in (memory, host):
                try:
                    target.write_bytes(path, data)
                    outcomes.append((path, "ok"))
                except OSError as exc:
                    outcomes.append((path, type(exc).__name__))
        # each write had the same outcome on both
        assert outcomes[0::2] == outcomes[1::2]
        stack = [""]
        while stack:
            directory = stack.pop()
            listing = memory.list_dir(directory)
            assert listing == host.list_dir(directory)
            for name in listing:
                child = f"{directory}/{name}".strip("/")
                if name.endswith("/"):
                    stack.append(child)
                else:
                    assert memory.read_bytes(child) == host.read_bytes(child)
