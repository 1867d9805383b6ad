"""Shared measuring helpers for the benchmark scripts.

Every benchmark reports a median with its spread and a ratio to something
measured in the same run (a floor or a peer library), never a lone time.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Stats:
    """Per-call cost in microseconds over several repeats."""

    median_us: float
    p25_us: float
    p75_us: float
    repeats: int

    @property
    def spread_us(self) -> float:
        return self.p75_us - self.p25_us

    def ratio_to(self, other: Stats) -> float:
        return self.median_us / other.median_us if other.median_us else float("inf")

    def as_row(self, case: str, **extra: object) -> dict[str, object]:
        row: dict[str, object] = {
            "case": case,
            "median_us": round(self.median_us, 3),
            "p25_us": round(self.p25_us, 3),
            "p75_us": round(self.p75_us, 3),
        }
        row.update(extra)
        return row


def measure(fn: Callable[[], object], *, number: int, repeats: int = 7) -> Stats:
    """Time ``number`` calls of ``fn`` per repeat; GC is off while timing."""
    fn()  # warm caches and lazy imports outside the measurement
    samples: list[float] = []
    enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(repeats):
            start = time.perf_counter()
            for _ in range(number):
                fn()
            samples.append((time.perf_counter() - start) / number * 1e6)
    finally:
        if enabled:
            gc.enable()
    return stats_of(samples)


def stats_of(samples: Sequence[float]) -> Stats:
    """Median and quartiles of per-call samples (one sample stands for all three)."""
    quartiles = statistics.quantiles(samples, n=4) if len(samples) > 1 else [samples[0]] * 3
    return Stats(statistics.median(samples), quartiles[0], quartiles[2], len(samples))


def interleaved(cases: Mapping[str, Callable[[], object]], *, number: int, repeats: int) -> dict[str, Stats]:
    """Time every case once per round, round after round; GC is off while timing.

    The machine is shared, so load drifts during a run; cases measured in turn
    within each round meet the same drift, which keeps their ratios honest.
    """
    for fn in cases.values():
        fn()  # warm caches and lazy imports outside the measurement
    samples: dict[str, list[float]] = {label: [] for label in cases}
    enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(repeats):
            for label, fn in cases.items():
                start = time.perf_counter()
                for _ in range(number):
                    fn()
                samples[label].append((time.perf_counter() - start) / number * 1e6)
    finally:
        if enabled:
            gc.enable()
    return {label: stats_of(values) for label, values in samples.items()}


class LineWorker:
    """A helper process spoken to a line at a time: one request line in, one answer line out.

    The benchmarks run each framework (or each version of weakprompt) in a
    process of its own, so that none runs in a heap another one filled.
    ``args`` follow ``python``; ``env`` replaces the environment when given.
    """

    def __init__(self, args: Sequence[str], *, env: Mapping[str, str] | None = None) -> None:
        self.process = subprocess.Popen(
            [sys.executable, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=None if env is None else dict(env),
        )

    def read(self) -> str:
        """The next answer line ('' once the process has exited)."""
        assert self.process.stdout is not None
        return self.process.stdout.readline().strip()

    def ask(self, line: str) -> str:
        """Send one request line; its answer line, or a ``failed:`` text if the process exited."""
        assert self.process.stdin is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()
        return self.read() or "failed: the worker exited"

    def close(self, timeout: float = 120) -> None:
        """End the input and wait for the process to finish."""
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait(timeout=timeout)


def interleaved_workers(
    workers: Mapping[str, LineWorker],
    arg: str,
    repeats: int,
    status: dict[str, str],
    *,
    sample_seconds: float,
) -> dict[str, list[float]]:
    """Seconds per run of every case still measured, each in its own worker process, taken in turn.

    A worker answers ``check ARG`` with ``ok SECONDS`` (one run, unmeasured,
    which also warms its caches) and ``time ARG N`` with the seconds per run
    of N runs back to back. Cases timed one after the other within a round
    meet the same load drift, so their ratios stay honest (as
    :func:`interleaved`); each sample runs a case for about
    ``sample_seconds`` (at least once), so a fast case is not timed on one
    cold run while a slow one amortises it. ``status`` says per case
    ``measured`` or why not; a case already marked otherwise is skipped.
    """
    active: dict[str, tuple[LineWorker, int]] = {}
    for name, worker in workers.items():
        if status.get(name, "measured") != "measured":
            continue
        answer = worker.ask(f"check {arg}")
        if not answer.startswith("ok "):
            status[name] = answer
            continue
        status[name] = "measured"
        active[name] = (worker, max(1, round(sample_seconds / max(float(answer[3:]), 1e-9))))
    samples: dict[str, list[float]] = {name: [] for name in active}
    for _ in range(repeats):
        for name, (worker, number) in list(active.items()):
            answer = worker.ask(f"time {arg} {number}")
            try:
                samples[name].append(float(answer))
            except ValueError:
                status[name] = answer
                del active[name], samples[name]
    return samples


def run_cli(
    main: Callable[[bool], Mapping[str, Any]],
    *,
    name: str,
    description: str | None,
    show_notes: bool = False,
    quick_help: str | None = None,
) -> None:
    """The ``__main__`` block of a benchmark script.

    Parses ``--quick``, runs ``main``, writes ``results/<name>.json`` next to
    the scripts and prints the rows and goals (and notes when asked).
    """
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--quick", action="store_true", help=quick_help)
    args = parser.parse_args()
    result = main(args.quick)
    out = Path(__file__).resolve().parent / "results" / f"{name}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result, indent=2, default=str))
    for row in result["rows"]:
        print(row)
    for goal in result["goals"]:
        print(goal)
    if show_notes:
        for note in result["notes"]:
            print("-", note)
