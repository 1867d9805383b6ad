"""The offline examples run to completion and print what they promise."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


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
