"""Import time of weakprompt next to pydantic-ai and openai-agents.

Each case runs ``python -X importtime -c "import ..."`` in a fresh process and
reads the cumulative time of the named top-level module from the importtime
report (so interpreter start-up is excluded). Repeated, median and quartiles.

Every case imports from compiled bytecode, as an installed package does: the
processes share one bytecode cache directory (``PYTHONPYCACHEPREFIX``) and
each case runs once, unmeasured, to fill it. Without that, an environment
that sets ``PYTHONDONTWRITEBYTECODE`` (as a sandbox may) would compile
weakprompt's source on every import while the peers, installed with their
bytecode, would not.

Besides the bare ``import weakprompt`` (the goal from the issue), the
imports an agent actually needs are measured too: prompts, tools, session,
the runtime (evaluation loop and dispatcher) and the test adapters, and
separately the store, which loads SQLAlchemy.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

CASES: dict[str, tuple[str, ...]] = {
    "weakprompt": ("weakprompt",),
    "weakprompt agent imports": (
        "weakprompt.prompt",
        "weakprompt.tools",
        "weakprompt.session",
        "weakprompt.runtime",
        "weakprompt.adapters.testing",
    ),
    "weakprompt + store (SQLAlchemy)": ("weakprompt.runtime", "weakprompt.store"),
    "weakprompt cli": ("weakprompt.cli",),
    "pydantic_ai": ("pydantic_ai",),
    "agents (openai-agents)": ("agents",),
}
GOAL_MS = 150.0
_LINE = re.compile(r"^import time:\s+(\d+)\s+\|\s+(\d+)\s+\|(\s*)(\S+)\s*$")


_BYTECODE = tempfile.mkdtemp(prefix="weakprompt-import-bench-")


def _environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = _BYTECODE
    return env


def _top_level(code: str) -> list[tuple[str, int]]:
    """(module, cumulative microseconds) of every top-level entry of an importtime report."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code],
        capture_output=True,
        text=True,
        check=False,
        env=_environment(),
    )
    if done.returncode != 0:
        raise RuntimeError(f"{code!r} failed: {done.stderr.strip().splitlines()[-1:]}")
    entries: list[tuple[str, int]] = []
    for line in done.stderr.splitlines():
        match = _LINE.match(line)
        if match and match.group(3) == " ":  # one space: not nested under another import
            entries.append((match.group(4), int(match.group(2))))
    return entries


_STARTUP: set[str] = set()


def cumulative_ms(modules: tuple[str, ...]) -> float:
    """Import ``modules`` in a fresh interpreter: the time of what that import loaded.

    Top-level entries that interpreter start-up also loads (``site``,
    ``encodings``, ...) are left out, so only the ``-c`` code is counted.
    """
    if not _STARTUP:
        _STARTUP.update(name for name, _ in _top_level("pass"))
    code = "; ".join(f"import {m}" for m in modules)
    total_us = sum(us for name, us in _top_level(code) if name not in _STARTUP)
    return total_us / 1000


def main(quick: bool = False) -> dict[str, object]:
    repeats = 3 if quick else 11
    rows: list[dict[str, object]] = []
    medians: dict[str, float] = {}
    peers: dict[str, str] = {}
    for name, modules in CASES.items():
        try:
            cumulative_ms(modules)  # unmeasured: fills the bytecode cache
            samples = [cumulative_ms(modules) for _ in range(repeats)]
        except RuntimeError as exc:  # a missing peer is reported, not dropped
            peers[name] = f"failed: {exc}"
            continue
        median = statistics.median(samples)
        quartiles = statistics.quantiles(samples, n=4)
        medians[name] = median
        rows.append(
            {
                "case": name,
                "modules": ", ".join(modules),
                "median_ms": round(median, 2),
                "p25_ms": round(quartiles[0], 2),
                "p75_ms": round(quartiles[2], 2),
            }
        )
        peers[name] = "measured"
    ours = medians.get("weakprompt")
    agent = medians.get("weakprompt agent imports")
    goals: list[dict[str, object]] = [
        {
            "goal": f"import weakprompt < {GOAL_MS:.0f} ms",
            "met": ours is not None and ours < GOAL_MS,
            "value": f"{ours:.1f} ms" if ours is not None else "failed",
        },
        {
            "goal": f"agent imports (prompt, tools, session, runtime, testing) < {GOAL_MS:.0f} ms",
            "met": agent is not None and agent < GOAL_MS,
            "value": f"{agent:.1f} ms" if agent is not None else "failed",
        },
    ]
    notes: list[str] = []
    for peer in ("pydantic_ai", "agents (openai-agents)"):
        if agent is not None and peer in medians:
            notes.append(
                f"{peer}: {medians[peer]:.0f} ms, {medians[peer] / agent:.1f}x the weakprompt agent imports"
            )
    return {
        "title": "Import time (python -X importtime, fresh process each)",
        "rows": rows,
        "peers": {k: v for k, v in peers.items() if not k.startswith("weakprompt")},
        "goals": goals,
        "notes": notes,
        "charts": [
            {
                "kind": "bar",
                "title": "Import time (median, ms)",
                "ylabel": "ms",
                "bars": {name: round(value, 1) for name, value in medians.items()},
                "logy": True,
                "file": "import_time.png",
            }
        ],
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    outcome = main(quick=args.quick)
    results = Path(__file__).resolve().parent / "results"
    results.mkdir(exist_ok=True)
    (results / "import.json").write_text(json.dumps(outcome, indent=2))
    print(
        json.dumps({"rows": outcome["rows"], "goals": outcome["goals"], "notes": outcome["notes"]}, indent=2)
    )
