"""Any schema object weakprompt did not create marks a foreign database: refused, left byte-identical.

A database holding only a view used to be taken for an empty one, and the
store added its tables beside the view.
"""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
import tempfile
from collections.abc import Generator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from weakprompt.errors import SchemaVersionError, StoreError
from weakprompt.store import LATEST_VERSION, Store
from weakprompt.store.migrations import foreign_objects


@contextmanager
def _raw(path: Path) -> Generator[sqlite3.Connection]:
    conn = sqlite3.connect(path)
    try:
        with conn:
            yield conn
    finally:
        conn.close()


def _digest(folder: Path) -> dict[str, str]:
    """Every database and journal file in ``folder``, hashed (SQLite may add empty WAL companions)."""
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.iterdir())
        if not p.name.endswith(("-wal", "-shm"))
    }


def test_a_database_holding_only_a_view_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "views.db"
    with _raw(path) as raw:
        raw.execute("create view answer as select 42 as x")
    before = _digest(tmp_path)
    with pytest.raises(SchemaVersionError, match=r"not a weakprompt store.*view 'answer'"):
        Store.open(path)
    with pytest.raises(SchemaVersionError, match=r"view 'answer'"):
        Store.open(path, read_only=True)
    assert _digest(tmp_path) == before


def test_a_read_only_open_reads_a_store_of_ours_past_a_table_added_to_it(tmp_path: Path) -> None:
    """The inspector may be told to read an application's own table kept in the store's database."""
    path = tmp_path / "s.db"
    Store.open(path).close()
    with _raw(path) as raw:
        raw.execute("create table runs_on_hold (session_id text)")
    with Store.open(path, read_only=True) as reader:
        assert reader.schema_version == LATEST_VERSION
    with pytest.raises(SchemaVersionError, match="table 'runs_on_hold'"):
        Store.open(path)  # a writer would migrate and write into it: refused


def test_a_schema_version_error_is_a_store_error() -> None:
    assert issubclass(SchemaVersionError, StoreError)


def test_a_store_of_ours_has_no_foreign_objects(tmp_path: Path) -> None:
    with Store.open(tmp_path / "s.db") as store, store.read() as conn:
        assert foreign_objects(conn) == []


def test_sqlite_statistics_are_not_foreign(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    Store.open(path).close()
    with _raw(path) as raw:
        raw.execute("ANALYZE")
    with Store.open(path) as store, store.read() as conn:
        assert foreign_objects(conn) == []


def test_many_foreign_objects_are_named_up_to_five(tmp_path: Path) -> None:
    path = tmp_path / "many.db"
    with _raw(path) as raw:
        for i in range(7):
            raw.execute(f"create view v{i} as select {i}")
    with pytest.raises(SchemaVersionError, match=r"view 'v0', .* view 'v4' and 2 more"):
        Store.open(path)


# Objects someone else may add, to an empty database or beside a store of ours.
FOREIGN = {
    "view": ("create view answer as select 42 as x", "view 'answer'"),
    "view named like ours": ("create view run_journal_view as select 1 as x", "view 'run_journal_view'"),
    "table": ("create table invoices (id integer primary key)", "table 'invoices'"),
    "index on a table of theirs": (
        "create table notes (body text); create index notes_body on notes (body)",
        "index 'notes_body'",
    ),
    "trigger": (
        "create table audit (x); create trigger audit_insert after insert on audit begin select 1; end",
        "trigger 'audit_insert'",
    ),
}
OURS_EXTRA = {
    "index on a table of ours": ("create index my_roles on commits (role)", "index 'my_roles'"),
    "trigger on a table of ours": (
        "create trigger on_commit after insert on commits begin select 1; end",
        "trigger 'on_commit'",
    ),
}


@settings(max_examples=40, deadline=None)
@given(
    base=st.sampled_from(["empty", "ours", "ours in rollback mode"]),
    picked=st.sets(st.sampled_from(sorted(FOREIGN) + sorted(OURS_EXTRA)), min_size=1),
)
def test_any_foreign_object_is_refused_and_the_file_left_byte_identical(base: str, picked: set[str]) -> None:
    folder = Path(tempfile.mkdtemp(prefix="wp-foreign-"))
    try:
        path = folder / "db.sqlite"
        if base.startswith("ours"):
            Store.open(path).close()
            if base == "ours in rollback mode":
                with _raw(path) as raw:
                    raw.execute("PRAGMA journal_mode = DELETE")
        objects = {**FOREIGN, **OURS_EXTRA}
        with _raw(path) as raw:
            for name in sorted(picked):
                if name in OURS_EXTRA and base == "empty":
                    raw.executescript(
                        "create table if not exists commits (role text);"
                    )  # a table named like ours
                raw.executescript(objects[name][0])
        before = _digest(folder)
        with pytest.raises(SchemaVersionError, match="not a weakprompt store") as refused:
            Store.open(path)
        shown = str(refused.value)
        named = [objects[name][1] for name in picked] + ["table 'audit'", "table 'notes'"]
        assert any(n in shown for n in named), shown
        assert _digest(folder) == before
        if base == "empty":
            with pytest.raises(SchemaVersionError, match="not a weakprompt store"):
                Store.open(path, read_only=True)
        else:  # a read-only open never writes: it reads a store of ours past what was added to it
            Store.open(path, read_only=True).close()
        assert _digest(folder) == before
    finally:
        shutil.rmtree(folder, ignore_errors=True)
