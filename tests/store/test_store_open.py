"""Opening stores: URLs, SQLite settings, refusing foreign / newer / damaged databases."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from sqlalchemy import inspect, text

from weakprompt.clock import FakeClock
from weakprompt.errors import SchemaVersionError, StoreError
from weakprompt.store import LATEST_VERSION, MIGRATIONS, Store, tables
from weakprompt.transcript import Transcript


def test_open_memory_store_creates_latest_schema() -> None:
    with Store.open("sqlite://") as store:
        assert store.schema_version == LATEST_VERSION
        with store.read() as conn:
            names = set(inspect(conn).get_table_names())
        assert {
            "weakprompt_schema",
            "blobs",
            "commits",
            "tool_definitions",
            "tool_sets",
            "tool_set_members",
            "commit_tools",
        } <= names
        assert names == {t.name for t in tables.metadata.sorted_tables}


def test_memory_store_is_shared_between_transcripts_and_threads() -> None:
    import threading

    with Store.open("sqlite://") as store:
        Transcript(store, "s").user("hello")

        seen: list[int] = []
        thread = threading.Thread(target=lambda: seen.append(len(Transcript(store, "s").log())))
        thread.start()
        thread.join()
        assert seen == [1]


def test_file_store_uses_wal_and_foreign_keys(tmp_path: Path) -> None:
    path = tmp_path / "t.db"
    with Store.open(f"sqlite:///{path}") as store:
        with store.read() as conn:
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
            assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
    assert path.exists()


def test_bare_path_means_a_sqlite_file(tmp_path: Path) -> None:
    path = tmp_path / "bare.db"
    with Store.open(path) as store:
        Transcript(store, "s").user("x")
        assert store.url == f"sqlite:///{path}"
    with Store.open(str(path)) as store:
        assert [c.content.content for c in Transcript(store, "s").log()] == ["x"]


def test_versions_are_recorded_once_per_step(tmp_path: Path) -> None:
    path = tmp_path / "v.db"
    clock = FakeClock()
    Store.open(path, clock=clock).close()
    Store.open(path, clock=clock).close()
    rows = sqlite3.connect(path).execute("SELECT version, applied_at FROM weakprompt_schema").fetchall()
    assert rows == [(m.version, clock.now().isoformat()) for m in MIGRATIONS]


def test_foreign_keys_are_enforced(tmp_path: Path) -> None:
    with Store.open(tmp_path / "fk.db") as store:
        with pytest.raises(StoreError, match="FOREIGN KEY"), store.write() as conn:
            conn.execute(tables.commit_tools.insert().values(commit_hash="x" * 64, tool_set_hash="y" * 64))


def test_migrations_are_numbered_one_to_latest() -> None:
    assert [m.version for m in MIGRATIONS] == list(range(1, LATEST_VERSION + 1))
    assert len({m.description for m in MIGRATIONS}) == len(MIGRATIONS)


def test_migrated_schema_matches_live_table_definitions(tmp_path: Path) -> None:
    with Store.open(tmp_path / "shape.db") as store, store.read() as conn:
        inspector = inspect(conn)
        assert set(inspector.get_table_names()) == {t.name for t in tables.metadata.sorted_tables}
        for table in tables.metadata.sorted_tables:
            stored = {c["name"]: c for c in inspector.get_columns(table.name)}
            assert list(stored) == [c.name for c in table.columns], table.name
            for column in table.columns:
                assert stored[column.name]["nullable"] == column.nullable, (table.name, column.name)
            assert {tuple(fk["constrained_columns"]) for fk in inspector.get_foreign_keys(table.name)} == {
                tuple(c.parent.name for c in [fk]) for fk in table.foreign_keys
            }
        assert {i["name"] for i in inspector.get_indexes("tool_definitions")} == {"ix_tool_definitions_name"}
        assert {i["name"] for i in inspector.get_indexes("commit_tools")} == {"ix_commit_tools_tool_set_hash"}
        assert {i["name"] for i in inspector.get_indexes("tool_set_members")} == {"ix_tool_set_members_tool"}
        ddl = conn.exec_driver_sql("SELECT sql FROM sqlite_master WHERE name = 'tool_set_members'").scalar()
        assert ddl.strip().endswith("WITHOUT ROWID")


def test_close_and_context_manager() -> None:
    store = Store.open()
    assert not store.closed
    with store:
        pass
    assert store.closed
    store.close()  # idempotent
    with pytest.raises(StoreError, match="closed"):
        Transcript(store, "s").user("x")
    with pytest.raises(StoreError, match="closed"):
        _ = store.engine
    assert "closed" in repr(store)


def test_repr_hides_passwords() -> None:
    from weakprompt.store.store import _redact

    assert "secret" not in _redact("postgresql://user:secret@host/db")


def test_session_ids_lists_sessions_in_creation_order() -> None:
    clock = FakeClock()
    with Store.open(clock=clock) as store:
        Transcript(store, "b").user("1")
        clock.advance(1)
        Transcript(store, "a").user("1")
        Transcript(store, "b").user("2")
        assert store.session_ids() == ["b", "a"]


# --- refusing what is not ours ----------------------------------------------------------------------


def test_garbage_file_is_a_store_error_and_left_untouched(tmp_path: Path) -> None:
    path = tmp_path / "garbage.db"
    data = b"this is not a database, just some bytes\n" * 200
    path.write_bytes(data)
    with pytest.raises(StoreError, match="not a database"):
        Store.open(path)
    assert path.read_bytes() == data


def test_foreign_sqlite_database_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as raw:
        raw.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)")
        raw.execute("INSERT INTO invoices VALUES (1, 9.5)")
    with pytest.raises(SchemaVersionError, match=r"not a weakprompt store.*invoices"):
        Store.open(path)
    with sqlite3.connect(path) as raw:
        names = [r[0] for r in raw.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        assert names == ["invoices"]
        assert raw.execute("SELECT total FROM invoices").fetchall() == [(9.5,)]


def test_newer_schema_version_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "future.db"
    with Store.open(path) as store:
        Transcript(store, "s").user("keep me")
        with store.write() as conn:
            conn.execute(
                tables.schema_versions.insert().values(
                    version=LATEST_VERSION + 1, description="from the future", applied_at="2030-01-01"
                )
            )
    with pytest.raises(SchemaVersionError, match=rf"version {LATEST_VERSION + 1}.*upgrade weakprompt"):
        Store.open(path)
    with sqlite3.connect(path) as raw:
        assert raw.execute("SELECT max(version) FROM weakprompt_schema").fetchone() == (LATEST_VERSION + 1,)
        assert raw.execute("SELECT count(*) FROM commits").fetchone() == (1,)


def test_empty_version_table_is_damaged(tmp_path: Path) -> None:
    path = tmp_path / "empty-version.db"
    Store.open(path).close()
    with sqlite3.connect(path) as raw:
        raw.execute("DELETE FROM weakprompt_schema")
    with pytest.raises(SchemaVersionError, match="empty"):
        Store.open(path)


def test_missing_table_is_damaged(tmp_path: Path) -> None:
    path = tmp_path / "missing.db"
    Store.open(path).close()
    with sqlite3.connect(path) as raw:
        raw.execute("DROP TABLE commit_tools")
    with pytest.raises(SchemaVersionError, match="missing table 'commit_tools'"):
        Store.open(path)


def test_missing_column_is_damaged(tmp_path: Path) -> None:
    path = tmp_path / "column.db"
    Store.open(path).close()
    with sqlite3.connect(path) as raw:
        raw.execute("ALTER TABLE blobs DROP COLUMN size_bytes")
    with pytest.raises(SchemaVersionError, match=r"blobs.*\['size_bytes'\]"):
        Store.open(path)


def test_unopenable_path_is_a_store_error(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match=r"cannot create the store .* does not exist"):
        Store.open(tmp_path / "no" / "such" / "dir" / "x.db")


@pytest.mark.parametrize("url", ["nosuchdialect://x", "://"])
def test_bad_url_is_a_store_error(url: str) -> None:
    with pytest.raises(StoreError):
        Store.open(url)


def test_database_errors_during_use_become_store_errors(tmp_path: Path) -> None:
    with Store.open(tmp_path / "e.db") as store:
        with pytest.raises(StoreError, match="no such table"), store.read() as conn:
            conn.execute(text("SELECT * FROM nope"))


def test_portable_insert_ignore_keeps_the_first_row() -> None:
    from weakprompt.store.sql import insert_ignore_portable

    with Store.open() as store, store.write() as conn:
        row = {"hash": "h" * 64, "content": "1", "size_bytes": 1, "created_at": "first"}
        insert_ignore_portable(conn, tables.blobs, [row, {**row, "created_at": "second"}])
        insert_ignore_portable(conn, tables.blobs, [{**row, "created_at": "third"}])
        assert conn.execute(tables.blobs.select()).mappings().all() == [row]


def test_insert_ignore_keeps_the_first_row() -> None:
    from weakprompt.store.sql import insert_ignore

    with Store.open() as store, store.write() as conn:
        row = {"hash": "h" * 64, "content": "1", "size_bytes": 1, "created_at": "first"}
        insert_ignore(conn, tables.blobs, [row])
        insert_ignore(conn, tables.blobs, [{**row, "created_at": "second"}])
        insert_ignore(conn, tables.blobs, [])
        assert conn.execute(tables.blobs.select()).mappings().all() == [row]


def test_postgres_insert_ignore_statement_is_built_without_a_server() -> None:
    from weakprompt.store.sql import _statement

    statement = _statement("postgresql", tables.blobs)
    assert statement is not None and _statement("postgresql", tables.blobs) is statement
    assert _statement("mysql", tables.blobs) is None
