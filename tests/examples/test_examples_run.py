"""The offline examples run to completion and print what they promise."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _run(*args: str) -> str:
    done = subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_two_level_prompt_example_renders_the_child_section_and_its_tool() -> None:
    out = _run(str(EXAMPLES / "two_level_prompt.py"))
    assert "## 1." in out
    assert "### 1.1." in out


def test_planning_example_scripted_puts_a_plan_in_the_session() -> None:
    out = _run(str(EXAMPLES / "planning_agent.py"), "--scripted")
    assert "planning_setup_plan" in out


def test_async_sessions_example_runs_two_sessions_together_and_streams_a_third() -> None:
    out = _run(str(EXAMPLES / "async_sessions.py"))
    assert "[lisbon] It is 21.5 °C in Lisbon right now. (2 model calls)" in out
    assert "[oslo] It is 4.0 °C in Oslo right now. (2 model calls)" in out
    assert "sessions stored in the file: lisbon, oslo" in out
    streamed = out[out.index("streaming a third session:") :]
    # text, then the call as it completes, then its result, then the answer's text
    order = [
        streamed.index("Let me check Nairobi."),
        streamed.index('-> lookup_weather({"city":"Nairobi"})'),
        streamed.index("<- lookup_weather:"),
        streamed.index("It is 24.0 °C in Nairobi right now."),
    ]
    assert order == sorted(order)


def test_approval_example_pauses_then_a_second_command_approves_and_finishes(tmp_path: Path) -> None:
    db, files = str(tmp_path / "runs.db"), tmp_path / "files"
    out = _run(str(EXAMPLES / "approval_delete_file.py"), "run", "--db", db, "--dir", str(files))
    assert "paused: delete_file" in out and "file still there: True" in out
    out = _run(str(EXAMPLES / "approval_delete_file.py"), "approve", "--db", db, "--by", "alice")
    assert "approved by alice; final answer: notes.txt is gone." in out
    assert not (files / "notes.txt").exists()


def test_durable_queue_example_finishes_all_runs_after_its_worker_is_killed() -> None:
    pytest.importorskip("dbos")
    out = _run(str(EXAMPLES / "durable_queue.py"))
    assert "queued 20 runs" in out
    assert "killed worker-a with" in out
    assert "20 of 20 runs finished: 'counted three steps'" in out


def test_first_agent_example_prints_its_typed_answer() -> None:
    """The README's first agent: run as shown, with the output it shows."""
    assert _run(str(EXAMPLES / "first_agent.py")) == "Lisbon: 21.5 °C (2 model calls)\n"
