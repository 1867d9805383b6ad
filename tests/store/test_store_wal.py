"""Switching a fresh SQLite file to WAL while other connections do the same."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

import weakprompt.store.engine as engine_module
from weakprompt.store import Store


class FlakyCursor:
    """Answers "database is locked" a given number of times, like a file another connection is converting."""

    def __init__(self, failures: int, message: str = "database is locked") -> None:
        self.failures = failures
        self.message = message
        self.calls = 0

    def execute(self, sql: str) -> None:
        self.calls += 1
        if self.calls <= self.failures:
            raise sqlite3.OperationalError(self.message)


def test_a_locked_switch_is_tried_again() -> None:
    cursor = FlakyCursor(failures=3)
    engine_module._enable_wal(cursor)  # pyright: ignore[reportPrivateUsage]
    assert cursor.calls == 4


def test_other_errors_and_a_lock_past_the_timeout_are_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(sqlite3.OperationalError, match="disk I/O"):
        engine_module._enable_wal(FlakyCursor(failures=1, message="disk I/O error"))  # pyright: ignore[reportPrivateUsage]
    monkeypatch.setattr(engine_module, "BUSY_TIMEOUT_SECONDS", 0.02)
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        engine_module._enable_wal(FlakyCursor(failures=10**9))  # pyright: ignore[reportPrivateUsage]


def test_many_first_opens_at_once_all_succeed(tmp_path: Path) -> None:
    for attempt in range(20):
        path = tmp_path / f"fresh{attempt}.db"
        start = threading.Barrier(4)
        errors: list[BaseException] = []

        def open_store(
            target: Path = path, gate: threading.Barrier = start, seen: list[BaseException] = errors
        ) -> None:
            gate.wait()
            try:
                with Store.open(target):
                    pass
            except BaseException as exc:  # pragma: no cover - reported below
                seen.append(exc)

        workers = [threading.Thread(target=open_store) for _ in range(4)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        assert errors == []
        raw = sqlite3.connect(path)
        assert raw.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        raw.close()
