"""The MCP examples run: mcp-server-time mounted (scripted and on the local model), tools served."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

pytestmark = pytest.mark.timeout(600)


def _run(*args: str) -> str:
    done = subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=540, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_time_example_mounts_the_server_scripted() -> None:
    out = _run(str(EXAMPLES / "mcp_time_agent.py"), "--scripted")
    assert "tools: time_get_current_time, time_convert_time" in out
    assert '[ok] time_get_current_time {"timezone":"Europe/Lisbon"}' in out
    assert '"timezone":"Europe/Lisbon","datetime":' in out


@pytest.mark.real_model
def test_the_time_example_runs_on_the_local_model() -> None:
    out = _run(str(EXAMPLES / "mcp_time_agent.py"))
    assert "[ok] time_get_current_time" in out  # the forced first call reached the real server
    assert '"datetime":' in out
