"""``weakprompt worker``: serves until SIGTERM, and lets the run in hand finish before it exits."""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import sys
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("dbos")

sys.path.insert(0, str(Path(__file__).parent))

from click.testing import CliRunner

from durable_support import start_worker, wait_for_system_database
from weakprompt.cli import cli
from weakprompt.durable import DurableClient

COUNTER = {"adapter": "durable_fixtures:counter_adapter"}


def test_sigterm_lets_the_run_in_hand_finish(tmp_path: Path) -> None:
    db = str(tmp_path / "store.db")
    counts = tmp_path / "counts"
    counts.mkdir()
    worker = start_worker(db, "calm", counts, executor="calm", delay=0.3)
    client = None
    try:
        wait_for_system_database(db)
        client = DurableClient(db)
        workflow = client.submit_sync(
            "calm",
            "durable_fixtures:counter_prompt",
            session_id="calm-1",
            input="rounds=2 id=calm-1",
            **COUNTER,
        )
        deadline = time.monotonic() + 60
        while client.status(workflow) != "PENDING":
            assert time.monotonic() < deadline
            time.sleep(0.05)
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(60) == 0
        assert client.status(workflow) == "SUCCESS"
        assert client.result_sync(workflow).text == "counted 2"
    finally:
        worker.kill()
        worker.wait()
        if client is not None:
            client.close()


def test_the_worker_command_serves_in_this_process_until_a_signal(tmp_path: Path) -> None:
    db = str(tmp_path / "store.db")
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}

    def stop_soon() -> None:
        wait_for_system_database(db)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=stop_soon, daemon=True).start()
    try:
        result = CliRunner().invoke(
            cli,
            [
                "worker",
                "--db",
                db,
                "--queue",
                "cli",
                "--concurrency",
                "2",
                "--global-concurrency",
                "4",
                "--rate",
                "10",
                "1",
                "--poll",
                "0.5",
                "--executor-id",
                "cli-1",
                "--path",
                str(Path(__file__).parent),
                "--allow-module",
                "durable_fixtures",
            ],
        )
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)
    assert result.exit_code == 0, result.output
    assert "weakprompt worker cli-1: serving queue 'cli' (modules under durable_fixtures)" in result.output
    assert "weakprompt worker cli-1: stopping" in result.output
    with contextlib.closing(sqlite3.connect(db + ".dbos")) as conn:  # the limits the worker registered
        limits = conn.execute(
            "select worker_concurrency, concurrency, rate_limit_max, rate_limit_period_sec, "
            "polling_interval_sec from queues where name = 'cli'"
        ).fetchone()
    assert limits == (2, 4, 10, 1.0, 0.5)


def test_a_worker_runs_only_what_it_serves_and_stores_each_refusal(tmp_path: Path) -> None:
    """Any importable callable ran on the worker (``subprocess:getoutput``); now the job fails unimported."""
    from weakprompt.durable import DurableJobError

    db = str(tmp_path / "store.db")
    counts = tmp_path / "counts"
    counts.mkdir()
    pwned = tmp_path / "pwned"
    serves = (
        "--serve",
        "count=durable_fixtures:counter_prompt",
        "--serve",
        "durable_fixtures:counter_adapter",
    )
    worker = start_worker(db, "guarded", counts, executor="guarded", serves=serves)
    client = None
    try:
        wait_for_system_database(db)
        client = DurableClient(db)
        shell = client.submit_sync(
            "guarded",
            "subprocess:getoutput",
            adapter="durable_fixtures:counter_adapter",
            session_id="shell-1",
            params={"cmd": f"id > {pwned}"},
        )
        marked = client.submit_sync(
            "guarded", "durable_marker:marked_prompt", session_id="marker-1", input="x", **COUNTER
        )
        by_module = client.submit_sync(  # the module is imported (for --serve), but only the names are served
            "guarded", "durable_fixtures:counter_prompt", session_id="module-1", input="x", **COUNTER
        )
        named = client.submit_sync(
            "guarded", "count", session_id="named-1", input="rounds=1 id=named-1", **COUNTER
        )
        assert client.result_sync(named, timeout=60).text == "counted 1"
        for workflow, reference in [
            (shell, "subprocess:getoutput"),
            (marked, "durable_marker:marked_prompt"),
            (by_module, "durable_fixtures:counter_prompt"),
        ]:
            with pytest.raises(DurableJobError, match=f"'{reference}' is not served by this worker"):
                client.result_sync(workflow, timeout=60)
            assert client.status(workflow) == "ERROR"
        assert not pwned.exists()
        assert not (counts / "imported-durable_marker").exists()  # the module was never imported
    finally:
        worker.terminate()
        worker.wait(30)
        if client is not None:
            client.close()


@pytest.mark.parametrize(
    ("args", "names"),
    [
        ((), "declare what this worker serves"),
        (("--allow-module", "durable..x"), "'durable..x' is not a dotted module name"),
        (("--serve", "x=weakprompt_no_such_module_y:f"), "importing module 'weakprompt_no_such_module_y'"),
        (("--serve", "=durable_fixtures:counter_prompt"), "an empty or repeated name"),
        (
            ("--serve", "durable_fixtures:COUNTER_PROMPT", "--serve", "durable_fixtures:COUNTER_PROMPT"),
            "repeated",
        ),
        (
            ("--serve", "a=durable_fixtures:NOT_A_FACTORY", "--serve", "a=durable_fixtures:COUNTER_PROMPT"),
            "repeated",
        ),
    ],
)
def test_the_worker_command_refuses_an_unclear_declaration(
    tmp_path: Path, args: tuple[str, ...], names: str
) -> None:
    result = CliRunner().invoke(
        cli,
        [
            "worker",
            "--db",
            str(tmp_path / "s.db"),
            "--queue",
            "q",
            "--path",
            str(Path(__file__).parent),
            *args,
        ],
    )
    assert result.exit_code == 2, result.output
    assert names in result.output
    assert not (tmp_path / "s.db").exists()  # refused before the worker opened anything
