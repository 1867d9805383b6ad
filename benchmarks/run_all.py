"""Run every ``benchmarks/*_bench.py`` and write REPORT.md plus PNG charts.

Each benchmark module exposes ``main(quick: bool) -> dict``. The dict may hold
``title``, ``rows`` (list of flat dicts), ``goals`` (list of
``{"goal", "met", "value"}``), ``peers`` (name -> version or why missing),
``notes`` and ``charts`` (list of ``{"kind": "bar"|"line", "title", "xlabel",
"ylabel", "series": {label: [[x, y], ...]} | "bars": {label: value}, "file"}``).
A benchmark that fails is reported as failed, never dropped.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import platform
import sys
import time
import traceback
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
PEER_PACKAGES = ("weakprompt", "pydantic-ai-slim", "openai-agents", "llama-cpp-python", "matplotlib")


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def _load(path: Path) -> Any:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module


def _machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import os

    return f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}, {platform.system()}"


def _table(rows: list[dict[str, Any]]) -> list[str]:
    if not rows:
        return []
    columns: list[str] = []
    for row in rows:
        for key in row:
            if key not in columns:
                columns.append(key)
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in rows:
        cells = []
        for col in columns:
            value = row.get(col, "")
            cells.append(f"{value:.3g}" if isinstance(value, float) else str(value))
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _chart(spec: dict[str, Any]) -> str | None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    fig, ax = plt.subplots(figsize=(7, 4))
    if spec.get("kind") == "line":
        for label, points in spec["series"].items():
            xs = [p[0] for p in points]
            ys = [p[1] for p in points]
            ax.plot(xs, ys, marker="o", label=label)
        if spec.get("logx"):
            ax.set_xscale("log")
        if spec.get("logy"):
            ax.set_yscale("log")
        ax.legend()
    else:
        labels = list(spec["bars"].keys())
        values = [spec["bars"][k] for k in labels]
        bars = ax.bar(labels, values, color=["#2b6cb0" if i == 0 else "#a0aec0" for i in range(len(labels))])
        for bar, value in zip(bars, values, strict=True):
            ax.annotate(
                f"{value:.3g}",
                (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                ha="center",
                va="bottom",
                fontsize=8,
            )
        if spec.get("logy"):
            ax.set_yscale("log")
        plt.setp(ax.get_xticklabels(), rotation=15, ha="right")
    ax.set_title(spec.get("title", ""))
    ax.set_xlabel(spec.get("xlabel", ""))
    ax.set_ylabel(spec.get("ylabel", ""))
    fig.tight_layout()
    out = RESULTS / spec["file"]
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out.name


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="few repeats; for development (< 2 min)")
    parser.add_argument(
        "--only",
        nargs="*",
        help="benchmark names to run (default: all); the others are reported from their saved results",
    )
    args = parser.parse_args()
    RESULTS.mkdir(exist_ok=True)
    sys.path.insert(0, str(HERE))
    scripts = sorted(HERE.glob("*_bench.py"))
    chosen = {s.stem.removesuffix("_bench") for s in scripts}
    if args.only:
        chosen &= set(args.only)
    report: list[str] = [
        "# weakprompt benchmark report",
        "",
        f"- date: {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}",
        f"- machine: {_machine()}",
        f"- mode: {'quick' if args.quick else 'full'}",
        "- versions: " + ", ".join(f"{p} {_version(p)}" for p in PEER_PACKAGES),
        "",
        "Times are per call, medians over repeats with the interquartile range;"
        " ratios compare against a floor or a peer measured in the same run.",
        "",
    ]
    goal_lines: list[str] = [
        "## Goals from the issues",
        "",
        "| benchmark | goal | value | met |",
        "|---|---|---|---|",
    ]
    sections: list[str] = []
    failures = 0
    for script in scripts:
        name = script.stem.removesuffix("_bench")
        saved = RESULTS / f"{name}.json"
        if name not in chosen:
            # --only: the others are reported from their last saved result, so the report stays whole
            if not saved.exists():
                continue
            result: dict[str, Any] = json.loads(saved.read_text())
            took = result.get("elapsed_s")
            timing = "_from the saved result of an earlier run" + (f" ({took} s)_" if took else "_")
        else:
            print(f"== {name}", flush=True)
            started = time.perf_counter()
            try:
                result = _load(script).main(quick=args.quick)
            except Exception:  # a failing benchmark is reported, not dropped
                failures += 1
                sections += [f"## {name}", "", "**FAILED**", "", "```", traceback.format_exc(), "```", ""]
                goal_lines.append(f"| {name} | (benchmark failed) | - | no |")
                continue
            elapsed = time.perf_counter() - started
            result = {**result, "elapsed_s": round(elapsed, 1)}
            saved.write_text(json.dumps(result, indent=2, default=str))
            timing = f"_{elapsed:.1f} s_"
        sections += [f"## {result.get('title', name)}", "", timing, ""]
        peers = result.get("peers") or {}
        if peers:
            sections += ["Peers: " + ", ".join(f"{k} ({v})" for k, v in peers.items()), ""]
        sections += [*_table(result.get("rows", [])), ""]
        for chart in result.get("charts", []):
            png = _chart(chart)
            if png:
                sections += [f"![{chart.get('title', '')}]({png})", ""]
        for note in result.get("notes", []):
            sections.append(f"- {note}")
        sections.append("")
        for goal in result.get("goals", []):
            met = "yes" if goal.get("met") else "**no**"
            goal_lines.append(f"| {name} | {goal['goal']} | {goal.get('value', '')} | {met} |")
    report += [*goal_lines, "", *sections]
    (RESULTS / "REPORT.md").write_text("\n".join(report) + "\n")
    print(f"wrote {RESULTS / 'REPORT.md'}")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
