"""A run paused for approval survives its worker and resumes when approved from another process."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

pytest.importorskip("dbos")

from durable_support import notes, start_worker, wait_for_system_database
from weakprompt.durable import DurableClient
from weakprompt.runtime import Approve, ResumeError


def test_a_paused_run_resumes_after_a_worker_restart(tmp_path: Path) -> None:
    db = str(tmp_path / "store.db")
    counts = tmp_path / "counts"
    counts.mkdir()
    worker = start_worker(db, "admin", counts, executor="w1")
    client = None
    try:
        wait_for_system_database(db)
        client = DurableClient(db)
        first = client.submit_sync(
            "admin",
            "durable_fixtures:approval_prompt",
            adapter="durable_fixtures:approval_adapter",
            session_id="a1",
            input="tidy",
        )
        paused = client.result_sync(first, timeout=60)
        assert paused.paused is not None and [p.tool for p in paused.paused.pending] == ["delete_everything"]
        assert notes(counts, "deletes") == []
        worker.send_signal(signal.SIGKILL)
        worker.wait()
        worker = start_worker(db, "admin", counts, executor="w2")  # another worker takes over
        pending = paused.paused.pending[0]
        second = client.decide(
            "admin",
            paused,
            [Approve(pending.call_id, pending.token)],
            prompt="durable_fixtures:approval_prompt",
            adapter="durable_fixtures:approval_adapter",
            decided_by="ann",
        )
        assert second.startswith("a1:pause-1:")  # each continuation has its own id
        finished = client.result_sync(second, timeout=60)
        assert finished.text == "all tidy" and finished.paused is None
        with pytest.raises(ResumeError, match="is not waiting for decisions"):  # refused, not queued
            client.decide(
                "admin",
                paused,
                [Approve(pending.call_id, pending.token)],
                prompt="durable_fixtures:approval_prompt",
                adapter="durable_fixtures:approval_adapter",
            )
        assert [who for who, _, _ in notes(counts, "deletes")] == ["a1"]
    finally:
        worker.terminate()
        worker.wait(30)
        if client is not None:
            client.close()
