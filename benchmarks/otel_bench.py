"""What tracing costs the agent loop: K=100 tool-call round trips, tracing absent, off and on.

The run is ``loop_bench``'s (a scripted model, one 3-field tool, every turn
stored in an in-memory SQLite store). Cases, each in a worker process of
its own and timed in turn round after round, so that all meet the same load:
- not present: ``weakprompt.otel`` and OpenTelemetry are never imported;
- off: ``weakprompt.otel`` imported, ``instrument()`` then ``uninstrument()``
  (the loop's hooks see no tracing: this is the "turned off" of issue 19);
- on: ``instrument()`` with an SDK ``TracerProvider`` whose spans go to an
  exporter that drops them (span creation, attributes, events, ids on commits);
- on, with content: the same with ``capture_content=True`` (every message,
  argument and result serialised and passed through the redaction hook).
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

CASES = ("not present", "off", "on", "on, with content")
K = 100


def _runner(case: str) -> Callable[[], int]:
    from loop_bench import weakprompt_runner

    from weakprompt.store import Store

    if case != "not present":
        from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

        from weakprompt.otel import instrument, uninstrument

        class Drop(SpanExporter):
            def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
                return SpanExportResult.SUCCESS

        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(Drop()))
        instrument(provider, capture_content=case == "on, with content")
        if case == "off":
            uninstrument()
    run = weakprompt_runner(K, Store.open("sqlite://"))
    if case == "not present":
        assert not any(name.startswith("opentelemetry") for name in sys.modules), "OpenTelemetry was imported"
    return run


def _worker(case: str) -> None:
    """``--worker CASE``: ``check`` answers ``ok SECONDS``; ``time N`` the seconds per run of N runs."""
    run = _runner(case)
    for line in sys.stdin:
        command, *rest = line.split()
        if command == "check":
            start = time.perf_counter()
            done = run()
            answer = f"ok {time.perf_counter() - start!r}" if done == K else f"failed: {done} calls"
        else:
            number = int(rest[0])
            gc.disable()
            start = time.perf_counter()
            for _ in range(number):
                run()
            answer = repr((time.perf_counter() - start) / number)
            gc.enable()
        print(answer, flush=True)


class _Worker:
    def __init__(self, case: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--worker", case],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def ask(self, line: str) -> str:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()
        return self.process.stdout.readline().strip() or "failed: the worker exited"

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait(timeout=60)


def main(quick: bool = False) -> dict[str, object]:
    repeats = 5 if quick else 15
    sample_seconds = 0.3 if quick else 1.0
    workers = {case: _Worker(case) for case in CASES}
    samples: dict[str, list[float]] = {case: [] for case in CASES}
    try:
        numbers: dict[str, int] = {}
        for case, worker in workers.items():
            answer = worker.ask("check")
            if not answer.startswith("ok "):
                raise RuntimeError(f"{case}: {answer}")
            worker.ask("check")  # the first run warmed the caches; size the samples on the second
            numbers[case] = max(1, round(sample_seconds / float(worker.ask("check")[3:])))
        for _ in range(repeats):
            for case, worker in workers.items():
                samples[case].append(float(worker.ask(f"time {numbers[case]}")))
    finally:
        for worker in workers.values():
            worker.close()

    rows: list[dict[str, object]] = []
    medians = {case: statistics.median(values) for case, values in samples.items()}
    base = medians["not present"]
    for case, values in samples.items():
        quartiles = statistics.quantiles(values, n=4)
        rows.append(
            {
                "case": case,
                "K": K,
                "run_ms": round(medians[case] * 1e3, 3),
                "p25_ms": round(quartiles[0] * 1e3, 3),
                "p75_ms": round(quartiles[2] * 1e3, 3),
                "per_round_trip_us": round(medians[case] / K * 1e6, 2),
                "vs_not_present": round(medians[case] / base, 4),
            }
        )
    # "Nothing measurable": the off case's median sits inside the not-present case's own spread.
    low, _, high = statistics.quantiles(samples["not present"], n=4)
    off = medians["off"]
    on_cost = (medians["on"] - base) / K * 1e6
    return {
        "title": "Tracing overhead: K=100 tool-call round trips, OpenTelemetry absent, off and on",
        "rows": rows,
        "goals": [
            {
                "goal": "off: no measurable overhead (median within the not-present interquartile range)",
                "met": low <= off <= high or off <= base,
                "value": f"{off / base:.3f}x",
            }
        ],
        "peers": {},
        "notes": [
            f"on: {on_cost:.1f} us more per round trip (a chat and an execute_tool span, ids on two commits)",
            f"on with content: {(medians['on, with content'] - base) / K * 1e6:.1f} us more per round trip",
        ],
        "charts": [
            {
                "kind": "bar",
                "title": "K=100 run with tracing absent, off, on",
                "ylabel": "ms per run",
                "bars": {case: round(medians[case] * 1e3, 3) for case in CASES},
                "file": "otel_overhead.png",
            }
        ],
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--worker", choices=CASES, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker is not None:
        _worker(args.worker)
        sys.exit(0)
    outcome = main(quick=args.quick)
    results = Path(__file__).resolve().parent / "results"
    results.mkdir(exist_ok=True)
    (results / "otel.json").write_text(json.dumps(outcome, indent=2, default=str))
    shown = {"rows": outcome["rows"], "goals": outcome["goals"], "notes": outcome["notes"]}
    print(json.dumps(shown, indent=2))
