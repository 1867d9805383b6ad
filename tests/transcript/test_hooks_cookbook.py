"""The tool-results cookbook example runs offline and shows each recipe working."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tool_results_cookbook.py"


def test_cookbook_runs_every_recipe(capsys: pytest.CaptureFixture[str]) -> None:
    runpy.run_path(str(EXAMPLE), run_name="__main__")
    out = capsys.readouterr().out
    for heading in range(1, 7):
        assert f"== {heading}. " in out
    assert "log keeps both versions: 8 commits" in out
    assert "summarized_from resolves to the 251-line original" in out
    assert "final answer untouched: test_login fails with a 500" in out
    assert "summarized read_log (tool_summarization:instructions)" in out
    assert "model_calls=3" in out  # two agent turns and one summary, all in the evaluation's usage
    assert "extraction strategy: read-grep, fallback: None" in out
    assert "answer: The nightly run failed: 31338: [31337] ERROR disk full on /var/db" in out
