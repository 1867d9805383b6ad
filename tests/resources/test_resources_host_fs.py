"""HostFilesystem stays inside its root, symlinks included (real temp dirs)."""

from __future__ import annotations

import errno
import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from weakprompt.resources import HostFilesystem, UnsafePathError


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "root"
    outside = tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text("top secret")
    return root, outside


def test_root_must_exist_and_be_a_directory(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="does not exist"):
        HostFilesystem(tmp_path / "missing")
    (tmp_path / "file").write_text("x")
    with pytest.raises(NotADirectoryError, match="not a directory"):
        HostFilesystem(tmp_path / "file")


def test_root_is_resolved(layout: tuple[Path, Path]) -> None:
    root, _ = layout
    fs = HostFilesystem(str(root / "." / ".." / "root"))
    assert fs.root == root.resolve()
    assert "root" in repr(fs)


def test_writes_land_under_the_root(layout: tuple[Path, Path]) -> None:
    root, _ = layout
    fs = HostFilesystem(root)
    fs.write_text("deep/down/file.txt", "hi")
    assert (root / "deep" / "down" / "file.txt").read_text() == "hi"


def test_symlinked_file_pointing_outside_cannot_be_read_or_written(layout: tuple[Path, Path]) -> None:
    root, outside = layout
    os.symlink(outside / "secret.txt", root / "leak.txt")
    fs = HostFilesystem(root)
    with pytest.raises(UnsafePathError, match=re.escape("'leak.txt' resolves outside the filesystem root")):
        fs.read_text("leak.txt")
    with pytest.raises(UnsafePathError, match=re.escape("'leak.txt'")):
        fs.write_text("leak.txt", "overwritten")
    with pytest.raises(UnsafePathError, match=re.escape("'leak.txt'")):
        fs.delete("leak.txt")
    with pytest.raises(UnsafePathError, match=re.escape("'leak.txt'")):
        fs.exists("leak.txt")
    assert (outside / "secret.txt").read_text() == "top secret"
    assert (root / "leak.txt").is_symlink()


def test_symlinked_directory_pointing_outside_is_refused(layout: tuple[Path, Path]) -> None:
    root, outside = layout
    os.symlink(outside, root / "escape", target_is_directory=True)
    fs = HostFilesystem(root)
    with pytest.raises(UnsafePathError, match=re.escape("'escape/secret.txt'")):
        fs.read_text("escape/secret.txt")
    with pytest.raises(UnsafePathError, match=re.escape("'escape/new.txt'")):
        fs.write_text("escape/new.txt", "x")
    with pytest.raises(UnsafePathError, match="'escape'"):
        fs.list_dir("escape")
    assert not (outside / "new.txt").exists()


def test_dangling_symlink_pointing_outside_cannot_create_a_file(layout: tuple[Path, Path]) -> None:
    root, outside = layout
    os.symlink(outside / "created.txt", root / "dangling")
    fs = HostFilesystem(root)
    with pytest.raises(UnsafePathError, match="'dangling'"):
        fs.write_text("dangling", "x")
    assert not (outside / "created.txt").exists()


def test_symlink_cycle_inside_root_is_handled(layout: tuple[Path, Path]) -> None:
    root, _ = layout
    os.symlink(root / "loop_b", root / "loop_a")
    os.symlink(root / "loop_a", root / "loop_b")
    fs = HostFilesystem(root)
    # realpath gives up on the cycle and returns a path under the root
    assert fs.exists("loop_a") is False


def test_symlinks_within_the_root_work_and_delete_removes_the_link(layout: tuple[Path, Path]) -> None:
    root, _ = layout
    fs = HostFilesystem(root)
    fs.write_text("real/target.txt", "inside")
    os.symlink(root / "real" / "target.txt", root / "alias.txt")
    os.symlink(root / "real", root / "alias_dir", target_is_directory=True)
    assert fs.read_text("alias.txt") == "inside"
    assert fs.read_text("alias_dir/target.txt") == "inside"
    assert fs.list_dir() == ("alias.txt", "alias_dir/", "real/")
    fs.delete("alias.txt")
    assert not (root / "alias.txt").exists()
    assert fs.read_text("real/target.txt") == "inside"


def test_root_itself_being_a_symlink_is_fine(tmp_path: Path, layout: tuple[Path, Path]) -> None:
    root, _ = layout
    os.symlink(root, tmp_path / "root_link", target_is_directory=True)
    fs = HostFilesystem(tmp_path / "root_link")
    fs.write_text("x.txt", "1")
    assert (root / "x.txt").read_text() == "1"


# --- what a model, a tool or a planted file can throw at it ------------------------------------------------


def _no_host_path(root: Path, error: BaseException) -> None:
    """The message names the path as given; the host location of the root never shows."""
    assert str(root) not in str(error)
    assert str(root.resolve()) not in str(error)


def _every_operation(fs: HostFilesystem) -> dict[str, Callable[[str], object]]:
    return {
        "read": fs.read_bytes,
        "write": lambda p: fs.write_text(p, "x"),
        "exists": fs.exists,
        "list": fs.list_dir,
        "delete": fs.delete,
    }


def test_a_symlink_loop_is_an_unsafe_path_naming_it(layout: tuple[Path, Path]) -> None:
    root, _ = layout
    os.symlink(root / "loop_b", root / "loop_a")
    os.symlink(root / "loop_a", root / "loop_b")
    fs = HostFilesystem(root)
    for name, op in _every_operation(fs).items():
        if name == "exists":
            assert op("loop_a") is False
            continue
        if name == "delete":
            op("loop_b")  # the link itself can go, like rm
            continue
        with pytest.raises(UnsafePathError, match=re.escape("'loop_a'")) as failure:
            op("loop_a")
        _no_host_path(root, failure.value)
    assert not (root / "loop_b").is_symlink()


@pytest.mark.parametrize("path", ["n" * 300, "deep/" * 1000 + "f"], ids=["long name", "long path"])
def test_over_long_names_are_an_unsafe_path_naming_it(layout: tuple[Path, Path], path: str) -> None:
    root, _ = layout
    fs = HostFilesystem(root)
    for op in _every_operation(fs).values():
        with pytest.raises(UnsafePathError, match="too long") as failure:
            op(path)
        assert repr(path)[:40] in str(failure.value)
        _no_host_path(root, failure.value)
    assert list(root.iterdir()) == []


def test_a_lone_surrogate_in_a_path_is_an_unsafe_path_naming_it(layout: tuple[Path, Path]) -> None:
    root, _ = layout
    fs = HostFilesystem(root)
    for op in _every_operation(fs).values():
        with pytest.raises(UnsafePathError, match=r"'a\\ud800\.txt' contains a lone surrogate at index 1"):
            op("a\ud800.txt")


def test_a_hard_link_to_an_outside_file_is_neither_read_nor_written(layout: tuple[Path, Path]) -> None:
    root, outside = layout
    secret = outside / "secret.txt"
    os.link(secret, root / "linked.txt")
    fs = HostFilesystem(root)
    with pytest.raises(
        UnsafePathError, match=r"cannot read 'linked.txt': the file has 2 hard links"
    ) as failure:
        fs.read_text("linked.txt")
    _no_host_path(root, failure.value)
    with pytest.raises(UnsafePathError, match=r"cannot write 'linked.txt': the file has 2 hard links"):
        fs.write_text("linked.txt", "overwritten")
    assert secret.read_text() == "top secret"
    assert fs.exists("linked.txt")
    fs.delete("linked.txt")  # removing the inside name leaves the other one alone
    assert secret.read_text() == "top secret"
    fs.write_text("linked.txt", "a file of its own now")
    assert secret.read_text() == "top secret"


def test_two_names_for_one_file_inside_the_root_are_refused_too(layout: tuple[Path, Path]) -> None:
    root, _ = layout
    fs = HostFilesystem(root)
    fs.write_text("a.txt", "shared")
    os.link(root / "a.txt", root / "b.txt")
    for name in ("a.txt", "b.txt"):
        with pytest.raises(UnsafePathError, match="hard links"):
            fs.read_text(name)


@pytest.mark.timeout(20)
def test_a_fifo_is_refused_instead_of_blocking(layout: tuple[Path, Path]) -> None:
    root, _ = layout
    os.mkfifo(root / "pipe")
    fs = HostFilesystem(root)
    with pytest.raises(UnsafePathError, match=r"cannot read 'pipe': it is a FIFO, not a regular file"):
        fs.read_bytes("pipe")
    with pytest.raises(UnsafePathError, match=r"'pipe'.*not a regular file"):
        fs.write_text("pipe", "x")  # nobody reading
    reader = os.open(root / "pipe", os.O_RDONLY | os.O_NONBLOCK)
    try:
        with pytest.raises(UnsafePathError, match="it is a FIFO"):
            fs.write_text("pipe", "x")  # somebody reading: still not a file
        assert os.read(reader, 10) == b""  # and nothing was written into it
    finally:
        os.close(reader)
    assert fs.list_dir() == ("pipe",)


@pytest.mark.timeout(20)
def test_a_file_swapped_for_a_fifo_after_the_check_is_refused_on_the_open_file(
    layout: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, _ = layout
    fs = HostFilesystem(root)
    fs.write_text("real.txt", "x")
    os.mkfifo(root / "pipe")
    regular = os.lstat(root / "real.txt")
    import weakprompt.resources._host_fs as module

    monkeypatch.setattr(module.os, "lstat", lambda _path: regular)  # the check saw a regular file
    with pytest.raises(UnsafePathError, match="it is a FIFO"):
        fs.read_bytes("pipe")


def test_a_final_symlink_swapped_in_after_resolving_is_not_followed(
    layout: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, outside = layout
    os.symlink(outside / "secret.txt", root / "swapped")
    fs = HostFilesystem(root)
    monkeypatch.setattr(os.path, "realpath", lambda p, **_: os.fspath(p))  # resolved before the swap
    monkeypatch.setattr(os, "lstat", lambda _p: os.stat(outside / "secret.txt"))
    with pytest.raises(UnsafePathError, match="'swapped'") as failure:
        fs.read_text("swapped")
    _no_host_path(root, failure.value)
    with pytest.raises(UnsafePathError, match="'swapped'"):
        fs.write_text("swapped", "overwritten")
    monkeypatch.undo()
    assert (outside / "secret.txt").read_text() == "top secret"


@pytest.mark.parametrize(
    ("code", "kind", "message"),
    [
        (errno.EACCES, PermissionError, "cannot read 'f.txt': permission denied"),
        (errno.EPERM, PermissionError, "cannot read 'f.txt': permission denied"),
        (errno.EIO, OSError, r"\[Errno 5\] cannot read 'f.txt': Input/output error"),
        (errno.ENOTDIR, NotADirectoryError, "a part of the path is a file"),
        (errno.EISDIR, IsADirectoryError, "cannot read 'f.txt': it is a directory"),
        (errno.ENXIO, UnsafePathError, "cannot read 'f.txt': it is not a regular file"),
    ],
)
def test_other_os_errors_name_the_path_as_given(
    layout: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, code: int, kind: type[Exception], message: str
) -> None:
    root, _ = layout
    fs = HostFilesystem(root)
    fs.write_text("f.txt", "x")

    def failing(path: object, *_args: object) -> int:
        raise OSError(code, os.strerror(code), os.fspath(path))  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", failing)
    with pytest.raises(kind, match=message) as failure:
        fs.read_bytes("f.txt")
    assert type(failure.value) is kind
    assert getattr(failure.value, "filename", None) is None
    _no_host_path(root, failure.value)
