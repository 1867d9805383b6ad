"""Four workers drain 200 evaluations from one PostgreSQL queue; one of them is killed on the way.

Needs ``WEAKPROMPT_PG_URL`` (``eval "$(.ci/postgres.sh)"``); skipped without
it, failed without it under CI, as the store's PostgreSQL tests are.
"""

from __future__ import annotations

import os
import signal
import time
import uuid
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("dbos")

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from durable_support import noted_by, notes, repeated, start_worker
from weakprompt.durable import DurableClient
from weakprompt.store.engine import normalize_url

pytestmark = pytest.mark.postgres

PG_URL_ENV = "WEAKPROMPT_PG_URL"
RUNS = 200
WORKERS = 4
PER_WORKER = 3
GLOBAL = 10


@pytest.fixture
def pg_database() -> Iterator[str]:
    url = os.environ.get(PG_URL_ENV)
    if not url:
        if os.environ.get("CI"):
            pytest.fail(f"CI is set but {PG_URL_ENV} is not: the PostgreSQL durable tests must run in CI")
        pytest.skip(f'{PG_URL_ENV} is not set (`eval "$(.ci/postgres.sh)"` starts a local server)')
    server = make_url(normalize_url(url))
    name = f"weakprompt_durable_{uuid.uuid4().hex[:10]}"
    admin = create_engine(server.render_as_string(hide_password=False), isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
        yield server.set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def _wait_for_dbos(url: str, timeout: float = 60.0) -> None:
    engine = create_engine(url)
    deadline = time.monotonic() + timeout
    try:
        while True:
            with engine.connect() as conn:
                if conn.execute(text("select to_regclass('dbos.queues')")).scalar() is not None:
                    if conn.execute(text("select count(*) from dbos.queues")).scalar():
                        return
            if time.monotonic() > deadline:
                raise TimeoutError("no worker created the DBOS tables")
            time.sleep(0.2)
    finally:
        engine.dispose()


def _most_at_once(spans: list[tuple[float, float]]) -> int:
    edges = sorted([(a, 1) for a, _ in spans] + [(b, -1) for _, b in spans], key=lambda e: (e[0], e[1]))
    most = now = 0
    for _, change in edges:
        now += change
        most = max(most, now)
    return most


def test_four_workers_drain_a_queue_and_recover_a_killed_one(pg_database: str, tmp_path: Path) -> None:
    counts = tmp_path / "counts"
    counts.mkdir()
    limits = ("--global-concurrency", str(GLOBAL))
    workers = [
        start_worker(
            pg_database, "many", counts, executor="w0", concurrency=PER_WORKER, delay=0.02, extra=limits
        )
    ]
    client = None
    try:
        _wait_for_dbos(pg_database)
        workers += [
            start_worker(
                pg_database,
                "many",
                counts,
                executor=f"w{i}",
                concurrency=PER_WORKER,
                delay=0.02,
                extra=limits,
            )
            for i in range(1, WORKERS)
        ]
        client = DurableClient(pg_database)
        ids = [
            client.submit_sync(
                "many",
                "durable_fixtures:counter_prompt",
                adapter="durable_fixtures:counter_adapter",
                session_id=f"p{i}",
                input=f"rounds=1 id=p{i}",
            )
            for i in range(RUNS)
        ]
        while len({pid for *_, pid in noted_by(counts, "model")}) < WORKERS:  # every worker is busy
            time.sleep(0.05)
        by_pid = {worker.pid: (index, worker) for index, worker in enumerate(workers)}
        in_hand: list[tuple[tuple[float, int], str]] = []
        while not in_hand:  # a run between its first and its last model call, and whose worker has it
            started: dict[str, set[str]] = defaultdict(set)
            owner: dict[str, tuple[float, int]] = {}
            for who, step, when, pid in noted_by(counts, "model"):
                started[who].add(step)
                owner[who] = (when, pid)
            in_hand = sorted((owner[who], who) for who, steps in started.items() if steps == {"0"})
        (_, victim_pid), _ = in_hand[-1]  # the latest to start: the least likely to end before the kill
        index, killed = by_pid[victim_pid]
        killed.send_signal(signal.SIGKILL)
        killed_at = time.time()
        killed.wait()
        results = [client.result_sync(i, timeout=240) for i in ids]
        records = [client.workflow(i) for i in ids]
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.terminate()
        for worker in workers:
            worker.wait(60)
        if client is not None:
            client.close()
    assert [r.text for r in results] == ["counted 1"] * RUNS
    assert {r.status for r in records} == {"SUCCESS"}
    # every evaluation's tool ran once; a repeat only for a call the kill cut short
    tools = notes(counts, "tools")
    assert {who for who, _, _ in tools} == {f"p{i}" for i in range(RUNS)}
    for key, times in repeated(tools).items():
        assert all(0 <= killed_at - t <= 0.25 for t in times[:-1]), (key, times)
    # the killed worker's unfinished runs were finished by the others
    model = noted_by(counts, "model")
    by_run: dict[str, set[int]] = defaultdict(set)
    for who, _, _, pid in model:
        by_run[who].add(pid)
    finished_by = {r.workflow_id: r.executor_id for r in records}
    dead = f"w{index}"
    taken_over = [who for who, pids in by_run.items() if killed.pid in pids and finished_by[who] != dead]
    assert taken_over, f"worker {dead} had no run in hand when it was killed"
    assert dead not in {finished_by[who] for who in taken_over}
    # the limits held: per worker and across workers (spans from first to last model call of a run)
    spans: dict[tuple[str, int], list[float]] = defaultdict(list)
    for who, _, when, pid in model:
        spans[who, pid].append(when)
    per_pid: dict[int, list[tuple[float, float]]] = defaultdict(list)
    for (_, pid), times in spans.items():
        per_pid[pid].append((min(times), max(times)))
    for pid, pid_spans in per_pid.items():
        assert _most_at_once(pid_spans) <= PER_WORKER, pid
    assert _most_at_once([s for group in per_pid.values() for s in group]) <= GLOBAL


def test_liveness_on_postgresql_follows_the_advisory_lock(pg_database: str) -> None:
    from weakprompt.durable._liveness import Liveness

    url = normalize_url(pg_database)
    owner, peer = Liveness(url), Liveness(url)
    try:
        owner.hold("pg-worker")
        with peer.if_dead("pg-worker") as dead:
            assert not dead
        owner.release()
        with peer.if_dead("pg-worker") as dead:
            assert dead
        with peer.if_dead("pg-worker") as dead:  # the peer let go of it again
            assert dead
    finally:
        owner.release()
        peer.release()


def test_a_worker_carries_on_when_the_server_ends_its_connections(
    pg_database: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DBOS pings no connection before a transaction: one the server dropped fails, and is retried."""
    from weakprompt.durable import DurableApp, Served

    monkeypatch.setenv("WEAKPROMPT_DURABLE_COUNTS", str(tmp_path))
    monkeypatch.syspath_prepend(str(Path(__file__).parent))
    app = DurableApp(pg_database, executor_id="cut", serves=Served(modules=["durable_fixtures"]))
    app.launch()
    admin = create_engine(pg_database, isolation_level="AUTOCOMMIT")
    try:
        first = app.run_sync(
            "durable_fixtures:counter_prompt",
            session_id="cut-1",
            input="rounds=1 id=cut-1",
            adapter="durable_fixtures:counter_adapter",
        )
        with admin.connect() as conn:
            ended = conn.execute(
                text(
                    "select count(*) filter (where pg_terminate_backend(pid)) from pg_stat_activity "
                    "where application_name = 'weakprompt-worker' and datname = current_database()"
                )
            ).scalar()
        assert first.text == "counted 1" and ended is not None and ended >= 1
        second = app.run_sync(
            "durable_fixtures:counter_prompt",
            session_id="cut-2",
            input="rounds=2 id=cut-2",
            adapter="durable_fixtures:counter_adapter",
        )
        assert second.text == "counted 2"
        assert [who for who, _, _ in notes(tmp_path, "model")].count("cut-2") == 3  # each call once
    finally:
        app.shutdown(timeout=5)
        admin.dispose()
