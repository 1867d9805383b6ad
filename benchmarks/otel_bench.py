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
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import LineWorker

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


def _worker_process(case: str) -> LineWorker:
    return LineWorker([str(Path(__file__).resolve()), "--worker", case])


def main(quick: bool = False) -> dict[str, object]:
    repeats = 7 if quick else 31
    sample_seconds = 0.2 if quick else 0.3
    workers = {case: _worker_process(case) for case in CASES}
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

    # The machine is shared and its load drifts between rounds: each case is compared with the
    # not-present sample of the same round (a paired ratio), and the ratios are summarised.
    rows: list[dict[str, object]] = []
    medians = {case: statistics.median(values) for case, values in samples.items()}
    base = medians["not present"]
    ratios = {
        case: [value / plain for value, plain in zip(values, samples["not present"], strict=True)]
        for case, values in samples.items()
    }
    for case, values in samples.items():
        quartiles = statistics.quantiles(values, n=4)
        ratio_quartiles = statistics.quantiles(ratios[case], n=4)
        rows.append(
            {
                "case": case,
                "K": K,
                "run_ms": round(medians[case] * 1e3, 3),
                "p25_ms": round(quartiles[0] * 1e3, 3),
                "p75_ms": round(quartiles[2] * 1e3, 3),
                "per_round_trip_us": round(medians[case] / K * 1e6, 2),
                "paired_ratio": round(statistics.median(ratios[case]), 4),
                "ratio_p25": round(ratio_quartiles[0], 4),
                "ratio_p75": round(ratio_quartiles[2], 4),
            }
        )
    # "Nothing measurable": 1.0 lies within the interquartile range of the paired off ratios.
    low, off, high = statistics.quantiles(ratios["off"], n=4)
    on_cost = (statistics.median(ratios["on"]) - 1) * base / K * 1e6
    content_cost = (statistics.median(ratios["on, with content"]) - 1) * base / K * 1e6
    return {
        "title": "Tracing overhead: K=100 tool-call round trips, OpenTelemetry absent, off and on",
        "rows": rows,
        "goals": [
            {
                "goal": "off: no measurable overhead (1.0 within the paired off/not-present ratios' IQR)",
                "met": low <= 1.0 <= high or high < 1.0,
                "value": f"{off:.3f}x (IQR {low:.3f}-{high:.3f})",
            }
        ],
        "peers": {},
        "notes": [
            f"on: {on_cost:.1f} us more per round trip (a chat and an execute_tool span, ids on two commits)",
            f"on with content: {content_cost:.1f} us more per round trip (the whole context is recorded on "
            "every chat span, so this grows with the conversation)",
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
