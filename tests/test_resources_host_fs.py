"""HostFilesystem stays inside its root, symlinks included (real temp dirs)."""

from __future__ import annotations

import os
import re
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
