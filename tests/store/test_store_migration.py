"""Upgrading a version-1 database (written by hand with raw SQL) to the current schema."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from sqlalchemy import Connection, inspect, text

from weakprompt.canonical import canonical_json, content_hash
from weakprompt.clock import FakeClock
from weakprompt.errors import SchemaVersionError
from weakprompt.store import LATEST_VERSION, MIGRATIONS, Migration, Store
from weakprompt.store.engine import build_engine
from weakprompt.store.migrations import migrate, read_version
from weakprompt.transcript import Transcript
from weakprompt.transcript.records import CommitOperation, commit_hash

# The version-1 schema exactly as the first release wrote it; never derived from current code.
V1_DDL = """
CREATE TABLE weakprompt_schema (
    version INTEGER NOT NULL PRIMARY KEY, description TEXT NOT NULL, applied_at VARCHAR(40) NOT NULL);
CREATE TABLE blobs (
    hash VARCHAR(64) NOT NULL PRIMARY KEY, content TEXT NOT NULL, size_bytes INTEGER NOT NULL,
    created_at VARCHAR(40) NOT NULL);
CREATE TABLE commits (
    hash VARCHAR(64) NOT NULL PRIMARY KEY,
    session_id VARCHAR(255) NOT NULL,
    seq INTEGER NOT NULL,
    parent_hash VARCHAR(64) REFERENCES commits (hash),
    operation VARCHAR(8) NOT NULL,
    edit_target VARCHAR(64) REFERENCES commits (hash),
    role VARCHAR(16) NOT NULL,
    blob_hash VARCHAR(64) NOT NULL REFERENCES blobs (hash),
    message TEXT,
    metadata_json TEXT NOT NULL,
    token_count INTEGER NOT NULL,
    created_at VARCHAR(40) NOT NULL,
    CONSTRAINT uq_commits_session_seq UNIQUE (session_id, seq),
    CONSTRAINT ck_commits_operation CHECK (operation IN ('APPEND', 'EDIT')));
INSERT INTO weakprompt_schema VALUES (1, 'transcript: blobs and commits', '2025-06-01T00:00:00+00:00');
"""

V1_MESSAGES = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Ping?"},
    {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "name": "ping", "arguments": "{}"}]},
    {"role": "tool", "content": "pong", "tool_call_id": "c1", "name": "ping"},
]


def write_v1_database(path: Path) -> list[str]:
    """A v1 file holding one session 's1' of four commits plus one edit of the tool result."""
    raw = sqlite3.connect(path)
    raw.executescript(V1_DDL)
    hashes: list[str] = []
    parent: str | None = None
    rows = [(m, CommitOperation.APPEND, None) for m in V1_MESSAGES]
    rows.append(({**V1_MESSAGES[3], "content": "pong (edited)"}, CommitOperation.EDIT, 3))
    for seq, (payload, operation, target_index) in enumerate(rows):
        blob = content_hash(payload)
        raw.execute(
            "INSERT OR IGNORE INTO blobs VALUES (?, ?, ?, ?)",
            (blob, canonical_json(payload), len(canonical_json(payload)), "2025-06-01T00:00:00+00:00"),
        )
        target = None if target_index is None else hashes[target_index]
        digest = commit_hash(
            session_id="s1",
            parent=parent,
            operation=operation,
            edit_target=target,
            blob_hash=blob,
            message=None,
            metadata={},
        )
        raw.execute(
            "INSERT INTO commits VALUES (?, 's1', ?, ?, ?, ?, ?, ?, NULL, '{}', ?, ?)",
            (
                digest,
                seq,
                parent,
                operation.value,
                target,
                payload["role"],
                blob,
                3,
                f"2025-06-01T00:00:0{seq}+00:00",
            ),
        )
        hashes.append(digest)
        parent = digest
    raw.commit()
    raw.close()
    return hashes


@pytest.fixture
def v1_path(tmp_path: Path) -> Path:
    path = tmp_path / "v1.db"
    write_v1_database(path)
    return path


def test_v1_database_opens_with_data_intact(v1_path: Path) -> None:
    hashes = write_v1_database(v1_path.with_name("again.db"))
    with Store.open(v1_path) as store:
        assert store.schema_version == LATEST_VERSION
        transcript = Transcript(store, "s1")
        log = transcript.log()
        assert [c.hash for c in log] == hashes
        assert log[-1].operation is CommitOperation.EDIT
        assert log[-1].edit_target == hashes[3]
        compiled = transcript.compile()
        assert [m.content for m in compiled.messages] == ["Be brief.", "Ping?", "", "pong (edited)"]
        assert compiled.messages[3].tool_call_id == "c1"
        assert compiled.tools == ()
        assert compiled.token_count == 12
        assert transcript.head == hashes[-1]


def test_v1_database_gains_tool_tracking(v1_path: Path) -> None:
    with Store.open(v1_path) as store:
        transcript = Transcript(store, "s1")
        info = transcript.assistant("done", tools=[{"name": "ping", "parameters": {"type": "object"}}])
        assert transcript.get_commit_tools(info.hash) == [{"name": "ping", "parameters": {"type": "object"}}]
    with sqlite3.connect(v1_path) as raw:
        versions = raw.execute(
            "SELECT version, description FROM weakprompt_schema ORDER BY version"
        ).fetchall()
    assert versions == [(m.version, m.description) for m in MIGRATIONS]
    assert versions[0] == (1, "transcript: blobs and commits")


def test_reopening_a_migrated_database_changes_nothing(v1_path: Path) -> None:
    Store.open(v1_path).close()
    before = _dump(v1_path)
    Store.open(v1_path).close()
    assert _dump(v1_path) == before


def _dump(path: Path) -> list[str]:
    with sqlite3.connect(path) as raw:
        return list(raw.iterdump())


def test_failing_step_leaves_the_old_version(tmp_path: Path) -> None:
    path = tmp_path / "fail.db"
    write_v1_database(path)

    def broken(conn: Connection) -> None:
        conn.execute(text("CREATE TABLE half_done (x INTEGER)"))
        raise RuntimeError("step exploded")

    steps = (*MIGRATIONS, Migration(LATEST_VERSION + 1, "broken", broken))
    engine = build_engine(f"sqlite:///{path}")
    try:
        with pytest.raises(RuntimeError, match="exploded"), engine.begin() as conn:
            migrate(conn, FakeClock(), migrations=steps)
        with engine.connect() as conn:
            assert read_version(conn) == 1
            assert "half_done" not in inspect(conn).get_table_names()
            assert "tool_definitions" not in inspect(conn).get_table_names()
    finally:
        engine.dispose()


def test_migrate_reports_before_and_after(tmp_path: Path) -> None:
    path = tmp_path / "steps.db"
    write_v1_database(path)
    engine = build_engine(f"sqlite:///{path}")
    try:
        with engine.begin() as conn:
            assert migrate(conn, FakeClock()) == (1, LATEST_VERSION)
        with engine.begin() as conn:
            assert migrate(conn, FakeClock()) == (LATEST_VERSION, LATEST_VERSION)
        with engine.begin() as conn, pytest.raises(SchemaVersionError):
            migrate(conn, FakeClock(), migrations=MIGRATIONS[:1])
    finally:
        engine.dispose()


def test_v1_blob_content_is_byte_identical_after_migration(v1_path: Path) -> None:
    with sqlite3.connect(v1_path) as raw:
        before = raw.execute("SELECT hash, content FROM blobs ORDER BY hash").fetchall()
    Store.open(v1_path).close()
    with sqlite3.connect(v1_path) as raw:
        after = raw.execute("SELECT hash, content FROM blobs ORDER BY hash").fetchall()
    assert before == after
    assert all(content_hash(json.loads(c)) == h for h, c in after)
