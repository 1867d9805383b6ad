"""ToolOutputStore: storing, reading, dedupe, session scope, purge, bad input."""

from __future__ import annotations

import json
import zlib
from pathlib import Path

import attrs
import pytest
from sqlalchemy import select, text

from outputs_support import log_lines, output_store
from weakprompt.clock import FakeClock
from weakprompt.errors import StoreError
from weakprompt.runtime.results import (
    NEVER_STORED_TOOLS,
    SummaryRegistry,
    ToolOutputStore,
    ToolOutputStoreError,
    ToolResultMetadata,
    handle_for,
    payload_hash,
)
from weakprompt.store import Store, tables
from weakprompt.tokens import ByteEstimateCounter


def _count(store: Store, table: str) -> int:
    with store.read() as conn:
        return int(conn.execute(text(f"SELECT count(*) FROM {table}")).scalar() or 0)


def test_store_result_records_everything_about_the_call() -> None:
    with output_store() as (outputs, events, clock):
        text = log_lines(30)
        ref = outputs.store_result("call_1", "read_log", {"path": "app.log", "tail": 30}, text)
        assert ref.session_id == "s1"
        assert ref.tool_call_id == "call_1"
        assert ref.tool_name == "read_log"
        assert ref.arguments == '{"path":"app.log","tail":30}'
        assert ref.size_bytes == len(text.encode())
        assert ref.lines == 30
        assert ref.tokens == ByteEstimateCounter().count(text)
        assert ref.summary == f"read_log: 30 lines, {ref.size_bytes} bytes"
        assert ref.created_at == clock.now()
        assert ref.stored_hash == payload_hash(text.encode())
        assert ref.handle == handle_for("s1", ref.stored_hash)
        assert not ref.is_error and not ref.oversized and not ref.deduplicated
        assert len(events) == 1
        event = events[0]
        assert (event.session_id, event.tool_call_id, event.tool_name, event.handle) == (
            "s1",
            "call_1",
            "read_log",
            ref.handle,
        )
        assert (event.size_bytes, event.oversized, event.deduplicated) == (ref.size_bytes, False, False)


def test_arguments_given_as_text_are_kept_verbatim_even_when_not_json() -> None:
    with output_store() as (outputs, _, _):
        raw = '{"path":  "a.txt" , "n": 1}'
        assert outputs.store_result("c1", "read", raw, "x").arguments == raw
        assert outputs.store_result("c2", "read", "{not json", "y").arguments == "{not json"


def test_get_result_returns_exact_bytes_and_metadata() -> None:
    with output_store() as (outputs, _, _):
        ref = outputs.store_result("c1", "cat", "{}", "héllo\nwörld\n")
        found = outputs.get_result("c1")
        assert found is not None
        assert found.data == "héllo\nwörld\n".encode()
        assert found.text == "héllo\nwörld\n"
        assert found.metadata == outputs.get_metadata("c1")
        assert found.metadata.handle == ref.handle
        assert outputs.get_result("missing") is None
        assert outputs.get_metadata("missing") is None


def test_get_metadata_does_not_read_the_payload(monkeypatch: pytest.MonkeyPatch) -> None:
    import weakprompt.runtime.results.store as module

    with output_store() as (outputs, _, _):
        outputs.store_result("c1", "cat", "{}", "data")

        def refuse(*_: object) -> bytes:
            raise AssertionError("payload read")

        monkeypatch.setattr(module, "fetch_blob", refuse)
        meta = outputs.get_metadata("c1")
        assert meta is not None and meta.size_bytes == 4
        assert [m.tool_call_id for m in outputs.list_results()] == ["c1"]


def test_list_results_is_session_scoped_and_time_ordered() -> None:
    with Store.open("sqlite://", clock=FakeClock()) as store:
        clock = FakeClock()
        a = ToolOutputStore(store, "a", clock=clock)
        b = ToolOutputStore(store, "b", clock=clock)
        for i in range(5):
            a.store_result(f"a{i}", "t", "{}", f"out {i}")
            clock.advance(1)
            b.store_result(f"b{i}", "t", "{}", f"other {i}")
        listed = a.list_results()
        assert [m.tool_call_id for m in listed] == [f"a{i}" for i in range(5)]
        times = [m.created_at for m in listed]
        assert times == sorted(times)
        assert [m.seq for m in listed] == [0, 1, 2, 3, 4]
        assert b.get_result("a0") is None
        assert [m.tool_call_id for m in b.list_results()] == [f"b{i}" for i in range(5)]


def test_same_output_in_a_session_has_one_handle_and_one_payload() -> None:
    with output_store() as (outputs, events, _):
        text = log_lines(500)
        first = outputs.store_result("c1", "read_log", {"path": "a"}, text)
        second = outputs.store_result("c2", "read_log", {"path": "b"}, text)
        assert first.handle == second.handle
        assert not first.deduplicated and second.deduplicated
        assert [e.deduplicated for e in events] == [False, True]
        assert _count(outputs.store, "tool_output_blobs") == 1
        assert _count(outputs.store, "tool_outputs") == 2
        # The handle leads to the first call that stored it.
        by_handle = outputs.get_by_handle(first.handle)
        assert by_handle is not None and by_handle.tool_call_id == "c1"


def test_same_output_in_another_session_gets_another_handle_but_shares_the_payload() -> None:
    with Store.open("sqlite://") as store:
        a = ToolOutputStore(store, "a")
        b = ToolOutputStore(store, "b")
        ref_a = a.store_result("c1", "t", "{}", "same bytes")
        ref_b = b.store_result("c1", "t", "{}", "same bytes")
        assert ref_a.handle != ref_b.handle
        assert ref_b.deduplicated
        assert _count(store, "tool_output_blobs") == 1
        assert a.get_by_handle(ref_b.handle) is None
        assert b.get_by_handle(ref_a.handle) is None


def test_storing_the_same_call_again_is_idempotent() -> None:
    with output_store() as (outputs, events, _):
        first = outputs.store_result("c1", "t", "{}", "out")
        again = outputs.store_result("c1", "t", "{}", "out")
        assert again.deduplicated
        assert again.seq == first.seq
        assert len(outputs.list_results()) == 1
        assert len(events) == 2


def test_a_reused_call_id_with_new_output_keeps_both_and_the_newest_wins() -> None:
    with output_store() as (outputs, _, _):
        outputs.store_result("c1", "t", "{}", "first")
        outputs.store_result("c1", "t", "{}", "second")
        found = outputs.get_result("c1")
        assert found is not None and found.data == b"second"
        assert [m.preview for m in outputs.list_results()] == ["first", "second"]


def test_oversized_flag_from_a_decision_function_and_marking_later() -> None:
    with output_store() as (outputs, events, _):
        big = outputs.store_result("c1", "t", "{}", "x" * 100, oversized=lambda stats: stats.size_bytes > 50)
        small = outputs.store_result("c2", "t", "{}", "y" * 10, oversized=lambda stats: stats.size_bytes > 50)
        assert big.oversized and not small.oversized
        assert events[0].oversized and not events[1].oversized
        assert outputs.has_oversized()
        assert outputs.mark_oversized("c2")
        meta = outputs.get_metadata("c2")
        assert meta is not None and meta.oversized
        assert not outputs.mark_oversized("nope")


def test_an_idempotent_store_can_raise_the_oversized_flag() -> None:
    with output_store() as (outputs, _, _):
        outputs.store_result("c1", "t", "{}", "out")
        assert not outputs.has_oversized()
        ref = outputs.store_result("c1", "t", "{}", "out", oversized=True)
        assert ref.oversized and outputs.has_oversized()


def test_has_oversized_is_per_session() -> None:
    with Store.open("sqlite://") as store:
        a = ToolOutputStore(store, "a")
        b = ToolOutputStore(store, "b")
        a.store_result("c1", "t", "{}", "big", oversized=True)
        assert a.has_oversized()
        assert not b.has_oversized()


def test_errors_are_flagged_and_previewed_as_errors() -> None:
    with output_store() as (outputs, _, _):
        ref = outputs.store_result(
            "c1", "fetch", {"url": "x"}, "connection refused\nretry later", is_error=True
        )
        assert ref.is_error
        assert ref.preview == "Error: connection refused\nretry later"
        assert ref.summary == f"fetch failed: 2 lines, {ref.size_bytes} bytes"


def test_invalid_utf8_is_stored_exactly_and_previewed_safely() -> None:
    data = b"ok line\n\xff\xfe\x00binary\x1b[31m\n\xc3"
    with output_store() as (outputs, _, _):
        ref = outputs.store_result("c1", "dump", "{}", data)
        found = outputs.get_result("c1")
        assert found is not None and found.data == data
        assert all(c.isprintable() or c == "\n" for c in ref.preview)
        assert "\x00" not in ref.preview and "\x1b" not in ref.preview
        assert ref.preview.startswith("ok line\n")
        json.dumps(ref.preview)  # always representable in commit metadata


def test_payload_is_compressed_in_the_database() -> None:
    with output_store() as (outputs, _, _):
        text = log_lines(2000)
        ref = outputs.store_result("c1", "t", "{}", text)
        with outputs.store.read() as conn:
            row = (
                conn.execute(
                    select(tables.tool_output_blobs).where(tables.tool_output_blobs.c.hash == ref.stored_hash)
                )
                .mappings()
                .one()
            )
        assert row["encoding"] == "zlib"
        assert row["stored_bytes"] < row["size_bytes"] / 5
        assert zlib.decompress(row["data"]) == text.encode()


def test_never_stored_tools_are_refused() -> None:
    with output_store() as (outputs, events, _):
        for name in sorted(NEVER_STORED_TOOLS):
            with pytest.raises(ToolOutputStoreError, match="never stored"):
                outputs.store_result("c1", name, "{}", "text")
        assert outputs.list_results() == [] and events == []


@pytest.mark.parametrize(
    ("call_id", "tool", "args", "result", "message"),
    [
        ("", "t", "{}", "x", "tool_call_id must be a non-empty string"),
        ("x" * 256, "t", "{}", "x", "longer than 255"),
        ("c", "", "{}", "x", "tool_name must be"),
        ("c", "t", 42, "x", "must be a JSON string or a mapping"),
        ("c", "t", {"bad": object()}, "x", "not JSON-serialisable"),
        ("c", "t", "{}", 42, "must be str or bytes"),
    ],
)
def test_bad_input_is_refused_with_a_clear_error_and_nothing_is_stored(
    call_id: str, tool: str, args: object, result: object, message: str
) -> None:
    with output_store() as (outputs, _, _):
        with pytest.raises(ToolOutputStoreError, match=message):
            outputs.store_result(call_id, tool, args, result)  # type: ignore[arg-type]
        assert outputs.list_results() == []


def test_bad_session_ids_and_lookup_ids() -> None:
    with Store.open("sqlite://") as store:
        with pytest.raises(ToolOutputStoreError, match="session_id"):
            ToolOutputStore(store, "")
        outputs = ToolOutputStore(store, "s")
        with pytest.raises(ToolOutputStoreError, match="tool_call_id"):
            outputs.get_result("")
        assert outputs.get_by_handle("") is None
        assert outputs.get_by_handle("no-such-handle") is None
        assert outputs.get_by_handle(123) is None  # type: ignore[arg-type]
        with pytest.raises(ToolOutputStoreError, match="session_id"):
            outputs.purge_session("")


def test_purge_session_deletes_rows_and_unshared_payloads_only() -> None:
    with Store.open("sqlite://") as store:
        a = ToolOutputStore(store, "a")
        b = ToolOutputStore(store, "b")
        a.store_result("c1", "t", "{}", "shared")
        a.store_result("c2", "t", "{}", "only a")
        b.store_result("c1", "t", "{}", "shared")
        assert a.purge_session() == 2
        assert a.list_results() == []
        assert _count(store, "tool_output_blobs") == 1
        found = b.get_result("c1")
        assert found is not None and found.data == b"shared"
        assert a.purge_session("b") == 1
        assert _count(store, "tool_output_blobs") == 0
        assert a.purge_session() == 0


def test_discard_deletes_only_the_given_calls_of_this_session() -> None:
    with Store.open("sqlite://") as store:
        a = ToolOutputStore(store, "a")
        b = ToolOutputStore(store, "b")
        keep = a.store_result("c1", "t", "{}", "keep")
        drop = a.store_result("c2", "t", "{}", "drop")
        other = b.store_result("c9", "t", "{}", "other")
        assert a.discard([drop, other]) == 1
        assert [m.tool_call_id for m in a.list_results()] == [keep.tool_call_id]
        assert b.get_result("c9") is not None
        assert a.discard([]) == 0


def test_next_seq_counts_stored_calls() -> None:
    with output_store() as (outputs, _, _):
        assert outputs.next_seq() == 0
        outputs.store_result("c1", "t", "{}", "a")
        outputs.store_result("c2", "t", "{}", "a")
        assert outputs.next_seq() == 2


def test_known_call_ids_newest_first_without_repeats() -> None:
    with output_store() as (outputs, _, _):
        for i in range(15):
            outputs.store_result(f"c{i}", "t", "{}", f"o{i}")
        outputs.store_result("c3", "t", "{}", "o3 again")
        known = outputs.known_call_ids(10)
        assert known[0] == "c3"
        assert len(known) == 10 and len(set(known)) == 10
        assert known[1:] == [f"c{i}" for i in range(14, 5, -1)]


def test_registered_summary_is_used_and_a_failing_one_falls_back() -> None:
    registry = SummaryRegistry()
    registry.register(
        "read_file", lambda item: f"Read file: {json.loads(item.arguments)['path']} ({item.lines} lines)"
    )
    registry.register("broken", lambda item: 1 / 0)  # type: ignore[arg-type, return-value]
    with output_store(summaries=registry) as (outputs, _, _):
        assert outputs.store_result("c1", "read_file", {"path": "src/main.py"}, "a\nb\n").summary == (
            "Read file: src/main.py (2 lines)"
        )
        assert outputs.store_result("c2", "broken", "{}", "a").summary == "broken: 1 lines, 1 bytes"


def test_file_store_survives_reopening(tmp_path: Path) -> None:
    path = tmp_path / "outputs.db"
    with Store.open(path) as store:
        ref = ToolOutputStore(store, "s").store_result("c1", "t", {"q": 1}, b"\x00\x01payload")
    with Store.open(path) as store:
        found = ToolOutputStore(store, "s").get_by_handle(ref.handle)
        assert found is not None and found.data == b"\x00\x01payload"
        assert found.metadata.arguments == '{"q":1}'


def _damage(outputs: ToolOutputStore, blob_hash: str, **values: object) -> None:
    blobs = tables.tool_output_blobs
    with outputs.store.write() as conn:
        conn.execute(blobs.update().where(blobs.c.hash == blob_hash).values(**values))


def test_damaged_payload_is_reported_not_returned() -> None:
    with output_store() as (outputs, _, _):
        ref = outputs.store_result("c1", "t", "{}", "payload " * 20)  # compresses: stored as zlib
        _damage(outputs, ref.stored_hash, data=b"garbage")
        with pytest.raises(StoreError, match="cannot be decompressed"):
            outputs.get_result("c1")
        _damage(outputs, ref.stored_hash, data=zlib.compress(b"other"))
        with pytest.raises(StoreError, match="has 5 bytes, the store recorded 160"):
            outputs.get_result("c1")
        _damage(outputs, ref.stored_hash, data=zlib.compress(b"payload " * 19 + b"PAYLOAD "))
        with pytest.raises(StoreError, match="does not match its content hash"):
            outputs.get_result("c1")
        _damage(outputs, ref.stored_hash, encoding="lz4")
        with pytest.raises(StoreError, match="unknown encoding"):
            outputs.get_result("c1")


def test_a_damaged_raw_payload_is_caught_by_its_hash() -> None:
    with output_store() as (outputs, _, _):
        ref = outputs.store_result("c1", "t", "{}", "payload")  # too small to compress: stored raw
        _damage(outputs, ref.stored_hash, data=b"paYload")
        with pytest.raises(StoreError, match="does not match its content hash"):
            outputs.get_result("c1")


def test_subscriber_failure_is_logged_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    from weakprompt.events import EventBus, ToolResultStored

    dispatcher = EventBus()

    def boom(_: ToolResultStored) -> None:
        raise RuntimeError("subscriber broke")

    dispatcher.subscribe(ToolResultStored, boom)
    with Store.open("sqlite://") as store:
        outputs = ToolOutputStore(store, "s", dispatcher=dispatcher)
        ref = outputs.store_result("c1", "t", "{}", "out")
        assert outputs.get_result("c1") is not None
        assert ref.tool_call_id == "c1"
    assert any("raised on ToolResultStored for call c1" in r.getMessage() for r in caplog.records)


def test_repr_and_accessors() -> None:
    with output_store() as (outputs, _, _):
        assert "s1" in repr(outputs)
        assert outputs.session_id == "s1"
        assert outputs.measure("a\nb").lines == 2
        assert outputs.token_counter.count("abcd") == 1


def test_lookups_by_call_and_by_handle_use_their_index_not_a_walk_of_the_session() -> None:
    """The newest/oldest row is picked after the index lookup, so SQLite never scans a session's rows."""
    from weakprompt.store.output_rows import _FIND_BY_CALL  # pyright: ignore[reportPrivateUsage]

    outputs_table = tables.tool_outputs
    with Store.open("sqlite://") as store, store.read() as conn:
        sql, _ = _FIND_BY_CALL._for(conn)  # pyright: ignore[reportPrivateUsage]
        by_call = conn.exec_driver_sql("EXPLAIN QUERY PLAN " + sql, ("s", "c")).fetchall()
        query = select(outputs_table).where(outputs_table.c.session_id == "s", outputs_table.c.handle == "h")
        compiled = str(query.compile(compile_kwargs={"literal_binds": True}))
        by_handle = conn.exec_driver_sql("EXPLAIN QUERY PLAN " + compiled).fetchall()
    assert "ix_tool_outputs_call (session_id=? AND tool_call_id=?)" in str(by_call)
    assert "ix_tool_outputs_handle (session_id=? AND handle=?)" in str(by_handle)


def test_the_newest_row_of_a_call_and_the_first_of_a_handle_are_found() -> None:
    with output_store() as (outputs, _events, _clock):
        first = outputs.store_result("c1", "t", "{}", "one")
        outputs.store_result("c2", "t", "{}", "one")  # same bytes: same handle, later row
        newer = outputs.store_result("c1", "t", "{}", "two")  # same call, other output: a new row
        assert outputs.get_metadata("c1") == attrs.evolve(newer, deduplicated=False)
        found = outputs.get_by_handle(first.handle)
        assert found is not None and found.metadata.tool_call_id == "c1" and found.metadata.seq == first.seq


def test_tool_result_reference_is_a_deprecated_name_of_the_one_record() -> None:
    """``ToolResultReference`` was a second name of ``ToolResultMetadata``; it warns and still works."""
    import weakprompt.runtime.results as results
    import weakprompt.store.output_record as output_record

    for module in (results, output_record):
        with pytest.warns(DeprecationWarning, match="ToolResultReference is deprecated.*ToolResultMetadata"):
            old = module.ToolResultReference  # pyright: ignore[reportAttributeAccessIssue]
        assert old is ToolResultMetadata
        assert "ToolResultReference" not in dir(module)
    with output_store() as (outputs, _events, _clock):
        assert isinstance(outputs.store_result("c1", "echo", {}, "out"), ToolResultMetadata)
