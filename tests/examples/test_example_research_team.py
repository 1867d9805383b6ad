"""The research-team example: a lead agent calls two sub-agents; one needs approval, decided by the script."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "research_team.py"


def _run(*args: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


ANSWER = (
    'Research done. Librarian: {"topic":"tides","points":["they follow the moon","spring tides are the '
    'largest"]} Publisher: The post is out: "published \'Why tides happen\'"\n'
)


def test_the_publisher_waits_the_lead_pauses_and_the_scripts_approval_finishes_both(tmp_path: Path) -> None:
    out = _run("--db", str(tmp_path / "research.db"))
    assert "[librarian:c1] answered: " in out
    assert "[publisher:c2] waits for approval\n" in out
    assert "waiting: publish({'title': 'Why tides happen'}) in publisher:c2\n" in out
    assert ANSWER in out
    assert out.endswith("sessions: lead, lead/librarian:c1, lead/publisher:c2\n")


def test_auto_approve_decides_inside_the_child_and_the_usage_counts_the_whole_tree() -> None:
    out = _run("--auto-approve")
    assert "[publisher:c2] answered: The post is out" in out
    assert out.endswith(ANSWER + "usage: 6 model calls in the whole tree\n")
