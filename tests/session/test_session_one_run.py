"""One run per session of a store: across Session objects, Store objects and processes (store/run_leases).

Two runs on one session id used to interleave their transcripts and show the
model each other's messages; the guard knew only the ``Session`` object.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import inspect, select, text

from async_support import tools_prompt
from weakprompt import run
from weakprompt.adapters.testing import FunctionAdapter
from weakprompt.clock import FakeClock
from weakprompt.errors import ConfigurationError, SessionBusyError, StoreError
from weakprompt.model import ModelRequest
from weakprompt.runtime import evaluate
from weakprompt.session import Session
from weakprompt.store import LATEST_VERSION, MIGRATIONS, Store, run_leases, tables
from weakprompt.store.engine import WRITE_OPTION, build_engine, normalize_url
from weakprompt.store.migrations import migrate
from weakprompt.store.run_leases import LEASE_SECONDS, process_started, renew, take_session_lease
from weakprompt.transcript import Transcript

ROOT = Path(__file__).resolve().parents[2]


def _last_user(request: ModelRequest) -> str:
    users = [m for m in request.context.messages if m.role == "user"]
    return users[-1].content if users else ""


def _gated_adapter(
    gates: dict[str, asyncio.Event], entered: dict[str, asyncio.Event], seen: list[str]
) -> FunctionAdapter:
    """Answers ``answer to <input>`` once the gate of that input opens."""

    async def reply(request: ModelRequest) -> str:
        text = _last_user(request)
        seen.append(text)
        entered[text].set()
        await gates[text].wait()
        return f"answer to {text}"

    return FunctionAdapter(reply)


def _messages(store: Store, session_id: str) -> list[tuple[str, str]]:
    return [(m.role, m.content) for m in Transcript(store, session_id).compile().messages]


def test_two_session_objects_with_one_id_never_interleave_a_transcript(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "s.db")
    gates = {t: asyncio.Event() for t in ("one", "two")}
    entered = {t: asyncio.Event() for t in ("one", "two")}
    seen: list[str] = []

    async def main() -> None:
        adapter = _gated_adapter(gates, entered, seen)
        first = asyncio.ensure_future(
            run(
                tools_prompt([]),
                adapter=adapter,
                session=Session(session_id="ticket-1"),
                store=store,
                input="one",
            )
        )
        await entered["one"].wait()
        with pytest.raises(
            SessionBusyError, match=r"'ticket-1' is already running.*another run in this process"
        ):
            await run(
                tools_prompt([]),
                adapter=adapter,
                session=Session(session_id="ticket-1"),
                store=store,
                input="two",
            )
        gates["one"].set()
        assert (await first).text == "answer to one"

    asyncio.run(main())
    assert seen == ["one"]  # the refused run never called the model
    assert _messages(store, "ticket-1")[1:] == [("user", "one"), ("assistant", "answer to one")]
    with store.read() as conn:
        assert conn.execute(select(tables.run_leases)).all() == []  # released
    store.close()


def test_a_session_busy_error_is_a_configuration_error() -> None:
    assert issubclass(SessionBusyError, ConfigurationError)


def test_two_store_objects_on_one_file_share_the_guard(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    first_store, second_store = Store.open(path), Store.open(path)
    lease = take_session_lease(first_store, "t")
    with pytest.raises(SessionBusyError, match="another run in this process"):
        take_session_lease(second_store, "t")
    take_session_lease(second_store, "other").release()  # other sessions are free
    lease.release()
    lease.release()  # a second release does nothing
    take_session_lease(second_store, "t").release()
    first_store.close()
    second_store.close()


def test_runs_on_one_explicit_in_memory_store_are_guarded_too() -> None:
    store = Store.open("sqlite://")
    other = Store.open("sqlite://")
    lease = take_session_lease(store, "t")
    with pytest.raises(SessionBusyError, match="another run in this process"):
        take_session_lease(store, "t")
    take_session_lease(other, "t").release()  # another private database is another store
    lease.release()
    with store.read() as conn:
        assert conn.execute(select(tables.run_leases)).all() == []  # counted in the process, no row
    take_session_lease(store, "t").release()
    store.close()
    other.close()


def test_release_after_the_store_closed_does_nothing(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "s.db")
    lease = take_session_lease(store, "t")
    store.close()
    lease.release()
    with Store.open(tmp_path / "s.db") as again:
        take_session_lease(again, "t").release()  # the row left behind belongs to no live run of ours


def _insert_lease(store: Store, **row: object) -> None:
    values: dict[str, object] = {
        "session_id": "t",
        "token": "f" * 32,
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "pid_started": process_started(os.getpid()),
        "acquired_at": "2026-01-01T00:00:00+00:00",
        "expires_ms": int(time.time() * 1000) + 10**9,
    }
    values.update(row)
    with store.write() as conn:
        conn.execute(tables.run_leases.insert().values(values))


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


@pytest.mark.parametrize(
    ("row", "holder"),
    [
        ({}, None),  # this process, but no run of it holds the token: left by a failed release
        ({"pid": -1}, None),  # placeholder, replaced by a dead pid below
        ({"pid": "parent", "pid_started": "1"}, None),  # a pid now used by a process started later
        ({"pid": "parent"}, r"in process \d+ "),
        ({"host": "elsewhere", "expires_ms": 0}, None),  # another host's lease, past its expiry
        ({"host": "elsewhere"}, r"in process \d+ on host 'elsewhere'"),
    ],
    ids=[
        "stale-in-this-process",
        "dead-process",
        "reused-pid",
        "live-process",
        "expired-elsewhere",
        "live-elsewhere",
    ],
)
def test_a_stored_lease_holds_only_while_its_owner_can_be_alive(
    tmp_path: Path, row: dict[str, object], holder: str | None
) -> None:
    row = dict(row)
    if row.get("pid") == -1:
        row["pid"] = _dead_pid()
    if row.get("pid") == "parent":
        row["pid"] = os.getppid()
        row.setdefault("pid_started", process_started(os.getppid()))
    with Store.open(tmp_path / "s.db") as store:
        _insert_lease(store, **row)
        if holder is not None:
            with pytest.raises(SessionBusyError, match=holder):
                take_session_lease(store, "t")
            return
        lease = take_session_lease(store, "t")
        with store.read() as conn:
            (stored,) = conn.execute(select(tables.run_leases)).all()
        assert (stored.token, stored.pid) == (lease.token, os.getpid())
        lease.release()


def test_a_pid_that_is_someone_elses_counts_as_alive(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(pid: int, sig: int) -> None:
        raise PermissionError

    monkeypatch.setattr(run_leases.os, "kill", refuse)
    assert run_leases.process_alive(12345, "")


def test_a_process_without_proc_has_no_start_time(monkeypatch: pytest.MonkeyPatch) -> None:
    assert process_started(_dead_pid()) == ""
    assert process_started(os.getpid()) != ""


def test_renewing_pushes_the_expiry_and_skips_what_cannot_be_renewed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = Store.open(tmp_path / "s.db")
    lease = take_session_lease(store, "t", now_ms=1_000)
    renew([(lease.token, (store, "t"))], now_ms=5_000)
    with store.read() as conn:
        assert (
            conn.execute(select(tables.run_leases.c.expires_ms)).scalar_one() == 5_000 + LEASE_SECONDS * 1000
        )
    reader = Store.open(tmp_path / "s.db", read_only=True)
    closed = Store.open(tmp_path / "s.db")
    closed.close()
    with caplog.at_level(logging.WARNING, logger="weakprompt.store.run_leases"):
        renew([("x", (reader, "t")), ("y", (closed, "t"))], now_ms=9_000)
    assert "could not renew the lease of session 't'" in caplog.text
    lease.release()
    reader.close()
    store.close()


def test_the_heartbeat_renews_held_leases_and_ends_when_none_are_held(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "s.db")
    lease = take_session_lease(store, "t", now_ms=0)
    (thread,) = [t for t in threading.enumerate() if t.name == "weakprompt-run-leases"]
    deadline = time.monotonic() + 30
    expires = 0
    while expires <= LEASE_SECONDS * 1000 and time.monotonic() < deadline:
        run_leases.renew_now()
        time.sleep(0.01)
        with store.read() as conn:
            expires = conn.execute(select(tables.run_leases.c.expires_ms)).scalar_one()
    assert expires > LEASE_SECONDS * 1000  # renewed from the wall clock, long past the given now_ms=0
    lease.release()
    while thread.is_alive() and time.monotonic() < deadline:
        run_leases.renew_now()
        thread.join(timeout=0.05)
    assert not thread.is_alive()
    store.close()


def test_a_release_that_fails_is_retried_until_the_row_is_gone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    store = Store.open(tmp_path / "s.db")
    lease = take_session_lease(store, "t")

    def locked(*_args: object, **_kwargs: object) -> None:
        raise StoreError("database is locked")

    monkeypatch.setattr(store, "write", locked)
    with caplog.at_level(logging.WARNING, logger="weakprompt.store.run_leases"):
        lease.release()  # the run's outcome is not replaced by a failed release
    assert "could not release the lease of session 't'" in caplog.text
    monkeypatch.undo()
    deadline = time.monotonic() + 30
    rows: list[object] = [None]
    while rows and time.monotonic() < deadline:
        run_leases.renew_now()
        time.sleep(0.01)
        with store.read() as conn:
            rows = list(conn.execute(select(tables.run_leases)).all())
    assert rows == []
    store.close()


_CHILD = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from async_support import tools_prompt
    from weakprompt.adapters.testing import FunctionAdapter
    from weakprompt.runtime import evaluate
    from weakprompt.session import Session
    from weakprompt.store import Store

    path, ready = Path(sys.argv[1]), Path(sys.argv[2])

    def reply(request):
        ready.write_text("in the model call")
        time.sleep(600)
        return "never"

    with Store.open(path) as store:
        evaluate(tools_prompt([]), adapter=FunctionAdapter(reply), session=Session(session_id="ticket-1"),
                 store=store, input="one")
    """
)


def test_a_run_in_another_process_holds_the_session_until_that_process_dies(tmp_path: Path) -> None:
    path, ready = tmp_path / "s.db", tmp_path / "ready"
    Store.open(path).close()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT / "tests" / "support")])}
    child = subprocess.Popen([sys.executable, "-c", _CHILD, str(path), str(ready)], env=env)
    try:
        deadline = time.monotonic() + 60
        while not ready.exists():
            assert child.poll() is None, "the child run ended early"
            assert time.monotonic() < deadline, "the child run never reached its model call"
            time.sleep(0.02)
        with Store.open(path) as store:
            answer = FunctionAdapter(lambda request: f"answer to {_last_user(request)}")
            with pytest.raises(SessionBusyError, match=rf"in process {child.pid} "):
                evaluate(
                    tools_prompt([]),
                    adapter=answer,
                    session=Session(session_id="ticket-1"),
                    store=store,
                    input="two",
                )
            assert answer.requests == ()
            child.send_signal(signal.SIGKILL)
            child.wait()
            # the holder is gone: its lease no longer counts, and the session runs again
            done = evaluate(
                tools_prompt([]),
                adapter=answer,
                session=Session(session_id="ticket-1"),
                store=store,
                input="two",
            )
            assert done.text == "answer to two"
            assert _messages(store, "ticket-1")[-2:] == [("user", "two"), ("assistant", "answer to two")]
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


# --- the property: random overlapping runs ---------------------------------------------------------------

runs_strategy = st.lists(st.sampled_from(["a", "b"]), min_size=2, max_size=5).flatmap(
    lambda sessions: st.tuples(
        st.just(sessions),
        st.permutations([i for i in range(len(sessions)) for _ in range(2)]),
        st.lists(st.integers(0, 1), min_size=len(sessions), max_size=len(sessions)),
    )
)


@pytest.mark.parametrize("kind", ["file", "memory"])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(plan=runs_strategy)
def test_overlapping_runs_of_one_session_are_refused_and_never_interleave(
    kind: str, plan: tuple[list[str], list[int], list[int]]
) -> None:
    """Each index appears twice in ``order``: first the run starts, then it is let finish.

    A run starting while an accepted run on its session id is still under way
    is refused, whatever Session and Store object it uses; every accepted run
    completes, and each session's transcript is whole runs one after another.
    """
    sessions, order, store_choice = plan
    folder = Path(tempfile.mkdtemp(prefix="wp-one-run-"))
    if kind == "file":
        stores = [Store.open(folder / "s.db"), Store.open(folder / "s.db")]
    else:
        shared = Store.open("sqlite://")
        stores = [shared, shared]
    names = [f"run{i}" for i in range(len(sessions))]
    gates = {n: asyncio.Event() for n in names}
    entered = {n: asyncio.Event() for n in names}
    seen: list[str] = []

    async def main() -> dict[str, list[str]]:
        adapter = _gated_adapter(gates, entered, seen)
        tasks: dict[int, asyncio.Task[object]] = {}
        running: dict[str, int] = {}
        accepted: list[int] = []
        finished: dict[str, list[str]] = {"a": [], "b": []}
        for index in order:
            sid = sessions[index]
            if index not in tasks:  # start it
                task = asyncio.ensure_future(
                    run(
                        tools_prompt([]),
                        adapter=adapter,
                        session=Session(session_id=sid),
                        store=stores[store_choice[index]],
                        input=names[index],
                    )
                )
                tasks[index] = task
                waiter = asyncio.ensure_future(entered[names[index]].wait())
                await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
                waiter.cancel()
                busy = sid in running
                if busy:
                    assert task.done() and isinstance(task.exception(), SessionBusyError)
                else:
                    assert not task.done()
                    running[sid] = index
                    accepted.append(index)
            elif running.get(sid) == index:  # let it finish
                gates[names[index]].set()
                response = await tasks[index]
                assert getattr(response, "text") == f"answer to {names[index]}"
                del running[sid]
                finished[sid].append(names[index])
        assert sorted(seen) == sorted(names[i] for i in accepted)
        return finished

    try:
        finished = asyncio.run(main())
        for sid, done in finished.items():
            talk = [m for m in _messages(stores[0], sid) if m[0] != "system"]
            assert talk == [
                pair for name in done for pair in (("user", name), ("assistant", f"answer to {name}"))
            ]
        with stores[0].read() as conn:
            assert conn.execute(select(tables.run_leases)).all() == []
    finally:
        for store in stores:
            store.close()
        shutil.rmtree(folder, ignore_errors=True)


def test_version_6_adds_the_lease_table_to_a_version_5_store(tmp_path: Path) -> None:
    path = tmp_path / "v5.db"
    engine = build_engine(normalize_url(path))
    try:
        with engine.connect() as conn:
            conn.execution_options(**{WRITE_OPTION: True})
            with conn.begin():
                assert migrate(conn, FakeClock(), migrations=MIGRATIONS[:5]) == (0, 5)
                conn.execute(text("INSERT INTO blobs VALUES ('h', 'x', 1, 'now')"))
            assert "run_leases" not in inspect(conn).get_table_names()
    finally:
        engine.dispose()
    assert MIGRATIONS[5].version == 6 and "run_leases" in MIGRATIONS[5].description
    with Store.open(path) as store:
        assert store.schema_version == LATEST_VERSION
        with store.read() as conn:
            assert "run_leases" in inspect(conn).get_table_names()
            assert conn.execute(text("SELECT content FROM blobs WHERE hash = 'h'")).scalar_one() == "x"
        take_session_lease(store, "t").release()
