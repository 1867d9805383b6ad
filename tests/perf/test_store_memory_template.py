"""New in-memory stores start as copies of one migrated template: private, complete, on their own clock."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import select

from weakprompt.clock import FakeClock
from weakprompt.store import Store, tables
from weakprompt.store.migrations import LATEST_VERSION, check_shape, read_version
from weakprompt.transcript import Transcript


def test_each_new_memory_store_is_a_private_database_at_the_latest_version() -> None:
    first, second = Store.open("sqlite://"), Store.open("sqlite://")
    Transcript(first, "s").user("only in the first store")
    assert Transcript(first, "s").compile().messages[0].content == "only in the first store"
    assert Transcript(second, "s").compile().messages == ()
    assert second.session_ids() == []
    # a store opened after a write to a copy is still empty: the template is never written
    assert Store.open("sqlite://").session_ids() == []
    for store in (first, second):
        assert store.schema_version == LATEST_VERSION
        with store.read() as conn:
            assert read_version(conn) == LATEST_VERSION
            check_shape(conn)


def test_a_copied_store_records_its_versions_at_its_own_clock() -> None:
    Store.open("sqlite://")  # the template exists already, made at another time
    when = datetime(2031, 5, 6, 7, 8, 9, tzinfo=UTC)
    store = Store.open("sqlite://", clock=FakeClock(when))
    with store.read() as conn:
        applied = conn.execute(select(tables.schema_versions.c.applied_at)).scalars().all()
    assert applied and set(applied) == {when.isoformat()}


def test_a_copied_store_keeps_foreign_keys_on() -> None:
    store = Store.open("sqlite://")
    with store.read() as conn:
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1


def test_threads_sharing_one_in_memory_store_take_turns_with_its_one_connection() -> None:
    """An in-memory database is one connection: transactions from several threads must not interleave."""
    import threading

    from weakprompt.transcript import Transcript

    store = Store.open("sqlite://")
    failures: list[BaseException] = []
    start = threading.Barrier(6)

    def writer(name: str) -> None:
        try:
            start.wait()
            transcript = Transcript(store, name)
            for i in range(30):
                with transcript.turn():
                    transcript.user(f"{name} {i}")
                    transcript.assistant(f"reply {i}")
        except BaseException as exc:  # reported below, with the thread's name
            failures.append(exc)

    threads = [threading.Thread(target=writer, args=(f"t{n}",)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    for n in range(6):
        messages = Transcript(store, f"t{n}").compile().messages
        assert [m.content for m in messages[::2]] == [f"t{n} {i}" for i in range(30)]


def test_private_stores_share_one_dialect_but_not_their_data_or_transactions() -> None:
    """A private store's engine is light (the template's dialect, its own pool); rollback still works."""
    first, second = Store.open("sqlite://"), Store.open("sqlite://")
    assert first.engine.dialect is second.engine.dialect
    assert first.engine.pool is not second.engine.pool

    class Refused(Exception):
        pass

    transcript = Transcript(first, "s")
    transcript.user("kept")
    with pytest.raises(Refused), transcript.turn():
        transcript.user("rolled back")
        transcript.assistant("rolled back too")
        raise Refused
    with pytest.raises(Refused), first.write() as conn:
        conn.exec_driver_sql("DELETE FROM commits")
        raise Refused  # nothing of a write transaction that fails is stored
    assert [m.content for m in Transcript(first, "s").compile().messages] == ["kept"]
    assert second.session_ids() == []
    first.close()
    assert Transcript(second, "t").user("still open") is not None


def test_only_a_private_memory_store_counts_its_changes(tmp_path: Path) -> None:
    """One connection sees every write only there; a file or a shared-cache memory database says None."""
    private = Store.open("sqlite://")
    with private.read() as conn:
        before = private.change_count(conn)
    assert before is not None
    Transcript(private, "s").user("one row more")
    with private.read() as conn:
        after = private.change_count(conn)
    assert after is not None and after > before
    for other in (
        Store.open(tmp_path / "file.db"),
        Store.open("sqlite:///file::memory:?cache=shared&uri=true"),
    ):
        with other.read() as conn:
            assert other.change_count(conn) is None
        other.close()
