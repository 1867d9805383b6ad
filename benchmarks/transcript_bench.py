"""Transcript costs on a real SQLite file, each next to a floor measured in the same run.

Cases:
- append: one commit per call through ``Transcript`` (write transaction, blob,
  commit row, tool-set link) vs the floor: raw ``sqlite3`` inserting one row
  per transaction into a table of the same width, same WAL settings;
- full compile: a cold ``Transcript`` compiling N commits vs the floor: raw
  ``sqlite3`` reading the same rows and ``json.loads``-ing each blob;
- incremental compile: a warm ``Transcript`` compiling after another writer
  appended one commit (ratio: full / incremental);
- same-session writers: several writers (each its own store handle, like
  separate processes) running loop-shaped turns on one session; the rate of
  turns at the start against the rate once the session holds a few thousand
  commits, next to one writer alone doing the same turns (whose rate also
  falls somewhat as the session grows: a bigger view to copy, a bigger heap
  for the garbage collector). A writer whose turn lands after another's
  must not rebuild its whole view, so the two shapes should match;
- storage: 1,000 turns sharing one 20-tool set, linked through content-addressed
  tool sets (weakprompt) vs the same tools inline in every assistant commit vs
  one link row per tool per commit (the plain ``commit_hash, tool_hash,
  position`` layout), file bytes after a WAL checkpoint.
"""

from __future__ import annotations

import argparse
import gc
import json
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import Stats

from weakprompt.canonical import canonical_json, content_hash
from weakprompt.messages import ToolCall
from weakprompt.store import Store
from weakprompt.transcript import Transcript, hash_tool_schema


def twenty_tools() -> list[dict[str, Any]]:
    """Realistic schemas: a sentence of description and three described parameters."""
    return [
        {
            "name": f"tool_{i:02d}",
            "description": f"Runs operation {i} on a workspace file and reports what changed.",
            "parameters": {
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "File path relative to the workspace root."},
                    "limit": {
                        "type": "integer",
                        "minimum": 1,
                        "description": "Maximum number of lines to return.",
                    },
                    "dry_run": {
                        "type": "boolean",
                        "description": "Report what would change without writing.",
                    },
                },
                "required": ["path"],
                "additionalProperties": False,
            },
        }
        for i in range(20)
    ]


def _stats(samples: list[float]) -> Stats:
    quartiles = statistics.quantiles(samples, n=4) if len(samples) > 1 else [samples[0]] * 3
    return Stats(statistics.median(samples), quartiles[0], quartiles[2], len(samples))


def _timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1e6


def append_turn(t: Transcript, i: int) -> None:
    """Commit i of a repeating 4-commit agent turn: user, tool call, tool result, answer."""
    step = i % 4
    if step == 0:
        t.user(f"Question {i}: where is feature {i} implemented?")
    elif step == 1:
        t.assistant("", tool_calls=[ToolCall(f"c{i}", "tool_03", json.dumps({"path": f"src/m{i}.py"}))])
    elif step == 2:
        t.tool_result(f"c{i - 1}", "tool_03", f"src/m{i}.py:{i}: def feature_{i}(): ...")
    else:
        t.assistant(f"Feature {i} is in src/m{i}.py.")


# --- append ---------------------------------------------------------------------------------------------


def bench_append(folder: Path, n: int, batches: int) -> tuple[Stats, Stats, Store, Transcript]:
    store = Store.open(folder / "append.db")
    t = Transcript(store, "bench")
    t.set_tools(twenty_tools())
    per_batch = n // batches
    samples: list[float] = []
    for b in range(batches):
        start = time.perf_counter()
        for i in range(b * per_batch, (b + 1) * per_batch):
            append_turn(t, i)
        samples.append((time.perf_counter() - start) / per_batch * 1e6)
    ours = _stats(samples)

    raw = sqlite3.connect(folder / "floor.db", isolation_level=None)
    raw.execute("PRAGMA journal_mode=WAL")
    raw.execute("PRAGMA synchronous=NORMAL")
    raw.execute(
        "CREATE TABLE rows (hash TEXT PRIMARY KEY, session TEXT, seq INTEGER, parent TEXT, content TEXT, "
        "created_at TEXT, UNIQUE (session, seq))"
    )
    floor_samples: list[float] = []
    parent = None
    for b in range(batches):
        start = time.perf_counter()
        for i in range(b * per_batch, (b + 1) * per_batch):
            content = canonical_json({"role": "user", "content": f"Question {i}: where is feature {i}?"})
            digest = content_hash([parent, content])
            raw.execute("BEGIN IMMEDIATE")
            raw.execute(
                "INSERT INTO rows VALUES (?, 'bench', ?, ?, ?, '2026-01-01')", (digest, i, parent, content)
            )
            raw.execute("COMMIT")
            parent = digest
        floor_samples.append((time.perf_counter() - start) / per_batch * 1e6)
    raw.close()
    return ours, _stats(floor_samples), store, t


# --- compile --------------------------------------------------------------------------------------------


def floor_read(path: Path) -> int:
    raw = sqlite3.connect(path)
    try:
        rows = raw.execute(
            "SELECT c.hash, c.metadata_json, b.content FROM commits c JOIN blobs b ON b.hash = c.blob_hash "
            "WHERE c.session_id = 'bench' ORDER BY c.seq"
        ).fetchall()
        return len([(json.loads(m), json.loads(c)) for _, m, c in rows])
    finally:
        raw.close()


def bench_compile(
    store: Store, t: Transcript, n: int, repeats: int, incremental_repeats: int
) -> dict[str, Stats]:
    path = Path(store.url.removeprefix("sqlite:///"))
    full_samples = [_timed(lambda: Transcript(store, "bench").compile()) for _ in range(repeats)]
    floor_samples = [_timed(lambda: floor_read(path)) for _ in range(repeats)]
    assert floor_read(path) == n

    warm = Transcript(store, "bench")
    warm.compile()
    writer = Transcript(store, "bench")
    incremental: list[float] = []
    own: list[float] = []
    for i in range(incremental_repeats):
        writer.user(f"one more {i}")  # another object (or process) appends
        incremental.append(_timed(warm.compile))
        warm.user(f"own append {i}")  # this object appends: no read needed
        own.append(_timed(warm.compile))
    final = warm.compile()
    assert len(final.messages) == n + 2 * incremental_repeats
    assert final == Transcript(store, "bench").compile()
    return {
        "full": _stats(full_samples),
        "floor": _stats(floor_samples),
        "incremental": _stats(incremental),
        "own": _stats(own),
    }


# --- same-session writers ------------------------------------------------------------------------------


def bench_same_session(folder: Path, writers: int, turns: int, window: int) -> tuple[float, float, int]:
    """Turns per second over the first and the last ``window`` turns of ``writers`` sharing one session.

    Each turn is what the evaluation loop does: ``turn(refresh=False)``, a
    compile, an assistant commit with a tool call and its result. Returns
    ``(start rate, end rate, moved turns)``.
    """
    path = folder / f"same-session-{writers}.db"
    Store.open(path).close()
    done: list[float] = []
    moved = [0]
    lock = threading.Lock()
    start = threading.Barrier(writers)
    tools = twenty_tools()

    def work(w: int) -> None:
        with Store.open(path) as store:
            t = Transcript(store, "shared")
            t.set_tools(tools)
            start.wait()
            n = 0
            while True:
                with lock:
                    if len(done) >= turns:
                        return
                with t.turn(refresh=False) as record:
                    t.compile()
                    call = f"w{w}-{n}"
                    t.assistant("", tool_calls=[ToolCall(call, "tool_03", '{"path": "a.py"}')])
                    t.tool_result(call, "tool_03", f"result {n} of writer {w}")
                n += 1
                with lock:
                    done.append(time.perf_counter())
                    moved[0] += record.moved

    threads = [threading.Thread(target=work, args=(w,)) for w in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    done.sort()
    first = window / (done[window] - done[0])
    last = window / (done[-1] - done[-1 - window])
    with Store.open(path) as store:
        assert Transcript(store, "shared").compile() == Transcript(store, "shared").compile()
    return first, last, moved[0]


# --- storage ---------------------------------------------------------------------------------------------


def file_bytes(path: Path) -> int:
    raw = sqlite3.connect(path)
    try:
        raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        pages = (
            raw.execute("PRAGMA page_count").fetchone()[0]
            - raw.execute("PRAGMA freelist_count").fetchone()[0]
        )
        return int(pages * raw.execute("PRAGMA page_size").fetchone()[0])
    finally:
        raw.close()


def build_turns(path: Path, turns: int, mode: str) -> int:
    tools = twenty_tools()
    with Store.open(path) as store:
        t = Transcript(store, "bench")
        for i in range(turns):
            t.user(f"Question {i}", tools=None)
            if mode == "linked":
                t.assistant(f"Answer {i}", tools=tools)
            elif mode == "inline":
                t.assistant(f"Answer {i}", tools=None, metadata={"tools": tools})
            else:
                t.assistant(f"Answer {i}", tools=None)
    if mode == "per-tool-rows":
        raw = sqlite3.connect(path)
        with raw:
            raw.execute(
                "CREATE TABLE plain_tool_definitions (content_hash VARCHAR(64) PRIMARY KEY, "
                "name VARCHAR(255), schema_json TEXT, created_at VARCHAR(40))"
            )
            raw.execute("CREATE INDEX ix_plain_name ON plain_tool_definitions (name)")
            raw.execute(
                "CREATE TABLE plain_commit_tools (commit_hash VARCHAR(64), tool_hash VARCHAR(64), "
                "position INTEGER, PRIMARY KEY (commit_hash, tool_hash))"
            )
            raw.execute("CREATE INDEX ix_plain_commit ON plain_commit_tools (commit_hash)")
            hashes = [hash_tool_schema(s) for s in tools]
            raw.executemany(
                "INSERT INTO plain_tool_definitions VALUES (?, ?, ?, '2026-01-01')",
                [(h, s["name"], canonical_json(s)) for h, s in zip(hashes, tools, strict=True)],
            )
            commits = [r[0] for r in raw.execute("SELECT hash FROM commits WHERE role = 'assistant'")]
            raw.executemany(
                "INSERT INTO plain_commit_tools VALUES (?, ?, ?)",
                [(c, h, p) for c in commits for p, h in enumerate(hashes)],
            )
        raw.close()
    return file_bytes(path)


def main(quick: bool) -> dict[str, Any]:
    n = 1_000 if quick else 10_000
    batches = 10
    repeats = 3 if quick else 5
    incremental_repeats = 20 if quick else 50
    turns = 300 if quick else 1_000
    same_session_turns = 600 if quick else 1_500  # two commits each: 3,000 commits in full mode
    window = 100 if quick else 250

    enabled = gc.isenabled()
    with tempfile.TemporaryDirectory(prefix="wp-transcript-bench-") as tmp:
        folder = Path(tmp)
        append, append_floor, store, t = bench_append(folder, n, batches)
        gc.disable()
        try:
            compiled = bench_compile(store, t, n, repeats, incremental_repeats)
        finally:
            if enabled:
                gc.enable()
        store.close()
        rate_start, rate_end, moved = bench_same_session(folder, 6, same_session_turns, window)
        alone_start, alone_end, _ = bench_same_session(folder, 1, same_session_turns, window)
        sizes = {
            mode: build_turns(folder / f"{mode}.db", turns, mode)
            for mode in ("linked", "inline", "per-tool-rows", "none")
        }

    full, floor, incremental, own = (
        compiled["full"],
        compiled["floor"],
        compiled["incremental"],
        compiled["own"],
    )
    speedup = full.median_us / incremental.median_us
    storage_ratio = sizes["inline"] / sizes["linked"]
    plain_ratio = sizes["per-tool-rows"] / sizes["linked"]
    rows = [
        append_floor.as_row("append floor: raw sqlite3 insert, one transaction per row", commits=n),
        append.as_row(
            "weakprompt append (per commit)", commits=n, x_floor=round(append.ratio_to(append_floor), 2)
        ),
        floor.as_row(f"compile floor: raw select + json.loads of {n} rows"),
        full.as_row(f"weakprompt full compile, {n} commits (cold)", x_floor=round(full.ratio_to(floor), 2)),
        incremental.as_row(
            "weakprompt compile after one append by another writer",
            full_over_incremental=round(speedup, 1),
        ),
        own.as_row(
            "weakprompt compile after its own append",
            full_over_incremental=round(full.median_us / own.median_us, 1),
        ),
        {
            "case": f"same-session writers: 6 writers, turns/s over the first {window} turns",
            "turns_per_s": round(rate_start, 1),
        },
        {
            "case": f"same-session writers: turns/s over the last {window} of {same_session_turns} turns",
            "turns_per_s": round(rate_end, 1),
            "end_over_start": round(rate_end / rate_start, 2),
            "moved_turns": moved,
        },
        {
            "case": f"one writer alone, same turns: turns/s over the first and last {window}",
            "turns_per_s": round(alone_start, 1),
            "turns_per_s_end": round(alone_end, 1),
            "end_over_start": round(alone_end / alone_start, 2),
        },
        {"case": "storage: no tools at all (baseline)", "bytes": sizes["none"]},
        {"case": "storage: linked tool sets (weakprompt)", "bytes": sizes["linked"]},
        {
            "case": "storage: tools inline in every assistant commit",
            "bytes": sizes["inline"],
            "x_linked": round(storage_ratio, 2),
        },
        {
            "case": "storage: one link row per tool per commit",
            "bytes": sizes["per-tool-rows"],
            "x_linked": round(plain_ratio, 2),
        },
    ]
    goals = [
        {
            "goal": "incremental compile >= 20x faster than full",
            "met": speedup >= 20,
            "value": f"{speedup:.0f}x",
        },
        {
            "goal": "inline tools take >= 4x the bytes of linked",
            "met": storage_ratio >= 4,
            "value": f"{storage_ratio:.1f}x",
        },
        {
            "goal": "same-session writers keep their rate as well as one writer alone (>= 0.8x its shape)",
            "met": rate_end / rate_start >= 0.8 * (alone_end / alone_start),
            "value": f"{rate_end / rate_start:.2f} vs {alone_end / alone_start:.2f}",
        },
        {
            "goal": "append <= 15x the raw-sqlite floor",
            "met": append.ratio_to(append_floor) <= 15,
            "value": f"{append.ratio_to(append_floor):.1f}x",
        },
    ]
    return {
        "title": "Transcript: append, compile, tool storage",
        "rows": rows,
        "goals": goals,
        "peers": {},
        "notes": [
            f"{n} commits appended in {batches} batches; spread is over batch means.",
            f"storage: {turns} turns (user + assistant) sharing one 20-tool set; bytes after a checkpoint.",
            "append floor writes one row to one table; a commit writes a blob, a commit row and a "
            "tool-set link under foreign keys, through SQLAlchemy Core.",
        ],
        "charts": [
            {
                "kind": "bar",
                "title": f"Compile cost at {n} commits (us)",
                "ylabel": "microseconds",
                "bars": {
                    "raw read floor": floor.median_us,
                    "full compile": full.median_us,
                    "after 1 append": incremental.median_us,
                },
                "file": "transcript_compile.png",
            },
            {
                "kind": "bar",
                "title": f"Bytes for {turns} turns with 20 tools",
                "ylabel": "bytes",
                "bars": {
                    "no tools": sizes["none"],
                    "linked sets": sizes["linked"],
                    "row per tool": sizes["per-tool-rows"],
                    "inline": sizes["inline"],
                },
                "file": "transcript_storage.png",
            },
        ],
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smaller sizes, for CI")
    args = parser.parse_args()
    result = main(args.quick)
    out = Path(__file__).resolve().parent / "results" / "transcript.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result, indent=2, default=str))
    for row in result["rows"]:
        print(row)
    for goal in result["goals"]:
        print(goal)
