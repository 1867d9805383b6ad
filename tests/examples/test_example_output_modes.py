"""The output-modes example runs one prompt on the local model and on llama_cpp.server, in auto mode."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "output_modes.py"

pytestmark = pytest.mark.real_model


def test_the_same_prompt_runs_locally_and_on_the_server_with_auto_falling_back_once() -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLE)], capture_output=True, text=True, timeout=600, check=False
    )

    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    local = out[: out.index("OpenAI-compatible server")]
    assert local.count("-> Capital(") == 2  # the grammar makes the local answers parse
    assert out.count("What is the capital of") == 4
    assert "the server's adapter now asks in 'json_object' mode" in out
