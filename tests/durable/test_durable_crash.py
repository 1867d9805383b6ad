"""A worker SIGKILLed at random moments: a restarted worker finishes every run, repeating no finished call."""

from __future__ import annotations

import os
import random
import signal
import time
from pathlib import Path

import pytest

pytest.importorskip("dbos")

from durable_support import notes, repeated, start_worker, wait_for_system_database
from weakprompt.durable import DurableClient
from weakprompt.store import Store
from weakprompt.transcript import Transcript

RUNS = 24
ROUNDS = 3
KILLS = 30
# A call that ended this close before a kill may not have had its DBOS record committed yet: DBOS
# runs a step at least once, so that one call may run again. Anything older must never repeat.
RECORD_WINDOW = 0.25


def _conversation(store: Store, session_id: str) -> list[tuple[str, str, tuple[tuple[str, str], ...]]]:
    messages = Transcript(store, session_id).compile().messages
    return [(m.role, m.content, tuple((c.name, c.arguments_json()) for c in m.tool_calls)) for m in messages]


def test_killed_worker_runs_are_finished_without_repeating_calls(tmp_path: Path) -> None:
    rng = random.Random(int(os.environ.get("WEAKPROMPT_DURABLE_SEED", "20")))
    db = str(tmp_path / "store.db")
    counts = tmp_path / "counts"
    counts.mkdir()
    worker = start_worker(db, "crash", counts, executor="w", delay=0.01)
    client = None
    kill_times: list[float] = []
    try:
        wait_for_system_database(db)
        client = DurableClient(db)
        ids = [
            client.submit_sync(
                "crash",
                "durable_fixtures:counter_prompt",
                adapter="durable_fixtures:counter_adapter",
                session_id=f"s{i}",
                input=f"rounds={ROUNDS} id=s{i}",
            )
            for i in range(RUNS)
        ]
        for _ in range(KILLS):
            time.sleep(rng.uniform(0.6, 1.6))  # start-up takes most of the first second
            kill_times.append(time.time())
            worker.send_signal(signal.SIGKILL)
            worker.wait()
            worker = start_worker(db, "crash", counts, executor="w", delay=0.01)
        results = [client.result_sync(i, timeout=120) for i in ids]
    finally:
        worker.kill()
        worker.wait(30)
        if client is not None:
            client.close()
    assert [r.text for r in results] == [f"counted {ROUNDS}"] * RUNS

    def near_a_kill(times: list[float]) -> bool:
        return all(any(0 <= k - t <= RECORD_WINDOW for k in kill_times) for t in times[:-1])

    for name in ("model", "tools"):
        for key, times in repeated(notes(counts, name)).items():
            assert near_a_kill(times), f"{name} call {key} ran again long after it finished: {times}"
    # every run made each of its tool calls (and its side effect) at least once
    done = {(who, step) for who, step, _ in notes(counts, "tools")}
    assert done == {(f"s{i}", str(k)) for i in range(RUNS) for k in range(ROUNDS)}

    # the transcripts equal an uninterrupted run's (the tally reproduced after every recovery)
    store = Store.open(db)
    try:
        expected_tail = [("tool", f'{{"total":{k + 1}}}', ()) for k in range(ROUNDS)]
        for i in range(RUNS):
            conversation = _conversation(store, f"s{i}")
            assert [m for m in conversation if m[0] == "tool"] == expected_tail, conversation
            assert [m[0] for m in conversation] == ["system", "user"] + ["assistant", "tool"] * ROUNDS + [
                "assistant"
            ]
            assert conversation[-1][1] == f"counted {ROUNDS}"
    finally:
        store.close()
