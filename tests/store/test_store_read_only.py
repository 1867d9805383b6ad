"""Store.open(read_only=True): reading a store without writing anything, even in a read-only directory."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import tempfile
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest

from weakprompt.clock import FakeClock
from weakprompt.errors import SchemaVersionError, StoreError
from weakprompt.messages import ToolCall
from weakprompt.store import LATEST_VERSION, MIGRATIONS, Store, tables
from weakprompt.store.engine import build_engine, normalize_url
from weakprompt.store.migrations import migrate
from weakprompt.transcript import Transcript

T = TypeVar("T")


def _fill(path: Path) -> list[str]:
    with Store.open(path, clock=FakeClock()) as store:
        t = Transcript(store, "s")
        t.set_tools([{"name": "f", "description": "d"}])
        t.user("question")
        t.assistant("", tool_calls=[ToolCall("c1", "f", "{}")])
        t.tool_result("c1", "f", "answer")
        return [m.content for m in t.compile().messages]


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_a_read_only_store_reads_and_refuses_every_write(tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    messages = _fill(path)
    before = path.read_bytes()
    with Store.open(path, read_only=True) as store:
        assert store.read_only
        assert "read-only" in repr(store)
        assert store.schema_version == LATEST_VERSION
        t = Transcript(store, "s")
        assert [m.content for m in t.compile().messages] == messages
        assert len(t.log()) == 3
        assert store.session_ids() == ["s"]
        with pytest.raises(StoreError, match="opened read-only: it cannot be written"):
            t.user("more")
        with pytest.raises(StoreError, match="read-only"), store.write():
            pass  # pragma: no cover - never entered
        # The connection itself refuses too (mode=ro, query_only).
        with pytest.raises(StoreError, match="attempt to write a readonly database"), store.read() as conn:
            conn.execute(tables.blobs.delete())
        with store.hold_connection():
            assert len(Transcript(store, "s").log()) == 3
    assert path.read_bytes() == before
    with Store.open(path) as store:
        assert not store.read_only
        assert len(Transcript(store, "s").log()) == 3


def test_a_store_needing_migration_is_refused_read_only_and_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    engine = build_engine(normalize_url(path))
    try:
        with engine.begin() as conn:
            migrate(conn, FakeClock(), migrations=MIGRATIONS[:1])
    finally:
        engine.dispose()
    before = _snapshot(tmp_path)
    with pytest.raises(SchemaVersionError, match=r"schema version 1.*open it once without read_only"):
        Store.open(path, read_only=True)
    assert _snapshot(tmp_path) == before


@pytest.mark.parametrize(
    ("build", "error", "message"),
    [
        (lambda p: None, StoreError, "no database file at .* to open read-only"),
        (lambda p: p.touch(), SchemaVersionError, "empty file, not a weakprompt store yet"),
        (lambda p: p.write_bytes(b"not sqlite" * 10), StoreError, "not a database"),
        (
            lambda p: sqlite3.connect(p).execute("CREATE TABLE users (id)").connection.close(),
            SchemaVersionError,
            "not a weakprompt store",
        ),
    ],
    ids=["missing", "zero bytes", "not sqlite", "foreign"],
)
def test_what_read_only_cannot_open_is_refused_untouched(
    tmp_path: Path, build: Callable[[Path], None], error: type[Exception], message: str
) -> None:
    path = tmp_path / "x.db"
    build(path)
    before = _snapshot(tmp_path)
    with pytest.raises(error, match=message):
        Store.open(path, read_only=True)
    assert _snapshot(tmp_path) == before


def test_newer_and_empty_schemas_are_refused_read_only(tmp_path: Path) -> None:
    newer = tmp_path / "newer.db"
    _fill(newer)
    with Store.open(newer) as store, store.write() as conn:
        conn.execute(
            tables.schema_versions.insert().values(
                version=LATEST_VERSION + 1, description="x", applied_at="x"
            )
        )
    with pytest.raises(SchemaVersionError, match="upgrade weakprompt"):
        Store.open(newer, read_only=True)
    empty = tmp_path / "empty.db"
    sqlite3.connect(empty).execute("PRAGMA user_version = 1").connection.close()
    with pytest.raises(SchemaVersionError, match="an empty database"):
        Store.open(empty, read_only=True)


def test_read_only_needs_a_file_or_postgresql() -> None:
    with pytest.raises(StoreError, match="in-memory database would always be empty"):
        Store.open("sqlite://", read_only=True)
    with pytest.raises(StoreError, match="read_only=True supports SQLite files and PostgreSQL"):
        Store.open("mysql+pymysql://u@localhost/db", read_only=True)


# --- a directory we may not write to ---------------------------------------------------------------------


def _unprivileged(fn: Callable[[], T]) -> T:
    """Run ``fn`` where permissions apply: in a forked child as ``nobody`` when we are root.

    Root ignores a directory's missing write bit, so as root the check runs
    in a child that dropped its privileges. The interpreter cannot load new
    modules there (its files are under root's home), so callers warm up
    everything ``fn`` needs first.
    """
    if os.geteuid() != 0:
        return fn()
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through the pipe
        os.close(read_end)
        try:
            os.setgid(65534)
            os.setuid(65534)
            payload = {"ok": fn()}
        except BaseException:
            payload = {"error": traceback.format_exc()}
        with os.fdopen(write_end, "w") as out:
            json.dump(payload, out)
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end) as incoming:
        payload = json.load(incoming)
    os.waitpid(pid, 0)
    if "error" in payload:
        pytest.fail(f"in the unprivileged child:\n{payload['error']}")
    result: T = payload["ok"]
    return result


@pytest.fixture
def shared_folder() -> Iterator[Path]:
    """A folder every user may enter (pytest's tmp_path is private to root)."""
    folder = Path(tempfile.mkdtemp(prefix="wp-read-only-"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        for entry in folder.rglob("*"):
            if entry.is_dir():
                entry.chmod(0o755)
        for entry in sorted(folder.rglob("*"), reverse=True):
            entry.rmdir() if entry.is_dir() else entry.unlink()
        folder.rmdir()


def test_a_store_in_a_read_only_directory_opens_read_only(shared_folder: Path) -> None:
    locked = shared_folder / "locked"
    locked.mkdir()
    path = locked / "r.db"
    messages = _fill(path)
    path.chmod(0o644)
    locked.chmod(0o555)
    before = _snapshot(locked)
    assert sorted(before) == ["r.db"]  # closed cleanly: no -wal or -shm left to lean on
    assert path.read_bytes()[18] == 2  # a WAL file, the hard case for read-only access

    # Warm up what the child will need: an open, a compile, a refused write, a refused normal open.
    warm = shared_folder / "warm.db"
    _fill(warm)
    with Store.open(warm, read_only=True) as store:
        Transcript(store, "s").compile()
        with pytest.raises(StoreError):
            Transcript(store, "s").user("x")

    def read() -> dict[str, object]:
        with Store.open(path, read_only=True) as store:
            t = Transcript(store, "s")
            seen = [m.content for m in t.compile().messages]
            try:
                t.user("more")
                refused = ""
            except StoreError as exc:
                refused = str(exc)
        try:
            Store.open(path).close()
            writable = "opened"
        except StoreError as exc:
            writable = str(exc)
        return {"messages": seen, "refused": refused, "writable": writable}

    seen = _unprivileged(read)
    assert seen["messages"] == messages
    assert "read-only" in str(seen["refused"])
    if os.geteuid() == 0 or not os.access(locked, os.W_OK):
        assert "cannot open the store" in str(seen["writable"])  # writing needs the directory
    assert _snapshot(locked) == before
    assert stat.S_IMODE(locked.stat().st_mode) == 0o555


def test_immutable_is_added_only_where_no_writer_can_exist(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from weakprompt.store import engine

    path = tmp_path / "r.db"
    assert engine._read_only_uri(path).endswith("?mode=ro")  # pyright: ignore[reportPrivateUsage]
    monkeypatch.setattr(engine.os, "access", lambda *_args: False)  # a directory we may not write to
    assert engine._read_only_uri(path).endswith("?mode=ro&immutable=1")  # pyright: ignore[reportPrivateUsage]
    Path(f"{path}-wal").touch()  # a WAL file: a writer may be active, so the file is not immutable
    assert engine._read_only_uri(path).endswith("?mode=ro")  # pyright: ignore[reportPrivateUsage]
    odd = tmp_path / "a ?#%.db"
    assert "a%20%3F%23%25.db?mode=ro" in engine._read_only_uri(odd)  # pyright: ignore[reportPrivateUsage]


def test_a_directory_is_not_a_store(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="cannot read"):
        Store.open(tmp_path)
    with pytest.raises(StoreError, match="cannot read"):
        Store.open(tmp_path, read_only=True)


@pytest.mark.parametrize("read_only", [False, True])
def test_a_malformed_url_is_named(read_only: bool) -> None:
    with pytest.raises(StoreError, match=r"not a database URL: '://nothing'"):
        Store.open("://nothing", read_only=read_only)
