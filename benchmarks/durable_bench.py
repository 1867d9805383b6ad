"""What durability costs: a durable run against plain ``run()``, and throughput with 1, 2, 4 workers.

The model is scripted and waits 20 ms per call (``await asyncio.sleep``), as
a remote provider keeps a request waiting; each run makes 5 tool round
trips (6 model calls and 5 tool calls: 11 recorded calls).

a. Per-call overhead, one run at a time in one process: the median wall
   time of a run through ``await DurableApp.run(...)`` minus that of plain
   ``await run(...)`` on the same store, divided by the 11 calls; the two
   kinds take turns, so load from elsewhere on the machine falls on both
   alike. The same for CPU time. On a SQLite file, and on PostgreSQL when
   ``WEAKPROMPT_PG_URL`` is set.
b. Throughput on PostgreSQL: RUNS evaluations queued, drained by 1, 2 and
   4 ``weakprompt worker`` processes, each taking up to CONCURRENCY at once
   (the same limit for every worker count; measured for 8 and for 2): runs
   per second from the first submit to the last result, and the CPU each
   run cost the workers, the PostgreSQL server and the client meanwhile,
   which says whether the machine's cores or the model's latency bound it.

Usage: ``PYTHONPATH=src python benchmarks/durable_bench.py [--runs N] [--workers 1 2 4]``, or through
``benchmarks/run_all.py`` (``--quick``: fewer runs, 1 and 4 workers).
This module is also the place the workers import the prompt and the
adapter from (``durable_bench:prompt``, ``durable_bench:adapter``).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from weakprompt.adapters.testing import FunctionAdapter, text_turn, tool_call, tool_call_turn
from weakprompt.messages import AssistantTurn
from weakprompt.model import ModelRequest
from weakprompt.prompt import MarkdownSection, Prompt, PromptTemplate
from weakprompt.tools import ToolResult, tool

LATENCY = 0.02
ROUND_TRIPS = 5
CALLS = 2 * ROUND_TRIPS + 1
HERE = Path(__file__).parent
WARM_UP = 3


@dataclass(frozen=True)
class LookupParams:
    step: int


@tool(name="lookup", description="Look something up.")
def lookup(params: LookupParams) -> ToolResult[None]:
    return ToolResult(message=f"fact {params.step}")


def prompt() -> Prompt[None]:
    return Prompt(
        PromptTemplate(
            ns="bench/durable",
            key="lookup",
            sections=[MarkdownSection(title="Look up", key="lookup", template="Find facts.", tools=[lookup])],
        )
    )


async def _reply(request: ModelRequest) -> AssistantTurn:
    await asyncio.sleep(LATENCY)
    done = sum(1 for m in request.context.messages if m.role == "tool")
    if done < ROUND_TRIPS:
        return tool_call_turn(tool_call("lookup", {"step": done}, id=f"call-{done}"))
    return text_turn(f"found {done}")


def adapter() -> FunctionAdapter:
    return FunctionAdapter(_reply, name="bench")


async def _paired(db: str, runs: int) -> tuple[list[float], list[float], list[float], list[float]]:
    """Plain and durable runs taking turns in one process: wall and CPU seconds of each run.

    Taking turns (not one series after the other) lets both see the same
    machine: other work on it changes both alike, and the medians shed the
    runs it disturbed most.
    """
    from weakprompt.durable import DurableApp, Served
    from weakprompt.runtime import run
    from weakprompt.session import Session
    from weakprompt.store import Store

    app = DurableApp(
        db, executor_id=f"bench-{uuid.uuid4().hex[:6]}", serves=Served(modules=["durable_bench"])
    )
    await asyncio.to_thread(app.launch)
    store = Store.open(db)
    plain_wall: list[float] = []
    durable_wall: list[float] = []
    plain_cpu: list[float] = []
    durable_cpu: list[float] = []
    try:
        for i in range(runs + WARM_UP):
            cpu, started = time.process_time(), time.perf_counter()
            await run(prompt(), adapter=adapter(), session=Session(), input="go", store=store)
            plain = time.perf_counter() - started, time.process_time() - cpu
            cpu, started = time.process_time(), time.perf_counter()
            await app.run(
                "durable_bench:prompt",
                adapter="durable_bench:adapter",
                session_id=uuid.uuid4().hex,
                input="go",
            )
            durable = time.perf_counter() - started, time.process_time() - cpu
            if i >= WARM_UP:
                plain_wall.append(plain[0])
                plain_cpu.append(plain[1])
                durable_wall.append(durable[0])
                durable_cpu.append(durable[1])
    finally:
        store.close()
        await asyncio.to_thread(app.shutdown)
    return plain_wall, durable_wall, plain_cpu, durable_cpu


def overhead(db: str, runs: int, label: str) -> dict[str, float]:
    """What durability adds per recorded call: median durable run minus median plain run, over the calls."""
    plain_wall, durable_wall, plain_cpu, durable_cpu = asyncio.run(_paired(db, runs))
    plain, durable = statistics.median(plain_wall), statistics.median(durable_wall)
    cpu_plain, cpu_durable = statistics.median(plain_cpu), statistics.median(durable_cpu)
    per_call = (durable - plain) / CALLS * 1000
    cpu_per_call = (cpu_durable - cpu_plain) / CALLS * 1000
    print(
        f"{label}: plain run {plain * 1000:.1f} ms, durable run {durable * 1000:.1f} ms "
        f"({CALLS} calls): {per_call:.2f} ms per call; CPU {cpu_plain * 1000:.1f} vs "
        f"{cpu_durable * 1000:.1f} ms per run, {cpu_per_call:.2f} ms per call "
        f"(load average {os.getloadavg()[0]:.1f})"
    )
    return {
        "plain_ms": plain * 1000,
        "durable_ms": durable * 1000,
        "per_call_ms": per_call,
        "plain_cpu_ms": cpu_plain * 1000,
        "durable_cpu_ms": cpu_durable * 1000,
        "cpu_per_call_ms": cpu_per_call,
    }


def _start_worker(db: str, queue: str, executor: str, concurrency: int, log: Path) -> subprocess.Popen[bytes]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE.parent / "src"), str(HERE)]))
    with log.open("wb") as stderr:
        return subprocess.Popen(
            [
                sys.executable,
                "-c",
                "from weakprompt.cli import main; main()",
                "worker",
                "--db",
                db,
                "--queue",
                queue,
                "--concurrency",
                str(concurrency),
                "--executor-id",
                executor,
                "--allow-module",
                "durable_bench",
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )


def _wait_until_serving(procs: list[subprocess.Popen[bytes]], logs: list[Path]) -> None:
    """Wait until every worker says it serves the queue (it has launched DBOS and registered it)."""
    deadline = time.monotonic() + 120
    while not all("serving queue" in log.read_text(errors="replace") for log in logs):
        if any(proc.poll() is not None for proc in procs) or time.monotonic() > deadline:
            raise RuntimeError(
                "a worker did not start: " + " | ".join(log.read_text()[-500:] for log in logs)
            )
        time.sleep(0.1)


def _cpu_seconds(pid: int) -> float:
    """User and system CPU seconds of process ``pid`` so far (Linux ``/proc``; 0 where unreadable)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _postgres_cpu_seconds() -> float:
    """CPU seconds of every PostgreSQL server process on this machine (0 if there is none to read)."""
    total = 0.0
    for comm in Path("/proc").glob("[0-9]*/comm"):
        try:
            if comm.read_text().strip() in ("postgres", "postmaster"):
                total += _cpu_seconds(int(comm.parent.name))
        except OSError:
            continue
    return total


def throughput(db: str, workers: int, runs: int, concurrency: int) -> dict[str, float]:
    """Runs per second with ``workers`` worker processes, and the CPU each run cost meanwhile.

    CPU is counted over the timed window only (start-up excluded): the
    workers', the PostgreSQL server's (all its processes on this machine)
    and this process's (the client: submits, waits for results).
    """
    from weakprompt.durable import DurableClient

    queue = f"bench-{uuid.uuid4().hex[:6]}"
    folder = Path(tempfile.mkdtemp(prefix="durable-bench-"))
    logs = [folder / f"worker-{i}.log" for i in range(workers)]
    procs = [_start_worker(db, queue, f"{queue}-{i}", concurrency, logs[i]) for i in range(workers)]
    client = DurableClient(db)
    try:
        _wait_until_serving(procs, logs)
        time.sleep(1.0)  # and let the start-up's stragglers (recovery, first polls) settle
        load = os.getloadavg()[0]
        workers_before = sum(_cpu_seconds(p.pid) for p in procs)
        server_before, client_before = _postgres_cpu_seconds(), time.process_time()
        started = time.perf_counter()
        ids = [
            client.submit_sync(
                queue,
                "durable_bench:prompt",
                adapter="durable_bench:adapter",
                session_id=f"{queue}-{i}",
                input="go",
            )
            for i in range(runs)
        ]
        for workflow_id in ids:
            client.result_sync(workflow_id, timeout=600)
        elapsed = time.perf_counter() - started
        worker_cpu = sum(_cpu_seconds(p.pid) for p in procs) - workers_before
        server_cpu = _postgres_cpu_seconds() - server_before
        client_cpu = time.process_time() - client_before
    finally:
        client.close()
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(60)
        shutil.rmtree(folder, ignore_errors=True)
    rate = runs / elapsed
    figures = {
        "runs_per_s": rate,
        "worker_cpu_ms_per_run": worker_cpu / runs * 1000,
        "postgres_cpu_ms_per_run": server_cpu / runs * 1000,
        "client_cpu_ms_per_run": client_cpu / runs * 1000,
        "cpu_use_cores": (worker_cpu + server_cpu + client_cpu) / elapsed,
        "load_at_start": load,
    }
    print(
        f"PostgreSQL, {workers} worker(s) x {concurrency}: {runs} runs in {elapsed:.1f} s "
        f"= {rate:.1f} runs/s; CPU per run: workers {figures['worker_cpu_ms_per_run']:.0f} ms, "
        f"server {figures['postgres_cpu_ms_per_run']:.0f} ms, "
        f"client {figures['client_cpu_ms_per_run']:.0f} ms; "
        f"{figures['cpu_use_cores']:.2f} of {os.cpu_count()} cores busy with it "
        f"(load average {load:.1f} before, {os.getloadavg()[0]:.1f} after)"
    )
    return figures


def measure(
    *,
    runs: int,
    queued: int,
    concurrencies: tuple[int, ...],
    workers: tuple[int, ...],
    skip_overhead: bool = False,
) -> dict[str, object]:
    """Every case, in ``benchmarks/run_all.py``'s shape (rows, goals, notes)."""
    sys.path.insert(0, str(HERE))
    rows: list[dict[str, object]] = []
    goals: list[dict[str, object]] = []
    notes: list[str] = [
        f"machine load at the start: {os.getloadavg()[0]:.1f} (1 min) on {os.cpu_count()} cores"
    ]
    if not skip_overhead:
        with tempfile.TemporaryDirectory() as folder:
            sqlite = overhead(str(Path(folder) / "bench.db"), runs, "SQLite")
        rows.append({"case": "per-call overhead, SQLite file", **_rounded(sqlite)})
        goals.append(
            {
                "goal": "durable run on SQLite: < 3 ms overhead per recorded call",
                "met": sqlite["per_call_ms"] < 3.0,
                "value": f"{sqlite['per_call_ms']:.2f} ms",
            }
        )
    pg = os.environ.get("WEAKPROMPT_PG_URL")
    if not pg:
        notes.append("WEAKPROMPT_PG_URL is not set: the PostgreSQL cases were skipped")
        return {"title": "Durable runs on DBOS", "rows": rows, "goals": goals, "notes": notes}
    if not skip_overhead:
        postgres = overhead(pg, runs, "PostgreSQL")
        rows.append({"case": "per-call overhead, PostgreSQL", **_rounded(postgres)})
    for concurrency in concurrencies:
        rates: dict[int, dict[str, float]] = {}
        for n in workers:
            rates[n] = throughput(pg, n, queued, concurrency)
            rows.append({"case": f"throughput, {n} worker(s) x {concurrency}", **_rounded(rates[n])})
        if 1 in rates and 4 in rates:
            one, four = rates[1], rates[4]
            goals.append(
                {
                    "goal": f"4 workers on PostgreSQL: >= 3x the runs/s of 1 ({concurrency} at once each)",
                    "met": four["runs_per_s"] >= 3 * one["runs_per_s"],
                    "value": f"{four['runs_per_s'] / one['runs_per_s']:.2f}x",
                }
            )
            cpu_per_run = sum(four[k] for k in _CPU_KEYS)
            notes.append(
                f"{concurrency} at once per worker: 1 worker kept {one['cpu_use_cores']:.2f} cores busy, "
                f"4 kept {four['cpu_use_cores']:.2f}; at {cpu_per_run:.0f} ms CPU per run (workers, server "
                f"and client, with 4 workers) {os.cpu_count()} idle cores finish at most "
                f"{(os.cpu_count() or 1) * 1000 / cpu_per_run:.1f} runs/s"
            )
    notes.append(
        "a worker is one process (one core at most, for the GIL); it is bound by its concurrency "
        "(latency-bound) only while it needs well under a core for the runs it holds"
    )
    return {"title": "Durable runs on DBOS", "rows": rows, "goals": goals, "notes": notes}


_CPU_KEYS = ("worker_cpu_ms_per_run", "postgres_cpu_ms_per_run", "client_cpu_ms_per_run")


def _rounded(figures: dict[str, float]) -> dict[str, object]:
    return {key: round(value, 2) for key, value in figures.items()}


def main(quick: bool = False) -> dict[str, object]:
    """``benchmarks/run_all.py``'s entry (``quick``: fewer runs)."""
    if quick:
        return measure(runs=5, queued=40, concurrencies=(8, 2), workers=(1, 4))
    return measure(runs=30, queued=160, concurrencies=(8, 2), workers=(1, 2, 4))


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--runs", type=int, default=30, help="plain and durable runs per overhead measurement"
    )
    parser.add_argument("--queued", type=int, default=160, help="runs per throughput measurement")
    parser.add_argument(
        "--concurrency",
        type=int,
        nargs="+",
        default=[8, 2],
        help="runs each worker takes at once (each measured)",
    )
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4], help="worker counts to measure")
    parser.add_argument("--skip-overhead", action="store_true", help="measure throughput only")
    args = parser.parse_args()
    result = measure(
        runs=args.runs,
        queued=args.queued,
        concurrencies=tuple(args.concurrency),
        workers=tuple(args.workers),
        skip_overhead=args.skip_overhead,
    )
    for goal in result["goals"]:  # type: ignore[union-attr]
        print(goal)


if __name__ == "__main__":
    cli()
