"""What durability costs: a durable run against plain ``run()``, and throughput with 1, 2, 4 workers.

The model is scripted and waits 20 ms per call (``await asyncio.sleep``), as
a remote provider keeps a request waiting; each run makes 5 tool round
trips (6 model calls and 5 tool calls: 11 recorded calls).

a. Per-call overhead, one run at a time in one process: the mean wall time
   of a run through ``DurableApp.evaluate_async`` minus that of plain
   ``await run(...)`` on the same store, divided by the 11 calls. On a
   SQLite file, and on PostgreSQL when ``WEAKPROMPT_PG_URL`` is set.
b. Throughput on PostgreSQL: RUNS evaluations queued, drained by 1, 2 and
   4 ``weakprompt worker`` processes (each taking up to CONCURRENCY at once);
   runs per second from the first submit to the last result.

Usage: ``PYTHONPATH=src python benchmarks/durable_bench.py [--runs N] [--workers 1 2 4]``, or through
``benchmarks/run_all.py`` (``--quick``: fewer runs, 1 and 4 workers).
This module is also the place the workers import the prompt and the
adapter from (``durable_bench:prompt``, ``durable_bench:adapter``).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
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


async def _plain(db: str, runs: int) -> float:
    from weakprompt.runtime import run
    from weakprompt.session import Session
    from weakprompt.store import Store

    store = Store.open(db)
    try:
        started = time.perf_counter()
        for _ in range(runs):
            await run(prompt(), adapter=adapter(), session=Session(), input="go", store=store)
        return (time.perf_counter() - started) / runs
    finally:
        store.close()


async def _durable(db: str, runs: int) -> float:
    from weakprompt.durable import DurableApp

    app = DurableApp(db, executor_id=f"bench-{uuid.uuid4().hex[:6]}")
    await asyncio.to_thread(app.launch)
    try:
        await app.evaluate_async(
            "durable_bench:prompt", adapter="durable_bench:adapter", session_id="warm", input="go"
        )
        started = time.perf_counter()
        for _ in range(runs):
            await app.evaluate_async(
                "durable_bench:prompt",
                adapter="durable_bench:adapter",
                session_id=uuid.uuid4().hex,
                input="go",
            )
        return (time.perf_counter() - started) / runs
    finally:
        await asyncio.to_thread(app.shutdown)


def overhead(db: str, runs: int, label: str) -> dict[str, float]:
    plain = asyncio.run(_plain(db, runs))
    durable = asyncio.run(_durable(db, runs))
    per_call = (durable - plain) / CALLS * 1000
    print(
        f"{label}: plain run {plain * 1000:.1f} ms, durable run {durable * 1000:.1f} ms "
        f"({CALLS} calls): {per_call:.2f} ms per call"
    )
    return {"plain_ms": plain * 1000, "durable_ms": durable * 1000, "per_call_ms": per_call}


def _start_worker(db: str, queue: str, executor: str, concurrency: int) -> subprocess.Popen[bytes]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE.parent / "src"), str(HERE)]))
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
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def throughput(db: str, workers: int, runs: int, concurrency: int) -> tuple[float, float]:
    """Runs per second with ``workers`` worker processes, and the workers' CPU seconds meanwhile."""
    from weakprompt.durable import DurableClient

    queue = f"bench-{uuid.uuid4().hex[:6]}"
    cpu_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    procs = [_start_worker(db, queue, f"{queue}-{i}", concurrency) for i in range(workers)]
    client = DurableClient(db)
    try:
        time.sleep(4.0)  # let every worker launch and register the queue
        started = time.perf_counter()
        ids = [
            client.submit(
                queue,
                "durable_bench:prompt",
                adapter="durable_bench:adapter",
                session_id=f"{queue}-{i}",
                input="go",
            )
            for i in range(runs)
        ]
        for workflow_id in ids:
            client.result(workflow_id, timeout=600)
        elapsed = time.perf_counter() - started
    finally:
        client.close()
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(60)
    cpu_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (cpu_after.ru_utime + cpu_after.ru_stime) - (cpu_before.ru_utime + cpu_before.ru_stime)
    rate = runs / elapsed
    print(
        f"PostgreSQL, {workers} worker(s) x {concurrency}: {runs} runs in {elapsed:.1f} s "
        f"= {rate:.1f} runs/s "
        f"(workers' CPU {cpu:.1f} s, start-up included; load average {os.getloadavg()[0]:.1f})"
    )
    return rate, cpu


def measure(
    *, runs: int, queued: int, concurrency: int, workers: tuple[int, ...], skip_overhead: bool = False
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
    rates: dict[int, float] = {}
    for n in workers:
        rate, cpu = throughput(pg, n, queued, concurrency)
        rates[n] = rate
        rows.append(
            {
                "case": f"throughput, {n} worker(s) x {concurrency}",
                "runs_per_s": round(rate, 2),
                "cpu_s": round(cpu, 1),
            }
        )
    if 1 in rates and 4 in rates:
        goals.append(
            {
                "goal": "4 workers on PostgreSQL: >= 3x the throughput of 1",
                "met": rates[4] >= 3 * rates[1],
                "value": f"{rates[4] / rates[1]:.2f}x",
            }
        )
        notes.append(
            "throughput is bound by the 2 cores here, not by the model's latency: see the workers' CPU "
            "seconds beside each rate (a durable run costs far more CPU than a plain one)"
        )
    return {"title": "Durable runs on DBOS", "rows": rows, "goals": goals, "notes": notes}


def _rounded(figures: dict[str, float]) -> dict[str, object]:
    return {key: round(value, 2) for key, value in figures.items()}


def main(quick: bool = False) -> dict[str, object]:
    """``benchmarks/run_all.py``'s entry (``quick``: fewer runs)."""
    if quick:
        return measure(runs=5, queued=40, concurrency=8, workers=(1, 4))
    return measure(runs=20, queued=160, concurrency=8, workers=(1, 2, 4))


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20, help="runs per overhead measurement")
    parser.add_argument("--queued", type=int, default=160, help="runs per throughput measurement")
    parser.add_argument("--concurrency", type=int, default=8, help="runs each worker takes at once")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4], help="worker counts to measure")
    parser.add_argument("--skip-overhead", action="store_true", help="measure throughput only")
    args = parser.parse_args()
    result = measure(
        runs=args.runs,
        queued=args.queued,
        concurrency=args.concurrency,
        workers=tuple(args.workers),
        skip_overhead=args.skip_overhead,
    )
    for goal in result["goals"]:  # type: ignore[union-attr]
        print(goal)


if __name__ == "__main__":
    cli()
