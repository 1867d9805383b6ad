"""Schema version 3 (stored tool outputs): upgrading a version-2 database keeps its data."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import inspect

from weakprompt.clock import FakeClock
from weakprompt.jsontypes import JSONObject
from weakprompt.messages import ToolCall
from weakprompt.runtime.results import ToolOutputStore
from weakprompt.store import LATEST_VERSION, MIGRATIONS, Store
from weakprompt.store.engine import WRITE_OPTION, build_engine, normalize_url
from weakprompt.store.migrations import migrate, read_version
from weakprompt.transcript import Transcript

TOOL: JSONObject = {
    "name": "ping",
    "description": "Ping a host.",
    "parameters": {"type": "object", "properties": {}},
}


def _write_v2(path: Path) -> None:
    """A database built by steps 1-2 only (each step's DDL is frozen), then filled with a session."""
    engine = build_engine(normalize_url(path))
    try:
        with engine.connect() as conn:
            conn.execution_options(**{WRITE_OPTION: True})
            with conn.begin():
                assert migrate(conn, FakeClock(), migrations=MIGRATIONS[:2]) == (0, 2)
    finally:
        engine.dispose()


def _fill_v2(path: Path) -> list[str]:
    # Fill it through the transcript, bypassing Store.open (which would migrate to v3 first).
    # Today's transcript reads the forks table (a later version's) to find a chain: it is made
    # for the filling and dropped after, so the file is back at exactly version 2.
    engine = build_engine(normalize_url(path))
    forks = next(step for step in MIGRATIONS if "forks" in step.description)
    with engine.begin() as conn:
        forks.apply(conn)
    store = Store(engine, url=normalize_url(path), clock=FakeClock(), schema_version=2)
    try:
        transcript = Transcript(store, "old-session")
        transcript.set_tools([TOOL])
        transcript.system("Be brief.")
        transcript.user("Ping the host.")
        transcript.assistant(tool_calls=[ToolCall("c1", "ping", "{}")])
        transcript.tool_result("c1", "ping", "pong")
        return [c.hash for c in transcript.log()]
    finally:
        with engine.begin() as conn:
            conn.exec_driver_sql("DROP TABLE forks")
        store.close()


def test_version_3_adds_the_output_tables() -> None:
    assert MIGRATIONS[2].version == 3
    assert "tool outputs" in MIGRATIONS[2].description
    assert LATEST_VERSION >= 3
    with Store.open("sqlite://") as store:
        with store.read() as conn:
            names = set(inspect(conn).get_table_names())
    assert {"tool_output_blobs", "tool_outputs"} <= names


def test_v2_database_upgrades_with_transcript_data_intact(tmp_path: Path) -> None:
    path = tmp_path / "v2.db"
    _write_v2(path)
    hashes = _fill_v2(path)
    engine = build_engine(normalize_url(path))
    try:
        with engine.connect() as conn:
            assert read_version(conn) == 2
            assert "tool_outputs" not in inspect(conn).get_table_names()
    finally:
        engine.dispose()

    with Store.open(path) as store:
        assert store.schema_version == LATEST_VERSION
        transcript = Transcript(store, "old-session")
        assert [c.hash for c in transcript.log()] == hashes
        compiled = transcript.compile()
        assert [m.content for m in compiled.messages] == ["Be brief.", "Ping the host.", "", "pong"]
        assert [t["name"] for t in compiled.tools] == ["ping"]
        # The new tables work on the upgraded file, and old sessions simply have no stored outputs.
        outputs = ToolOutputStore(store, "old-session")
        assert outputs.list_results() == []
        ref = outputs.store_result("c2", "ping", "{}", "pong again")
    with Store.open(path) as store:
        found = ToolOutputStore(store, "old-session").get_by_handle(ref.handle)
        assert found is not None and found.data == b"pong again"
        assert [c.hash for c in Transcript(store, "old-session").log()] == hashes
