"""Evals fanned out on DBOS: a 100-case dataset on 2 workers over PostgreSQL, one SIGKILLed midway.

Each case's run is queued as a durable evaluation (``run_experiment_durable``);
two ``weakprompt worker`` processes take them. Once both are busy, the one
holding a run between its two model calls is SIGKILLed; the other finishes
its runs. The check then counts, per case: stored results (exactly one row
each), stored replies in the case's transcript (exactly two: the lookup and
the answer), and the model calls the workers made (two; a repeat is allowed
only for a call the kill cut short, at most 0.25 s before it). Every case
must pass its evaluators.

The model waits ``--delay`` seconds per call and notes each finished call in
a file (``WEAKPROMPT_EVALS_COUNTS``), so calls are counted outside the store.

Usage: ``WEAKPROMPT_PG_URL=postgresql+psycopg://... PYTHONPATH=src python benchmarks/evals_fanout_bench.py
[--cases 100] [--delay 0.05]``. A database of its own is made on the server and dropped after.
This module is also where the workers import the prompt and the adapter from
(``evals_fanout_bench:fanout_prompt``, ``evals_fanout_bench:fanout_adapter``).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

from weakprompt.adapters.testing import FunctionAdapter, text_turn, tool_call, tool_call_turn
from weakprompt.evals import Called, Case, Dataset, MaxTurns
from weakprompt.messages import AssistantTurn
from weakprompt.model import ModelRequest
from weakprompt.prompt import MarkdownSection, Prompt, PromptTemplate
from weakprompt.tools import tool

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
QUEUE = "evals"
COUNTS_ENV = "WEAKPROMPT_EVALS_COUNTS"
DELAY_ENV = "WEAKPROMPT_EVALS_DELAY"


# -- what the workers serve -----------------------------------------------------------------------


@tool
def lookup(case: str) -> str:
    """The answer on file for ``case``."""
    return f"answer {case}"


def fanout_prompt() -> Prompt[None]:
    return Prompt(
        PromptTemplate(
            ns="benchmarks/evals",
            key="fanout",
            sections=[MarkdownSection(title="Answer", key="answer", template="Look it up.", tools=[lookup])],
        )
    )


def _note(case: str, step: str) -> None:
    folder = os.environ.get(COUNTS_ENV)
    if folder:
        with (Path(folder) / "model").open("a") as out:
            out.write(f"{case} {step} {time.time():.4f} {os.getpid()}\n")
            out.flush()
            os.fsync(out.fileno())


def _model(request: ModelRequest) -> AssistantTurn:
    time.sleep(float(os.environ.get(DELAY_ENV, "0")))
    messages = request.context.messages
    case = next(m.content for m in messages if m.role == "user")
    if messages[-1].role == "user":
        _note(case, "lookup")
        return tool_call_turn(tool_call("lookup", {"case": case}))
    _note(case, "answer")
    return text_turn(messages[-1].content.strip('"'))


def fanout_adapter() -> FunctionAdapter:
    return FunctionAdapter(_model, keep_requests=False)


def dataset(cases: int) -> Dataset[object, str]:
    return Dataset(
        name="fanout",
        cases=[
            Case(
                name=f"case-{i}",
                input=f"case-{i}",
                expected=f"answer case-{i}",
                evaluators=[Called("lookup", {"case": f"case-{i}"}), MaxTurns(2)],
            )
            for i in range(cases)
        ],
    )


# -- the check ------------------------------------------------------------------------------------


@dataclass
class FanoutCheck:
    cases: int
    stored_rows: int
    passed_cases: int
    cases_with_two_stored_replies: int
    model_calls: int
    repeated_calls: int
    repeats_outside_the_kill_window: int
    killed_executor: str
    taken_over: int
    wall_s: float

    @property
    def ok(self) -> bool:
        return (
            self.stored_rows == self.cases
            and self.passed_cases == self.cases
            and self.cases_with_two_stored_replies == self.cases
            and self.repeats_outside_the_kill_window == 0
            and self.taken_over > 0
        )


def _notes(counts: Path) -> list[tuple[str, str, float, int]]:
    path = counts / "model"
    if not path.exists():
        return []
    rows: list[tuple[str, str, float, int]] = []
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) == 4:  # a line being written is skipped until it is whole
            rows.append((parts[0], parts[1], float(parts[2]), int(parts[3])))
    return rows


def _start_worker(db: str, counts: Path, executor: str, delay: float) -> subprocess.Popen[bytes]:
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([str(SRC), str(HERE)]),
        **{COUNTS_ENV: str(counts), DELAY_ENV: str(delay)},
    )
    command = "from weakprompt.cli import main; main()"
    serve = ("--poll", "0.05", "--executor-id", executor, "--allow-module", "evals_fanout_bench")
    return subprocess.Popen(
        [sys.executable, "-c", command, "worker", "--db", db, "--queue", QUEUE, "--concurrency", "4", *serve],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _wait_for_dbos(url: str, timeout: float = 60.0) -> None:
    from sqlalchemy import create_engine, text

    from weakprompt.store.engine import normalize_url

    engine = create_engine(normalize_url(url))
    deadline = time.monotonic() + timeout
    try:
        while True:
            with engine.connect() as conn:
                made = conn.execute(text("select to_regclass('dbos.queues')")).scalar() is not None
                if made and conn.execute(text("select count(*) from dbos.queues")).scalar():
                    return
            if time.monotonic() > deadline:
                raise TimeoutError("no worker created the DBOS tables")
            time.sleep(0.2)
    finally:
        engine.dispose()


@contextmanager
def scratch_database(server_url: str) -> Iterator[str]:
    """A PostgreSQL database of its own on the server of ``server_url``, dropped afterwards."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    from weakprompt.store.engine import normalize_url

    server = make_url(normalize_url(server_url))
    name = f"weakprompt_evals_{uuid.uuid4().hex[:10]}"
    admin = create_engine(server.render_as_string(hide_password=False), isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
        yield server.set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def _victim(counts: Path, pids: set[int]) -> int | None:
    """The worker holding a run between its two model calls, the latest to start one; None yet."""
    notes = _notes(counts)
    if {pid for *_, pid in notes} != pids:
        return None
    steps: dict[str, set[str]] = defaultdict(set)
    owner: dict[str, tuple[float, int]] = {}
    for case, step, when, pid in notes:
        steps[case].add(step)
        owner.setdefault(case, (when, pid))
    in_hand = sorted(owner[case] for case, seen in steps.items() if seen == {"lookup"})
    return in_hand[-1][1] if in_hand else None


def run_check(db: str, *, cases: int = 100, delay: float = 0.05, timeout: float = 240.0) -> FanoutCheck:
    """Run the experiment on two workers over ``db`` (a PostgreSQL URL), kill one midway, count."""
    from weakprompt.durable import DurableClient
    from weakprompt.evals import ExperimentResult, load_experiment, run_experiment_durable
    from weakprompt.store import Store
    from weakprompt.transcript import Transcript

    counts = Path(tempfile.mkdtemp(prefix="evals-fanout-"))
    store = Store.open(db)  # migrated here first, before any worker opens it
    workers = [_start_worker(db, counts, "e0", delay)]
    client = None
    began = time.perf_counter()
    try:
        _wait_for_dbos(db)
        workers.append(_start_worker(db, counts, "e1", delay))
        client = DurableClient(db)
        outcome: list[ExperimentResult | BaseException] = []

        def experiment() -> None:
            assert client is not None
            try:
                outcome.append(
                    run_experiment_durable(
                        dataset(cases),
                        client=client,
                        queue=QUEUE,
                        prompt="evals_fanout_bench:fanout_prompt",
                        adapter="evals_fanout_bench:fanout_adapter",
                        store=store,
                        name="fanout",
                        timeout=timeout,
                    )
                )
            except BaseException as exc:  # handed to the main thread
                outcome.append(exc)

        runner = threading.Thread(target=experiment)
        runner.start()
        pids = {worker.pid for worker in workers}
        deadline = time.monotonic() + timeout
        victim = None
        while victim is None:
            if time.monotonic() > deadline or not runner.is_alive():
                raise RuntimeError("no worker had a run in hand to kill")
            victim = _victim(counts, pids)
            time.sleep(0.01)
        killed = next(worker for worker in workers if worker.pid == victim)
        killed.send_signal(signal.SIGKILL)
        killed_at = time.time()
        killed.wait()
        runner.join(timeout + 60)
        if not outcome:
            raise TimeoutError("the experiment did not finish")
        if isinstance(outcome[0], BaseException):
            raise outcome[0]
        result = outcome[0]
        wall = time.perf_counter() - began
        finished_by = {r.session_id: client.workflow(r.session_id).executor_id for r in result.runs}
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.terminate()
        for worker in workers:
            worker.wait(60)
        if client is not None:
            client.close()
    stored = load_experiment(store, result.experiment_id)
    replies = [
        sum(1 for c in Transcript(store, run.session_id).log() if c.role == "assistant")
        for run in stored.runs
    ]
    store.close()
    notes = _notes(counts)
    seen: dict[tuple[str, str], list[float]] = defaultdict(list)
    by_pid: dict[str, set[int]] = defaultdict(set)
    for case, step, when, pid in notes:
        seen[case, step].append(when)
        by_pid[case].add(pid)
    repeats = [times for times in seen.values() if len(times) > 1]
    outside = sum(1 for times in repeats for t in sorted(times)[:-1] if not 0 <= killed_at - t <= 0.25)
    dead = "e0" if killed is workers[0] else "e1"
    session_of = {run.case_name: run.session_id for run in stored.runs}
    taken_over = sum(
        1
        for case, pids_seen in by_pid.items()
        if victim in pids_seen and finished_by[session_of[case]] != dead
    )
    return FanoutCheck(
        cases=cases,
        stored_rows=len(stored.runs),
        passed_cases=sum(1 for c in stored.cases if c.pass_rate == 1.0),
        cases_with_two_stored_replies=sum(1 for n in replies if n == 2),
        model_calls=len(notes),
        repeated_calls=sum(len(times) - 1 for times in repeats),
        repeats_outside_the_kill_window=outside,
        killed_executor=dead,
        taken_over=taken_over,
        wall_s=round(wall, 2),
    )


def main(quick: bool = False) -> dict[str, object]:
    """``run_all.py``'s entry: the check on ``WEAKPROMPT_PG_URL`` (20 cases in quick mode), as rows."""
    url = os.environ.get("WEAKPROMPT_PG_URL")
    if not url:
        return {
            "title": "Evals on two DBOS workers, one killed",
            "rows": [],
            "notes": ["skipped: set WEAKPROMPT_PG_URL to a PostgreSQL server (.ci/postgres.sh)"],
        }
    with scratch_database(url) as db:
        check = run_check(db, cases=20 if quick else 100, delay=0.05)
    figures = {**asdict(check), "ok": check.ok}
    return {
        "title": "Evals on two DBOS workers, one killed",
        "rows": [{"case": key.replace("_", " "), "value": str(value)} for key, value in figures.items()],
        "goals": [
            {
                "goal": "every case finishes exactly once after a SIGKILL",
                "met": check.ok,
                "value": "yes" if check.ok else "no",
            }
        ],
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=100)
    parser.add_argument("--delay", type=float, default=0.05)
    args = parser.parse_args()
    pg_url = os.environ.get("WEAKPROMPT_PG_URL")
    if not pg_url:
        raise SystemExit("set WEAKPROMPT_PG_URL to a PostgreSQL server")
    with scratch_database(pg_url) as db:
        result = run_check(db, cases=args.cases, delay=args.delay)
    print(json.dumps({**asdict(result), "ok": result.ok}, indent=2))
    if not result.ok:
        raise SystemExit(1)
