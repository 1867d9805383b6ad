"""A store killed while it is created, or while a write is under way, still opens afterwards.

A SIGKILL during the first open used to leave a file with a hot rollback
journal; the read-only check that opening starts with cannot roll one back,
so every later open (and the inspector) failed with "readonly database".
Now a new file is built beside its path and linked into place whole, and a
hot journal is rolled back through a writable connection before any check.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from weakprompt.errors import SchemaVersionError, StoreError
from weakprompt.store import LATEST_VERSION, Store, opening
from weakprompt.transcript import Transcript

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "src")}

# Dies (SIGKILL) in the middle of a write transaction on a rollback-journal file, after some of
# its pages have spilled into the database: what a kill during a migration leaves.
_KILLED_WRITER = textwrap.dedent(
    """
    import os, signal, sqlite3, sys
    conn = sqlite3.connect(sys.argv[1], isolation_level=None)
    conn.execute("PRAGMA journal_mode = DELETE")
    conn.execute("PRAGMA cache_size = 2")
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("CREATE TABLE half_built (x)")
    for i in range(300):
        conn.execute("INSERT INTO half_built VALUES (?)", ("x" * 4000,))
    os.kill(os.getpid(), signal.SIGKILL)
    """
)


def _kill_a_writer_midway(path: Path) -> None:
    subprocess.run([sys.executable, "-c", _KILLED_WRITER, str(path)], check=False, env=ENV)
    journal = Path(f"{path}-journal")
    assert journal.exists() and journal.stat().st_size > 0, "the writer left no hot journal"


def _in_rollback_mode(path: Path) -> None:
    with Store.open(path) as store:
        Transcript(store, "s").user("keep me")
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA journal_mode = DELETE")
    finally:
        conn.close()


def _kept(store: Store) -> list[str]:
    return [m.content for m in Transcript(store, "s").compile().messages]


@pytest.mark.parametrize("read_only", [True, False], ids=["read-only", "writable"])
def test_a_hot_journal_left_in_a_store_of_ours_is_rolled_back_on_the_next_open(
    tmp_path: Path, read_only: bool
) -> None:
    path = tmp_path / "s.db"
    _in_rollback_mode(path)
    _kill_a_writer_midway(path)
    with Store.open(path, read_only=read_only) as store:  # the inspector's open first, or a writer's
        assert store.schema_version == LATEST_VERSION
        assert _kept(store) == ["keep me"]
        with store.read() as conn:
            assert (
                conn.exec_driver_sql("SELECT count(*) FROM sqlite_master WHERE name = 'half_built'").scalar()
                == 0
            )
    assert not Path(f"{path}-journal").exists() or Path(f"{path}-journal").stat().st_size == 0


def test_a_hot_journal_from_an_interrupted_creation_in_place_leaves_a_new_store(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    path.touch()  # an empty file is created in place, not beside
    _kill_a_writer_midway(path)
    with pytest.raises(SchemaVersionError, match="was being created when its writer stopped"):
        Store.open(path, read_only=True)
    with Store.open(path) as store:
        Transcript(store, "s").user("keep me")
    with Store.open(path, read_only=True) as reader:
        assert _kept(reader) == ["keep me"]


def test_a_hot_journal_that_cannot_be_rolled_back_here_is_named_with_the_way_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.db"
    _in_rollback_mode(path)
    _kill_a_writer_midway(path)

    def no_access(*_args: object, **_kwargs: object) -> bool:
        return False

    monkeypatch.setattr(opening.os, "access", no_access)  # a read-only directory
    with pytest.raises(StoreError, match=r"hot journal .* open it once with write access"):
        Store.open(path, read_only=True)


def test_a_hot_journal_sqlite_cannot_roll_back_is_a_store_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.db"
    _in_rollback_mode(path)
    _kill_a_writer_midway(path)

    class Failing:
        def execute(self, sql: str) -> None:
            raise sqlite3.OperationalError("disk I/O error")

        def close(self) -> None:
            pass

    def connect(*_args: object, **_kwargs: object) -> Failing:
        return Failing()

    monkeypatch.setattr(opening.sqlite3, "connect", connect)
    with pytest.raises(StoreError, match=r"cannot roll back the hot journal .*disk I/O error"):
        Store.open(path)


def test_a_new_store_never_appears_half_built(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """At the moment the file appears at its path, it is already a whole store in WAL mode."""
    path = tmp_path / "new.db"
    seen: list[int] = []
    real_link = os.link

    def link(source: str | os.PathLike[str], target: str | os.PathLike[str]) -> None:
        assert not path.exists()
        conn = sqlite3.connect(f"file:{source}?mode=ro", uri=True)
        try:
            seen.append(int(conn.execute("SELECT max(version) FROM weakprompt_schema").fetchone()[0]))
            assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        finally:
            conn.close()
        real_link(source, target)

    monkeypatch.setattr(opening.os, "link", link)
    Store.open(path).close()
    assert seen == [LATEST_VERSION]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new.db"]  # nothing left beside it


def test_a_creator_that_loses_the_race_opens_the_winners_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.db"
    other = tmp_path / "other" / "s.db"
    other.parent.mkdir()
    with Store.open(other) as winner:
        Transcript(winner, "s").user("the winner's")

    def link(source: str | os.PathLike[str], target: str | os.PathLike[str]) -> None:
        shutil.copyfile(other, target)  # another process linked its store first
        raise FileExistsError(target)

    monkeypatch.setattr(opening.os, "link", link)
    with Store.open(path) as store:
        assert _kept(store) == ["the winner's"]
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_file()) == ["s.db"]


def test_a_directory_without_hard_links_falls_back_to_creating_in_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def link(source: str | os.PathLike[str], target: str | os.PathLike[str]) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(opening.os, "link", link)
    path = tmp_path / "s.db"
    with Store.open(path) as store:
        assert store.schema_version == LATEST_VERSION
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.db"]


@pytest.mark.parametrize("step", ["fsync", "link"])
def test_a_store_that_cannot_be_built_beside_its_path_is_a_store_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, step: str
) -> None:
    def fail(*_args: object) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(opening.os, step, fail)
    path = tmp_path / "s.db"
    with pytest.raises(StoreError, match=r"cannot create the store at .*Input/output error"):
        Store.open(path)
    assert list(tmp_path.iterdir()) == []


def test_leftovers_of_a_builder_that_died_are_removed(tmp_path: Path) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    leftover = tmp_path / f".s.db.{dead.pid}.0badf00d.weakprompt-new"
    live = tmp_path / f".s.db.{os.getpid()}.0badf00d.weakprompt-new"  # a builder still at work
    unrelated = tmp_path / ".s.db.notes"
    for file in (leftover, Path(f"{leftover}-journal"), live, unrelated):
        file.write_bytes(b"partial")
    Store.open(tmp_path / "s.db").close()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["s.db", live.name, unrelated.name])


# --- the property: SIGKILL at random points of a first open ------------------------------------------

KILLS = 200

# Forks one child per store and kills it after a random delay within (a bit more than) the time a
# creation takes here; half the paths start as empty files, which are created in place.
_KILLER = textwrap.dedent(
    """
    import json, os, random, signal, sys, time
    from weakprompt.store import Store

    folder, kills, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    rng = random.Random(seed)
    start = time.perf_counter()
    Store.open(os.path.join(folder, "warm-up.db")).close()
    span = time.perf_counter() - start
    finished = 0
    for i in range(kills):
        path = os.path.join(folder, f"s{i}.db")
        if i % 2:
            open(path, "wb").close()
        delay = rng.uniform(0, span * 1.2)
        child = os.fork()
        if child == 0:
            try:
                Store.open(path).close()
            finally:
                os._exit(0)
        time.sleep(delay)
        os.kill(child, signal.SIGKILL)
        _, status = os.waitpid(child, 0)
        finished += os.WIFEXITED(status)
    print(json.dumps({"span": span, "finished": finished}))
    """
)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_stores_killed_at_random_points_of_their_creation_always_open_afterwards(tmp_path: Path) -> None:
    folder = tmp_path / "stores"
    folder.mkdir()
    seed = int.from_bytes(os.urandom(4), "big")
    done = subprocess.run(
        [sys.executable, "-c", _KILLER, str(folder), str(KILLS), str(seed)],
        check=True,
        capture_output=True,
        text=True,
        env=ENV,
        timeout=600,
    )
    report = json.loads(done.stdout)
    unopenable: list[str] = []
    for i in range(KILLS):
        path = folder / f"s{i}.db"
        if not path.exists():
            assert i % 2 == 0  # only a path that was missing stays missing
            continue
        try:
            try:  # the inspector's open comes first: nothing has rolled anything back yet
                with Store.open(path, read_only=True) as reader:
                    assert reader.schema_version == LATEST_VERSION
            except SchemaVersionError as exc:
                # an empty file created in place stays "not a store yet" until a writer opens it
                assert i % 2 == 1 and "not a weakprompt store yet" in str(exc), str(exc)
            with Store.open(path) as store:
                Transcript(store, "s").user("after the kill")
            with Store.open(path, read_only=True) as reader:
                assert [m.content for m in Transcript(reader, "s").compile().messages] == ["after the kill"]
        except StoreError as exc:
            unopenable.append(f"{path.name}: {exc}")
    assert unopenable == [], f"seed {seed}, {report}: {unopenable[:5]}"
    for i in range(0, KILLS, 2):  # each path opened once more sweeps what its killed builder left
        Store.open(folder / f"s{i}.db").close()
    assert [p.name for p in folder.iterdir() if p.name.endswith(".weakprompt-new")] == []
