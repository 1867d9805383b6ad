"""InMemoryFilesystem snapshots: O(1) to take, exact to restore."""

from __future__ import annotations

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, invariant, rule

from weakprompt.resources import InMemoryFilesystem, InMemorySnapshot, Snapshotable


def test_initial_files_accept_text_and_bytes() -> None:
    fs = InMemoryFilesystem({"a.txt": "text", "b/c.bin": b"\x01"})
    assert fs.read_text("a.txt") == "text"
    assert fs.read_bytes("b/c.bin") == b"\x01"
    assert "2 files" in repr(fs)
    assert isinstance(fs, Snapshotable)


def test_restore_is_exact_and_snapshot_is_unaffected_by_later_writes() -> None:
    fs = InMemoryFilesystem({"keep.txt": "1", "dir/x.txt": "2"})
    snap = fs.snapshot()
    fs.write_text("keep.txt", "changed")
    fs.write_text("new/file.txt", "3")
    fs.delete("dir/x.txt")
    assert snap.files == {"keep.txt": b"1", "dir/x.txt": b"2"}
    fs.restore(snap)
    assert fs.read_text("keep.txt") == "1"
    assert fs.read_text("dir/x.txt") == "2"
    assert not fs.exists("new")
    assert fs.list_dir() == ("dir/", "keep.txt")
    assert fs.snapshot() == snap


def test_snapshot_shares_the_table_until_the_next_write() -> None:
    fs = InMemoryFilesystem({"a": "1"})
    first = fs.snapshot()
    second = fs.snapshot()
    assert first.files is second.files  # no copy between snapshots
    fs.restore(first)
    third = fs.snapshot()
    assert third.files is first.files  # views are reused, never nested
    fs.write_text("b", "2")
    assert fs.snapshot().files is not first.files


def test_snapshot_content_cannot_be_mutated() -> None:
    fs = InMemoryFilesystem({"a": "1"})
    snap = fs.snapshot()
    with pytest.raises(TypeError):
        snap.files["a"] = b"2"  # type: ignore[index]


def test_restore_rejects_foreign_snapshots() -> None:
    fs = InMemoryFilesystem()
    with pytest.raises(TypeError, match="takes an InMemorySnapshot, got dict"):
        fs.restore({})


def test_same_restored_snapshot_can_be_restored_twice() -> None:
    fs = InMemoryFilesystem({"a": "1"})
    snap = fs.snapshot()
    fs.write_text("a", "2")
    fs.restore(snap)
    fs.write_text("a", "3")
    fs.restore(snap)
    assert fs.read_text("a") == "1"


names = st.sampled_from(["a", "b", "d/a", "d/b", "d/e/f"])


class MemoryFsMachine(RuleBasedStateMachine):
    """Random writes, deletes, snapshots and restores against a dict model."""

    snaps = Bundle("snaps")

    def __init__(self) -> None:
        super().__init__()
        self.fs = InMemoryFilesystem()
        self.model: dict[str, bytes] = {}

    @rule(path=names, data=st.binary(max_size=4))
    def write(self, path: str, data: bytes) -> None:
        blocked = any(p == path or p.startswith(path + "/") or path.startswith(p + "/") for p in self.model)
        blocked = blocked and path not in self.model
        try:
            self.fs.write_bytes(path, data)
        except (IsADirectoryError, NotADirectoryError):
            assert blocked
            return
        assert not blocked
        self.model[path] = data

    @rule(path=names)
    def delete(self, path: str) -> None:
        if path in self.model:
            self.fs.delete(path)
            del self.model[path]
        else:
            with pytest.raises((FileNotFoundError, IsADirectoryError)):
                self.fs.delete(path)

    @rule(target=snaps)
    def snapshot(self) -> tuple[InMemorySnapshot, dict[str, bytes]]:
        return self.fs.snapshot(), dict(self.model)

    @rule(saved=snaps)
    def restore(self, saved: tuple[InMemorySnapshot, dict[str, bytes]]) -> None:
        snap, model = saved
        self.fs.restore(snap)
        self.model = dict(model)

    @invariant()
    def matches_model(self) -> None:
        assert dict(self.fs.snapshot().files) == self.model
        for path, data in self.model.items():
            assert self.fs.read_bytes(path) == data
        expected_top = sorted({p.split("/")[0] + ("/" if "/" in p else "") for p in self.model})
        assert list(self.fs.list_dir()) == expected_top


TestMemoryFsMachine = MemoryFsMachine.TestCase
