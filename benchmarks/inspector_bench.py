"""The inspector on a large store: the sessions list and a 1,000-turn session page.

The store is generated, not recorded: rows are written straight into the
tables with SQLAlchemy Core ``executemany`` (one transaction per table
batch, synchronous writes off), shaped as the loop writes them: per
session a system commit naming its prompt, the user's input, then turns of
an assistant reply with one tool call and its result, and a final answer.
Replies carry usage, every reply is linked to one of three tool sets, and
the long session also has stored outputs (some behind a handle), a hook's
summary with its original, and ``tool_output`` extractions.
Content blobs are content-addressed, so sessions share most of them (as
sessions of one prompt share their system prompt and tools).

Sizes: ``--sessions`` (10,000) and ``--commits`` (1,000,000) in all, one of
the sessions ``--long-turns`` (1,000) turns long; ``--quick`` is 1,000
sessions and 100,000 commits. Pages are rendered through the app itself
(Starlette's TestClient, store opened read-only): the first request, then
the median of ``--repeat`` more. Goal: each page under 1 s.

Run: ``PYTHONPATH=src .venv/bin/python benchmarks/inspector_bench.py [--quick] [--db PATH]``
(an existing ``--db`` of the right size is reused: generating it is the slow part).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import insert

from weakprompt.canonical import canonical_json, content_hash
from weakprompt.store import Store, tables

LONG_SESSION = "long-session-0000"
PROMPTS = [f"prompt-{name}" for name in ("triage", "refactor", "search", "summarize", "review")]
TOOLS = [
    {"name": f"tool_{i}", "description": f"Tool number {i}.", "parameters": {"type": "object"}}
    for i in range(8)
]
TOOL_SETS = [TOOLS[:4], TOOLS[:6], TOOLS]
BATCH = 50_000


def _hash(kind: int, a: int, b: int) -> str:
    """Unique 64-hex keys without hashing (generation time matters more than realism here)."""
    return f"{kind:08x}{a:024x}{b:032x}"


COMMIT_COLUMNS = (
    "hash", "session_id", "seq", "parent_hash", "operation", "edit_target", "role", "blob_hash",
    "message", "metadata_json", "token_count", "created_at",
)  # fmt: skip


class Generator:
    """Builds the rows. A session's turns are the same shape every time, so their blob hashes and
    metadata texts are worked out once (per turn count) and only the session's own fields vary."""

    def __init__(self) -> None:
        self.blobs: dict[str, tuple[str, str, int]] = {}
        self.start = datetime(2026, 1, 1, tzinfo=UTC)
        self.set_hashes = [content_hash([content_hash(t) for t in tools]) for tools in TOOL_SETS]
        self._turns: dict[tuple[int, bool], list[tuple[str, str, str | None, str, int, bool]]] = {}

    def blob(self, payload: dict[str, Any]) -> str:
        text = canonical_json(payload)
        digest = content_hash(payload)
        if digest not in self.blobs:
            self.blobs[digest] = (digest, text, len(text.encode()))
        return digest

    def _entry(
        self, role: str, payload: dict[str, Any], metadata: dict[str, Any], linked: bool = False
    ) -> tuple[str, str, str | None, str, int, bool]:
        message = f"tool result: {payload['name']}" if role == "tool" else None
        tokens = len(str(payload.get("content", ""))) // 4 + 1
        return role, self.blob(payload), message, canonical_json(metadata), tokens, linked

    def turns(self, count: int, rich: bool) -> list[tuple[str, str, str | None, str, int, bool]]:
        """(role, blob hash, message, metadata text, token count, linked) for ``count`` tool turns."""
        key = (count, rich)
        if key not in self._turns:
            entries = []
            for turn in range(count):
                k = turn % 100
                call = {"id": f"call-{k}", "name": f"tool_{k % 8}", "arguments": f'{{"item": {k}}}'}
                usage = {
                    "usage": {"input_tokens": 400 + 37 * turn, "output_tokens": 20 + k, "model_calls": 1}
                }
                reply = {"role": "assistant", "content": "", "tool_calls": [call]}
                entries.append(self._entry("assistant", reply, usage, linked=True))
                text = f"result {k}: " + "ok " * (10 + k)
                result = {"role": "tool", "content": text, "tool_call_id": call["id"], "name": call["name"]}
                metadata = {"stored_output": stored_ref(turn, call)} if rich and turn % 10 == 0 else {}
                entries.append(self._entry("tool", result, metadata))
            self._turns[key] = entries
        return self._turns[key]

    def session_rows(self, index: int, session_id: str, turns: int, rich: bool) -> Iterator[tuple[Any, ...]]:
        """Commit rows (in ``COMMIT_COLUMNS`` order) and, last, whether each is linked to a tool set."""
        prompt = PROMPTS[index % len(PROMPTS)]
        when = (self.start + timedelta(seconds=index)).strftime("%Y-%m-%dT%H:%M:%S")
        entries = [
            self._entry("system", {"role": "system", "content": f"You are {prompt}."}, {"prompt": prompt}),
            self._entry("user", {"role": "user", "content": f"Task number {index}: look into it."}, {}),
            *self.turns(turns, rich),
            self._entry(
                "assistant",
                {"role": "assistant", "content": f"Done with task {index}."},
                {"usage": {"input_tokens": 900, "output_tokens": 30, "model_calls": 1}},
                linked=True,
            ),
        ]
        parent = None
        for seq, (role, blob_hash, message, metadata, tokens, linked) in enumerate(entries):
            commit_hash = _hash(1, index, seq)
            created = f"{when}.{seq:06d}+00:00"
            yield (commit_hash, session_id, seq, parent, "APPEND", None, role, blob_hash, message, metadata,
                   tokens, created, linked)  # fmt: skip
            parent = commit_hash

    def tick(self) -> str:
        return self.start.isoformat()


def stored_ref(turn: int, call: dict[str, Any]) -> dict[str, Any]:
    return {
        "tool_call_id": call["id"],
        "tool_name": call["name"],
        "handle": f"00000000-0000-5000-8000-{turn:012d}",
        "stored_hash": _hash(3, 0, turn),
        "summary": f"{call['name']}: 4 lines, 40 bytes",
        "preview": "result ok",
        "size_bytes": 40,
        "lines": 4,
        "tokens": 10,
        "is_error": False,
        "oversized": turn % 20 == 0,
    }


def _insert(conn: Any, table: Any, rows: list[dict[str, Any]]) -> None:
    for start in range(0, len(rows), BATCH):
        conn.execute(insert(table), rows[start : start + BATCH])


def _insert_tuples(conn: Any, table: Any, columns: tuple[str, ...], rows: list[tuple[Any, ...]]) -> None:
    """Plain tuples through the driver's executemany: the fastest way in for a million rows."""
    sql = str(insert(table).compile(dialect=conn.dialect, column_keys=list(columns)))
    for start in range(0, len(rows), BATCH):
        conn.exec_driver_sql(sql, rows[start : start + BATCH])


def generate(path: Path, *, sessions: int, commits: int, long_turns: int) -> dict[str, Any]:
    """Write the store at ``path``; returns its shape and how long it took."""
    started = time.perf_counter()
    Store.open(path).close()  # the schema, through the real migrations
    store = Store.open(path)
    generator = Generator()
    long_commits = 2 * long_turns + 3
    # Each session holds 2 * turns + 3 commits; the first `longer` short ones get one turn more.
    short_turns = max(0, commits - long_commits - 3 * (sessions - 1)) // 2
    turns_each, longer = divmod(short_turns, max(1, sessions - 1))
    with store.engine.connect() as conn:
        driver: Any = conn.connection.driver_connection  # pragmas must run outside a transaction
        driver.execute("PRAGMA synchronous = OFF")
        driver.execute("PRAGMA foreign_keys = OFF")
        with conn.begin():
            _write_all(conn, generator, sessions, turns_each, longer, long_turns)
    store.close()
    written = 2 * long_turns + 3 + (sessions - 1) * (2 * turns_each + 3) + 2 * longer
    return {
        "sessions": sessions,
        "commits": written,
        "long_session_turns": long_turns,
        "blobs": len(generator.blobs),
        "generate_s": round(time.perf_counter() - started, 2),
        "file_mb": round(path.stat().st_size / 1e6, 1),
    }


def _write_all(
    conn: Any, generator: Generator, sessions: int, turns_each: int, longer: int, long_turns: int
) -> None:
    """Every row, in batches: tool definitions and sets, commits with their links, blobs, outputs."""
    definitions = [
        {
            "content_hash": content_hash(t),
            "name": t["name"],
            "schema_json": canonical_json(t),
            "created_at": generator.tick(),
        }
        for t in TOOLS
    ]
    _insert(conn, tables.tool_definitions, definitions)
    _insert(
        conn,
        tables.tool_sets,
        [
            {"set_hash": h, "tool_count": len(s), "created_at": generator.tick()}
            for h, s in zip(generator.set_hashes, TOOL_SETS, strict=True)
        ],
    )
    _insert(
        conn,
        tables.tool_set_members,
        [
            {"set_hash": h, "position": p, "tool_hash": content_hash(t)}
            for h, s in zip(generator.set_hashes, TOOL_SETS, strict=True)
            for p, t in enumerate(s)
        ],
    )
    commit_rows: list[tuple[Any, ...]] = []
    links: list[tuple[str, str]] = []

    def flush() -> None:
        _insert_tuples(conn, tables.commits, COMMIT_COLUMNS, commit_rows)
        _insert_tuples(conn, tables.commit_tools, ("commit_hash", "tool_set_hash"), links)
        commit_rows.clear()
        links.clear()

    for index in range(sessions):
        long = index == 0
        session_id = LONG_SESSION if long else f"session-{index:05d}"
        turns = long_turns if long else turns_each + (1 if index <= longer else 0)
        tool_set = generator.set_hashes[index % len(generator.set_hashes)]
        for *row, linked in generator.session_rows(index, session_id, turns, rich=long):
            commit_rows.append(tuple(row))
            if linked:
                links.append((row[0], tool_set))
        if len(commit_rows) >= BATCH:
            flush()
    flush()
    _insert(
        conn,
        tables.blobs,
        [
            {"hash": h, "content": text, "size_bytes": size, "created_at": generator.tick()}
            for h, text, size in generator.blobs.values()
        ],
    )
    _long_session_extras(conn, generator, long_turns)


def _long_session_extras(conn: Any, generator: Generator, long_turns: int) -> None:
    """Stored outputs behind the long session's refs (one shared payload), plus edits of two results."""
    import zlib

    data = b"result ok\n" * 4
    blob_hash = content_hash("payload")  # any 64-hex key: the bench never reads it back
    _insert(
        conn,
        tables.tool_output_blobs,
        [
            {
                "hash": blob_hash,
                "data": zlib.compress(data),
                "encoding": "zlib",
                "size_bytes": len(data),
                "stored_bytes": len(zlib.compress(data)),
                "created_at": generator.tick(),
            }
        ],
    )
    rows = []
    for seq, turn in enumerate(range(0, long_turns, 10)):
        k = turn % 100
        rows.append(
            {
                "session_id": LONG_SESSION,
                "seq": seq,
                "tool_call_id": f"call-{k}",
                "handle": f"00000000-0000-5000-8000-{turn:012d}",
                "blob_hash": blob_hash,
                "tool_name": f"tool_{k % 8}",
                "arguments": f'{{"item": {k}}}',
                "size_bytes": len(data),
                "lines": 4,
                "tokens": 10,
                "is_error": False,
                "oversized": turn % 20 == 0,
                "summary": f"tool_{k % 8}: 4 lines, 40 bytes",
                "preview": "result ok",
                "created_at": generator.tick(),
            }
        )
    _insert(conn, tables.tool_outputs, rows)


def _timed(fetch: Callable[[], Any], repeat: int) -> dict[str, float]:
    first_started = time.perf_counter()
    fetch()
    first = time.perf_counter() - first_started
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        fetch()
        samples.append(time.perf_counter() - started)
    return {"first_s": round(first, 4), "median_s": round(statistics.median(samples), 4)}


def measure(path: Path, repeat: int, sessions: int) -> dict[str, Any]:
    from starlette.testclient import TestClient

    from weakprompt.inspector import create_app

    results: dict[str, Any] = {}
    with (
        Store.open(path, read_only=True) as store,
        # the app answers loopback Host names only: TestClient's default "testserver" gets 421
        TestClient(create_app(store), base_url="http://127.0.0.1") as client,
    ):

        def get(url: str, **params: Any) -> Callable[[], Any]:
            def fetch() -> Any:
                response = client.get(url, params=params)
                assert response.status_code == 200, response.text[:500]
                return response

            return fetch

        cases = {
            "sessions list, page 1": get("/"),
            "sessions list, last page": get("/", page=-(-sessions // 50)),
            "sessions list, filtered": get("/", q="refactor"),
            "long session, page 1 (50 turns)": get("/session", id=LONG_SESSION),
            "long session, last page": get("/session", id=LONG_SESSION, page=21),
            "a 49-turn session": get("/session", id="session-00042"),
            "long session, stored outputs": get("/outputs", session=LONG_SESSION),
        }
        for name, fetch in cases.items():
            results[name] = _timed(fetch, repeat)
            print(
                f"{name:36s} first {results[name]['first_s']:.3f} s, median {results[name]['median_s']:.3f} s"
            )
    return results


def run(
    *,
    sessions: int,
    commits: int,
    long_turns: int = 1_000,
    repeat: int = 5,
    db: Path | None = None,
) -> dict[str, Any]:
    """Generate (or reuse) the store and time every page: the shape, the timings and the goal."""
    path = db or Path(tempfile.mkdtemp(prefix="inspector-bench-")) / "store.db"
    sidecar = path.with_suffix(".json")  # the generated store's shape, kept for a later reuse
    if path.exists() and sidecar.exists():
        shape = {**json.loads(sidecar.read_text()), "reused": True}
    else:
        shape = generate(path, sessions=sessions, commits=commits, long_turns=long_turns)
        sidecar.write_text(json.dumps(shape))
        print(f"generated {shape}")
    pages = measure(path, repeat, sessions)
    worst = max(v["median_s"] for v in pages.values())
    return {"store": shape, "pages": pages, "goal_s": 1.0, "worst_median_s": worst, "met": worst < 1.0}


def main(quick: bool = False) -> dict[str, object]:
    """``benchmarks/run_all.py``'s entry: the full sizes, or the ``--quick`` ones."""
    sessions, commits = (1_000, 100_000) if quick else (10_000, 1_000_000)
    report = run(sessions=sessions, commits=commits)
    worst = report["worst_median_s"]
    return {
        "title": "Inspector pages on a large store",
        "rows": [{"page": name, **timing} for name, timing in report["pages"].items()],
        "goals": [
            {
                "goal": "every page renders in under 1 s (median)",
                "met": report["met"],
                "value": f"worst {worst:.3f} s",
            }
        ],
        "notes": [f"store: {report['store']}"],
    }


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1,000 sessions, 100,000 commits")
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--commits", type=int, default=1_000_000)
    parser.add_argument("--long-turns", type=int, default=1_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--db", type=Path, help="store file to use (generated when missing)")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "inspector.json")
    args = parser.parse_args()
    if args.quick:
        args.sessions, args.commits = 1_000, 100_000
    report = run(
        sessions=args.sessions,
        commits=args.commits,
        long_turns=args.long_turns,
        repeat=args.repeat,
        db=args.db,
    )
    worst = report["worst_median_s"]
    if not args.quick:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2) + "\n")
        print(f"wrote {args.out}")
    print(f"worst median {worst:.3f} s: goal < 1 s {'met' if worst < 1.0 else 'NOT met'}")


if __name__ == "__main__":
    sys.exit(cli())
