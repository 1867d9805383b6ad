"""Starting and stopping worker subprocesses for the durable tests."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).parent
SRC = HERE.parent.parent / "src"


def worker_env(counts: Path, *, delay: float = 0.0) -> dict[str, str]:
    return dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([str(SRC), str(HERE)]),
        WEAKPROMPT_DURABLE_COUNTS=str(counts),
        WEAKPROMPT_DURABLE_DELAY=str(delay),
    )


def start_worker(
    db: str,
    queue: str,
    counts: Path,
    *,
    executor: str,
    concurrency: int = 4,
    delay: float = 0.0,
    extra: tuple[str, ...] = (),
    serves: tuple[str, ...] = ("--allow-module", "durable_fixtures"),
) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from weakprompt.cli import main; main()",
            "worker",
            "--db",
            db,
            "--queue",
            queue,
            "--concurrency",
            str(concurrency),
            "--executor-id",
            executor,
            *serves,
            *extra,
        ],
        env=worker_env(counts, delay=delay),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def notes(counts: Path, name: str) -> list[tuple[str, str, float]]:
    """``(who, step, time)`` of each line the fixtures wrote to ``name``."""
    return [(who, step, when) for who, step, when, _ in noted_by(counts, name)]


def noted_by(counts: Path, name: str) -> list[tuple[str, str, float, int]]:
    """``(who, step, time, pid)`` of each line the fixtures wrote to ``name``."""
    path = counts / name
    if not path.exists():
        return []
    rows: list[tuple[str, str, float, int]] = []
    for line in path.read_text().splitlines():
        who, step, when, pid = line.split()
        rows.append((who, step, float(when), int(pid)))
    return rows


def repeated(rows: list[tuple[str, str, float]]) -> dict[tuple[str, str], list[float]]:
    counted = Counter((who, step) for who, step, _ in rows)
    return {
        key: sorted(when for who, step, when in rows if (who, step) == key)
        for key, n in counted.items()
        if n > 1
    }


def wait_for_system_database(db: str, timeout: float = 30.0) -> None:
    """Wait until a worker has created the DBOS tables beside the SQLite store ``db``."""
    import sqlite3
    import time

    deadline = time.monotonic() + timeout
    while True:
        try:
            with sqlite3.connect(db + ".dbos") as conn:
                found = conn.execute("select 1 from sqlite_master where name = 'queues'").fetchone()
            if found:
                time.sleep(0.3)  # the queue row is written just after the tables
                return
        except sqlite3.Error:
            pass
        if time.monotonic() > deadline:
            raise TimeoutError("no worker created the DBOS system database")
        time.sleep(0.1)
