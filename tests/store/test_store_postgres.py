"""The store on PostgreSQL, side by side with SQLite.

Most tests run once per backend (``backend_url``): a SQLite file, and a fresh
schema inside a database this module creates on the server named by
``WEAKPROMPT_PG_URL`` (dropped at the end). Without that variable the
PostgreSQL cases skip, except under CI, where they fail: CI must never pass
without having run them.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import Engine, LargeBinary, create_engine, inspect, select, text

from weakprompt.clock import FakeClock
from weakprompt.errors import SchemaVersionError, StoreError, TranscriptError
from weakprompt.jsontypes import JSONObject
from weakprompt.messages import ToolCall
from weakprompt.runtime.results import SummaryRegistry, ToolOutputStore, ToolOutputStoreError
from weakprompt.store import LATEST_VERSION, MIGRATIONS, Store, tables
from weakprompt.store.engine import normalize_url
from weakprompt.store.locks import SCHEMA_LOCK, advisory_lock, lock_key
from weakprompt.store.sql import insert_ignore
from weakprompt.transcript import CommitInfo, Transcript

WEATHER: JSONObject = {
    "name": "get_weather",
    "description": "Weather for a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
SEARCH: JSONObject = {
    "name": "search",
    "description": "Search.",
    "parameters": {"type": "object", "properties": {}},
}


def _count(store: Store, table: str) -> int:
    with store.read() as conn:
        return int(conn.execute(text(f"SELECT count(*) FROM {table}")).scalar_one())


def _assert_chain(log: list[CommitInfo]) -> None:
    """Sequence numbers 0..n-1, each commit's parent the one before it."""
    assert [c.seq for c in log] == list(range(len(log)))
    assert [c.parent for c in log] == [None, *(c.hash for c in log[:-1])]


def _conversation(t: Transcript) -> None:
    """A fixed turn sequence touching every commit kind: tools, calls, results, an edit."""
    t.set_tools([WEATHER, SEARCH])
    t.system("You answer weather questions. ✓")
    t.user("Weather in Zürich?", metadata={"lang": "en", "nested": {"n": [1, 2.5, None]}})
    t.assistant("", tool_calls=[ToolCall("call_1", "get_weather", {"city": "Zürich"})])
    result = t.tool_result("call_1", "get_weather", "12°C and rain")
    t.tool_result("call_1", "get_weather", "12°C, light rain", edit=result.hash)
    t.set_tools([SEARCH])
    t.assistant("It is 12°C with light rain.", message="final")


# --- opening and migrating ---------------------------------------------------------------------------


def test_open_builds_the_latest_schema_once(backend_url: str) -> None:
    clock = FakeClock()
    with Store.open(backend_url, clock=clock) as store:
        assert store.schema_version == LATEST_VERSION
        with store.read() as conn:
            assert set(inspect(conn).get_table_names()) == {t.name for t in tables.metadata.sorted_tables}
    with Store.open(backend_url, clock=clock) as store, store.read() as conn:
        rows = conn.execute(text("SELECT version, applied_at FROM weakprompt_schema ORDER BY version")).all()
    assert [tuple(r) for r in rows] == [(m.version, clock.now().isoformat()) for m in MIGRATIONS]


def test_migrated_columns_match_the_live_tables(backend_url: str) -> None:
    with Store.open(backend_url) as store, store.read() as conn:
        inspector = inspect(conn)
        for table in tables.metadata.sorted_tables:
            stored = {c["name"]: c for c in inspector.get_columns(table.name)}
            assert list(stored) == [c.name for c in table.columns], table.name
            for column in table.columns:
                assert stored[column.name]["nullable"] == column.nullable, (table.name, column.name)
        # Compressed payloads are real binary columns (bytea / BLOB), not text.
        data = {c["name"]: c for c in inspector.get_columns("tool_output_blobs")}["data"]
        assert isinstance(data["type"], LargeBinary)


def test_concurrent_opens_of_a_fresh_database_migrate_it_once(backend_url: str) -> None:
    opened: list[int] = []
    errors: list[BaseException] = []
    start = threading.Barrier(4)

    def open_store() -> None:
        start.wait()
        try:
            with Store.open(backend_url) as store:
                opened.append(store.schema_version)
        except BaseException as exc:  # pragma: no cover - reported by the assertion below
            errors.append(exc)

    workers = [threading.Thread(target=open_store) for _ in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert errors == []
    assert opened == [LATEST_VERSION] * 4
    with Store.open(backend_url) as store:
        assert _count(store, "weakprompt_schema") == len(MIGRATIONS)


def test_newer_schema_is_refused_and_left_untouched(backend_url: str) -> None:
    with Store.open(backend_url) as store:
        Transcript(store, "s").user("keep me")
        with store.write() as conn:
            conn.execute(
                tables.schema_versions.insert().values(
                    version=LATEST_VERSION + 1, description="from the future", applied_at="2030-01-01"
                )
            )
    with pytest.raises(SchemaVersionError, match=rf"version {LATEST_VERSION + 1}.*upgrade weakprompt"):
        Store.open(backend_url)
    engine = create_engine(backend_url)
    try:
        with engine.connect() as conn:
            assert conn.execute(text("SELECT max(version) FROM weakprompt_schema")).scalar() == (
                LATEST_VERSION + 1
            )
            assert conn.execute(text("SELECT count(*) FROM commits")).scalar() == 1
    finally:
        engine.dispose()


def test_a_foreign_database_is_refused_and_left_untouched(backend_url: str) -> None:
    engine = create_engine(backend_url)
    try:
        with engine.begin() as conn:
            conn.execute(text("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)"))
        with pytest.raises(SchemaVersionError, match=r"not a weakprompt store.*invoices"):
            Store.open(backend_url)
        with engine.connect() as conn:
            assert set(inspect(conn).get_table_names()) == {"invoices"}
    finally:
        engine.dispose()


@pytest.mark.parametrize(
    ("ddl", "named"),
    [
        ("CREATE VIEW answer AS SELECT 42 AS x", "view 'answer'"),
        ("CREATE SEQUENCE tickets", "sequence 'tickets'"),
        ("CREATE MATERIALIZED VIEW totals AS SELECT 1 AS n", "materialized view 'totals'"),
    ],
)
def test_a_database_holding_no_table_but_a_foreign_object_is_refused(
    pg_url: str, ddl: str, named: str
) -> None:
    engine = create_engine(pg_url)
    try:
        with engine.begin() as conn:
            conn.execute(text(ddl))
        with pytest.raises(SchemaVersionError, match=rf"not a weakprompt store.*{named}"):
            Store.open(pg_url)
        with engine.connect() as conn:
            assert inspect(conn).get_table_names() == []
    finally:
        engine.dispose()


def test_a_trigger_or_index_added_to_a_store_of_ours_is_foreign(pg_url: str) -> None:
    Store.open(pg_url).close()
    engine = create_engine(pg_url)
    try:
        with engine.begin() as conn:
            conn.execute(text("CREATE INDEX my_roles ON commits (role)"))
            conn.execute(
                text("CREATE FUNCTION noop() RETURNS trigger LANGUAGE plpgsql AS 'BEGIN RETURN NEW; END'")
            )
            conn.execute(
                text("CREATE TRIGGER on_commit BEFORE INSERT ON commits FOR EACH ROW EXECUTE FUNCTION noop()")
            )
    finally:
        engine.dispose()
    with pytest.raises(SchemaVersionError, match=r"index 'my_roles', trigger 'on_commit'"):
        Store.open(pg_url)


_LEASE_HOLDER = """
import sys, time
from weakprompt.store import Store
from weakprompt.store.run_leases import take_session_lease
store = Store.open(sys.argv[1])
take_session_lease(store, "ticket-1")
print("held", flush=True)
time.sleep(600)
"""


def test_a_session_held_by_another_process_is_busy_until_that_process_dies(backend_url: str) -> None:
    from weakprompt.errors import SessionBusyError
    from weakprompt.store.run_leases import take_session_lease

    Store.open(backend_url).close()
    holder = subprocess.Popen(
        [sys.executable, "-c", _LEASE_HOLDER, backend_url], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with Store.open(backend_url) as store:
            with pytest.raises(SessionBusyError, match=rf"in process {holder.pid} "):
                take_session_lease(store, "ticket-1")
            holder.kill()
            holder.wait()
            take_session_lease(store, "ticket-1").release()  # a dead holder's row no longer counts
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()


def test_one_run_per_session_across_store_objects_on_postgres(pg_url: str) -> None:
    from weakprompt.errors import SessionBusyError
    from weakprompt.store.run_leases import take_session_lease

    with Store.open(pg_url) as first, Store.open(pg_url) as second:
        lease = take_session_lease(first, "ticket-1")
        with pytest.raises(SessionBusyError, match="'ticket-1' is already running"):
            take_session_lease(second, "ticket-1")
        lease.release()
        take_session_lease(second, "ticket-1").release()


# --- transcripts -------------------------------------------------------------------------------------


def test_transcript_round_trip_survives_reopening(backend_url: str) -> None:
    with Store.open(backend_url, clock=FakeClock()) as store:
        t = Transcript(store, "s")
        _conversation(t)
        compiled = t.compile()
        log = t.log()
    assert [m.content for m in compiled.messages] == [
        "You answer weather questions. ✓",
        "Weather in Zürich?",
        "",
        "12°C, light rain",
        "It is 12°C with light rain.",
    ]
    assert [tool["name"] for tool in compiled.tools] == ["search"]
    with Store.open(backend_url) as store:
        again = Transcript(store, "s")
        assert again.compile() == compiled
        assert again.log() == log
        assert again.get_commit_tools(log[2].hash) == [WEATHER, SEARCH]
        assert store.session_ids() == ["s"]
    _assert_chain(log)
    assert log[4].operation.value == "EDIT" and log[4].edit_target == log[3].hash


def test_tool_definitions_and_sets_are_stored_once(backend_url: str) -> None:
    with Store.open(backend_url, clock=FakeClock()) as store:
        first, second = Transcript(store, "a"), Transcript(store, "b")
        for t in (first, second):
            t.set_tools([WEATHER, SEARCH])
            t.user("1")
            t.user("2")
            t.set_tools([SEARCH, WEATHER])
            t.user("3")
        assert _count(store, "tool_definitions") == 2
        assert _count(store, "tool_sets") == 2
        assert _count(store, "tool_set_members") == 4
        assert _count(store, "commit_tools") == 6
        assert [v.name for v in first.tool_versions("search")] == ["search"]
        # Both sessions said "1" with the same content: one blob.
        assert _count(store, "blobs") == 3


def test_concurrent_writers_on_one_session_keep_one_chain(backend_url: str) -> None:
    """Threads with their own Store (own connections) append to the same session at once."""
    per_worker, workers = 15, 3
    errors: list[BaseException] = []
    start = threading.Barrier(workers)

    def append(worker: int) -> None:
        with Store.open(backend_url) as store:
            t = Transcript(store, "shared")
            start.wait()
            for i in range(per_worker):
                try:
                    t.user(f"w{worker}-{i}")
                except BaseException as exc:  # pragma: no cover - reported by the assertion below
                    errors.append(exc)

    threads = [threading.Thread(target=append, args=(w,)) for w in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    with Store.open(backend_url) as store:
        log = Transcript(store, "shared").log()
    _assert_chain(log)
    texts = [c.content.content for c in log]
    assert sorted(texts) == sorted(f"w{w}-{i}" for w in range(workers) for i in range(per_worker))
    for w in range(workers):  # each writer's own order is kept
        mine = [x for x in texts if x.startswith(f"w{w}-")]
        assert mine == [f"w{w}-{i}" for i in range(per_worker)]


_WORKER = """
import sys
from weakprompt.store import Store
from weakprompt.transcript import Transcript
url, tag, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
with Store.open(url) as store:
    transcript = Transcript(store, "multi")
    for i in range(count):
        transcript.user(f"{tag}-{i}")
"""


def test_two_processes_appending_to_one_session_keep_one_chain(backend_url: str) -> None:
    Store.open(backend_url).close()  # both workers find a migrated database
    procs = [
        subprocess.Popen([sys.executable, "-c", _WORKER, backend_url, tag, "20"], stderr=subprocess.PIPE)
        for tag in ("p", "q")
    ]
    outcomes = [(p.wait(timeout=120), p.stderr.read() if p.stderr else b"") for p in procs]
    assert [code for code, _ in outcomes] == [0, 0], outcomes
    with Store.open(backend_url) as store:
        log = Transcript(store, "multi").log()
    _assert_chain(log)
    assert sorted(c.content.content for c in log) == sorted(f"{t}-{i}" for t in "pq" for i in range(20))


def test_a_read_transaction_sees_one_snapshot(backend_url: str) -> None:
    with Store.open(backend_url) as reader, Store.open(backend_url) as writer:
        Transcript(writer, "s").user("one")
        with reader.read() as conn:
            assert conn.execute(text("SELECT count(*) FROM commits")).scalar() == 1
            Transcript(writer, "s").user("two")
            assert conn.execute(text("SELECT count(*) FROM commits")).scalar() == 1
        assert len(Transcript(reader, "s").log()) == 2


def test_nul_characters_are_refused_alike_where_text_cannot_hold_them(backend_url: str) -> None:
    with Store.open(backend_url) as store:
        t = Transcript(store, "s")
        stored = t.user("content may hold \x00 (it is stored as JSON)")
        with pytest.raises(TranscriptError, match="session_id contains a NUL"):
            Transcript(store, "bad\x00id")
        with pytest.raises(TranscriptError, match="commit message contains a NUL"):
            t.user("x", message="m\x00")
        # A tool name with NUL (a model can send one) still commits; the default message drops it.
        result = t.tool_result("c1", "to\x00ol", "out")
        assert result.message == "tool result: tool"
        assert result.content.name == "to\x00ol"
        assert t.log()[0].content.content == stored.content.content


def test_a_read_only_store_reads_and_never_writes(backend_url: str) -> None:
    with pytest.raises(StoreError, match=r"an empty database|no database file"):
        Store.open(backend_url, read_only=True)  # nothing to read yet, and nothing is created
    with Store.open(backend_url, clock=FakeClock()) as store:
        _conversation(Transcript(store, "s"))
        compiled = Transcript(store, "s").compile()
    with Store.open(backend_url, read_only=True) as store:
        assert Transcript(store, "s").compile() == compiled  # the URL's search_path is kept
        with pytest.raises(StoreError, match="opened read-only"):
            Transcript(store, "s").user("more")
        with pytest.raises(StoreError, match=r"read-only|readonly"), store.read() as conn:
            conn.execute(tables.blobs.delete())
        if store.engine.dialect.name == "postgresql":
            with store.engine.connect() as conn:
                assert conn.execute(text("SHOW default_transaction_read_only")).scalar() == "on"
    with Store.open(backend_url) as store:
        assert Transcript(store, "s").compile() == compiled


def test_lone_surrogates_round_trip_exactly_where_stored_as_json(backend_url: str) -> None:
    """Text rules (specs/TRANSCRIPT.md): escaped on the way in, read back as the same code points."""
    odd = "a\ud800b\udfff\ud83d\ude00\U0001f600"  # lone ones, a split pair, a real astral character
    with Store.open(backend_url, clock=FakeClock()) as store:
        t = Transcript(store, "s")
        t.set_tools([{"name": "echo", "description": odd}])
        t.user(odd, metadata={odd: [odd]})
        t.assistant(odd, tool_calls=[ToolCall(odd, odd, {odd: odd}), ToolCall("c2", "echo", odd)])
        t.tool_result(odd, odd, odd, is_error=True)
        log = t.log()
        compiled = t.compile()
        with pytest.raises(TranscriptError, match="session_id contains a lone surrogate"):
            Transcript(store, odd)
        with pytest.raises(TranscriptError, match="commit message contains a lone surrogate"):
            t.user("x", message=odd)
    with Store.open(backend_url) as store:
        again = Transcript(store, "s")
        assert again.log() == log
        assert again.compile() == compiled
        user, assistant, result = (c.content for c in log)
        assert user.content == odd and user.metadata == {odd: [odd]}
        assert assistant.tool_calls == (ToolCall(odd, odd, {odd: odd}), ToolCall("c2", "echo", odd))
        assert (result.tool_call_id, result.name, result.content) == (odd, odd, odd)
        assert again.compile().tools == ({"name": "echo", "description": odd},)
        assert log[2].message == "tool result: a\\ud800b\\udfff\\ud83d\\ude00\U0001f600"


# --- stored tool outputs -----------------------------------------------------------------------------


def test_tool_outputs_round_trip_dedupe_and_purge(backend_url: str) -> None:
    payload = bytes(range(256)) * 400  # binary, with NUL bytes, compressible
    with Store.open(backend_url, clock=FakeClock()) as store:
        outputs = ToolOutputStore(store, "s")
        first = outputs.store_result("call_1", "dump", {"path": "/x"}, payload, oversized=True)
        again = outputs.store_result("call_1", "dump", {"path": "/x"}, payload)
        other = ToolOutputStore(store, "other").store_result("call_9", "dump", "{}", payload)
        assert again.deduplicated and other.deduplicated and not first.deduplicated
        assert _count(store, "tool_output_blobs") == 1
        assert _count(store, "tool_outputs") == 2
    with Store.open(backend_url) as store:
        outputs = ToolOutputStore(store, "s")
        found = outputs.get_result("call_1")
        assert found is not None and found.data == payload
        assert found.metadata.oversized and found.metadata.arguments == '{"path":"/x"}'
        by_handle = outputs.get_by_handle(first.handle)
        assert by_handle is not None and by_handle.data == payload
        assert outputs.has_oversized() and outputs.known_call_ids() == ["call_1"]
        assert outputs.purge_session() == 1
        assert _count(store, "tool_output_blobs") == 1  # still used by "other"
        assert ToolOutputStore(store, "other").purge_session() == 1
        assert _count(store, "tool_output_blobs") == 0


@pytest.mark.parametrize("kind", ["raw", "zlib"])
def test_a_big_tool_output_round_trips_in_its_encoding_alike(backend_url: str, kind: str) -> None:
    """Over the size SQLite reads through blob I/O; PostgreSQL binds and selects it whole."""
    payload = os.urandom(300_000) if kind == "raw" else b"".join(b"line %06d ok\n" % i for i in range(30_000))
    with Store.open(backend_url) as store:
        outputs = ToolOutputStore(store, "s")
        ref = outputs.store_result("c1", "dump", "{}", payload)
        blobs = tables.tool_output_blobs
        with store.read() as conn:
            encoding = conn.execute(
                select(blobs.c.encoding).where(blobs.c.hash == ref.stored_hash)
            ).scalar_one()
        assert encoding == kind
        found = outputs.get_result("c1")
        assert found is not None and found.data == payload


def test_tool_output_ids_with_nul_are_refused_alike(backend_url: str) -> None:
    summaries = SummaryRegistry()
    summaries.register("t", lambda _item: "with\x00nul")
    with Store.open(backend_url) as store:
        outputs = ToolOutputStore(store, "s", summaries=summaries)
        with pytest.raises(ToolOutputStoreError, match="tool_call_id contains a NUL"):
            outputs.store_result("c\x00", "t", "{}", "x")
        with pytest.raises(ToolOutputStoreError, match="contain a NUL"):
            outputs.store_result("c1", "t", "{\x00}", "x")
        # NUL inside JSON arguments is escaped, and a summary function's NUL becomes a space.
        stored = outputs.store_result("c2", "t", {"a": "\x00"}, "x\x00y")
        assert stored.arguments == '{"a":"\\u0000"}'
        assert stored.summary == "with nul"
        found = outputs.get_result("c2")
        assert found is not None and found.data == b"x\x00y"


def test_concurrent_output_stores_on_one_session_get_distinct_seqs(backend_url: str) -> None:
    Store.open(backend_url).close()
    errors: list[BaseException] = []
    start = threading.Barrier(3)

    def store_some(worker: int) -> None:
        with Store.open(backend_url) as store:
            outputs = ToolOutputStore(store, "s")
            start.wait()
            for i in range(10):
                try:
                    outputs.store_result(f"w{worker}-{i}", "t", "{}", f"output {worker} {i}")
                except BaseException as exc:  # pragma: no cover - reported by the assertion below
                    errors.append(exc)

    threads = [threading.Thread(target=store_some, args=(w,)) for w in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    with Store.open(backend_url) as store:
        listed = ToolOutputStore(store, "s").list_results()
    assert [r.seq for r in listed] == list(range(30))
    assert len({r.tool_call_id for r in listed}) == 30


def test_purging_a_shared_payload_while_other_sessions_reuse_it(backend_url: str) -> None:
    """Workers store one common payload in fresh sessions and purge them, all at once."""
    Store.open(backend_url).close()
    errors: list[BaseException] = []
    start = threading.Barrier(3)

    def churn(worker: int) -> None:
        with Store.open(backend_url) as store:
            start.wait()
            for i in range(25):
                outputs = ToolOutputStore(store, f"w{worker}-{i}")
                try:
                    outputs.store_result("c", "t", "{}", "the same output everywhere")
                    assert outputs.get_result("c") is not None
                    assert outputs.purge_session() == 1
                except BaseException as exc:  # pragma: no cover - reported by the assertion below
                    errors.append(exc)

    threads = [threading.Thread(target=churn, args=(w,)) for w in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    with Store.open(backend_url) as store:
        assert _count(store, "tool_outputs") == 0
        assert _count(store, "tool_output_blobs") == 0


# --- content-addressed inserts and locks ---------------------------------------------------------------


def test_same_new_rows_in_opposite_orders_do_not_deadlock(backend_url: str) -> None:
    """Two writers inserting the same new keys, listed in opposite orders, many times over."""
    with Store.open(backend_url) as store:
        errors: list[BaseException] = []
        start = threading.Barrier(2)

        def insert(reverse: bool) -> None:
            start.wait()
            for round_ in range(40):
                rows = [
                    {
                        "hash": f"{round_:04d}{k}".ljust(64, "0"),
                        "content": "x",
                        "size_bytes": 1,
                        "created_at": "t",
                    }
                    for k in "abcdef"
                ]
                try:
                    with store.write() as conn:
                        insert_ignore(conn, tables.blobs, rows[::-1] if reverse else rows)
                except BaseException as exc:  # pragma: no cover - reported by the assertion below
                    errors.append(exc)

        threads = [threading.Thread(target=insert, args=(r,)) for r in (False, True)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        assert _count(store, "blobs") == 40 * 6


def test_lock_keys_are_the_same_in_every_process() -> None:
    # Python's hash() of a str changes per process; lock keys must not.
    assert lock_key(SCHEMA_LOCK) == 2330741150020917956
    code = "from weakprompt.store.locks import lock_key; print(lock_key('transcript:s'))"
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert int(out.stdout) == lock_key("transcript:s") == 4719841375340851455


@given(st.text())
def test_lock_key_is_deterministic_and_fits_bigint(name: str) -> None:
    key = lock_key(name)
    assert key == lock_key(name)
    assert -(2**63) <= key < 2**63


def test_advisory_lock_is_a_no_op_on_sqlite() -> None:
    with Store.open() as store, store.write(lock="anything") as conn:
        advisory_lock(conn, "other")
        store_rows = conn.execute(text("SELECT count(*) FROM commits")).scalar()
        assert store_rows == 0


@pytest.mark.postgres
def test_named_write_locks_serialise_only_writers_of_the_same_name(pg_url: str) -> None:
    order: list[str] = []
    with Store.open(pg_url) as store, Store.open(pg_url) as other:

        def same_name() -> None:
            with other.write(lock="session-a"):
                order.append("second holder of session-a")

        def other_name() -> None:
            with other.write(lock="session-b"):
                order.append("holder of session-b")

        with store.write(lock="session-a") as conn:
            free = threading.Thread(target=other_name)
            free.start()
            free.join()  # a different name is not held up
            blocked = threading.Thread(target=same_name)
            blocked.start()
            _wait_for(lambda: _waiting_advisory_locks(conn.engine) == 1)
            order.append("first holder of session-a")
        blocked.join()
    assert order == ["holder of session-b", "first holder of session-a", "second holder of session-a"]


def _waiting_advisory_locks(engine: Engine) -> int:
    with engine.connect() as conn:
        query = text("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted")
        return int(conn.execute(query).scalar_one())


def _wait_for(condition: Callable[[], bool], attempts: int = 2000) -> None:
    event = threading.Event()
    for _ in range(attempts):
        if condition():
            return
        event.wait(0.005)
    raise AssertionError("condition not reached")


# --- PostgreSQL specifics ----------------------------------------------------------------------------


@pytest.mark.postgres
def test_reads_are_read_only_snapshots_and_writes_read_committed(pg_url: str) -> None:
    with Store.open(pg_url) as store:
        with store.read() as conn:
            assert conn.execute(text("SHOW transaction_isolation")).scalar() == "repeatable read"
            assert conn.execute(text("SHOW transaction_read_only")).scalar() == "on"
        with store.write() as conn:
            assert conn.execute(text("SHOW transaction_isolation")).scalar() == "read committed"
            assert conn.execute(text("SHOW transaction_read_only")).scalar() == "off"
        with pytest.raises(StoreError, match="read-only transaction"), store.read() as conn:
            conn.execute(tables.blobs.insert().values(hash="h", content="1", size_bytes=1, created_at="t"))
        assert _count(store, "blobs") == 0


@pytest.mark.postgres
def test_foreign_keys_are_enforced(pg_url: str) -> None:
    with Store.open(pg_url) as store:
        with pytest.raises(StoreError, match="foreign key"), store.write() as conn:
            conn.execute(tables.commit_tools.insert().values(commit_hash="x" * 64, tool_set_hash="y" * 64))


@pytest.mark.postgres
def test_the_same_conversation_hashes_and_compiles_alike_on_both_backends(pg_url: str) -> None:
    with Store.open("sqlite://", clock=FakeClock()) as lite, Store.open(pg_url, clock=FakeClock()) as pg:
        _conversation(Transcript(lite, "s"))
        _conversation(Transcript(pg, "s"))
        assert Transcript(pg, "s").log() == Transcript(lite, "s").log()
        assert Transcript(pg, "s").compile() == Transcript(lite, "s").compile()


_messages = st.lists(
    st.tuples(st.sampled_from(["user", "assistant", "system"]), st.text(max_size=40)), min_size=1, max_size=6
)


@pytest.mark.postgres
@settings(max_examples=20, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(turns=_messages)
def test_any_conversation_gets_the_same_commits_on_both_backends(
    pg_url: str, turns: list[tuple[str, str]]
) -> None:
    session = uuid.uuid4().hex
    with Store.open("sqlite://", clock=FakeClock()) as lite, Store.open(pg_url, clock=FakeClock()) as pg:
        for store in (lite, pg):
            t = Transcript(store, session)
            for role, content in turns:
                getattr(t, role)(content)
        assert Transcript(pg, session).log() == Transcript(lite, session).log()
        assert Transcript(pg, session).compile() == Transcript(lite, session).compile()


# --- URLs and errors (no server needed) ----------------------------------------------------------------


def test_plain_postgresql_urls_use_psycopg() -> None:
    assert normalize_url("postgresql://u:p@h/db") == "postgresql+psycopg://u:p@h/db"
    assert normalize_url("postgresql+psycopg2://u@h/db") == "postgresql+psycopg2://u@h/db"


def test_an_unreachable_server_is_a_store_error_without_the_password() -> None:
    with pytest.raises(StoreError, match="cannot open the store") as caught:
        Store.open("postgresql://someone:s3cret@127.0.0.1:1/nothing?connect_timeout=2")
    assert "s3cret" not in str(caught.value)


def test_a_missing_driver_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from weakprompt.store import engine

    def no_driver(*_args: object, **_kwargs: object) -> Engine:
        raise ModuleNotFoundError("No module named 'psycopg'")

    monkeypatch.setattr(engine, "create_engine", no_driver)
    with pytest.raises(StoreError, match=r"weakprompt\[postgres\]"):
        Store.open("postgresql://u:p@127.0.0.1/db")
