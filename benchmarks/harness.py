"""Shared measuring helpers for the benchmark scripts.

Every benchmark reports a median with its spread and a ratio to something
measured in the same run (a floor or a peer library), never a lone time.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass


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
    quartiles = statistics.quantiles(samples, n=4) if len(samples) > 1 else [samples[0]] * 3
    return Stats(statistics.median(samples), quartiles[0], quartiles[2], repeats)
