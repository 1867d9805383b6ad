"""``weakprompt run`` on the real local model, with the demo agent's prompt."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from weakprompt.cli import cli
from weakprompt.store import Store
from weakprompt.transcript import Transcript

pytestmark = pytest.mark.real_model

DEMO = Path(__file__).resolve().parents[2] / "examples" / "research_agent.py"


def test_run_the_demo_prompt_on_the_local_model(tmp_path: Path) -> None:
    db = tmp_path / "cli.db"
    result = CliRunner().invoke(
        cli,
        [
            "run",
            f"{DEMO}:build_prompt",
            "--adapter",
            "local",
            "--force-tool",
            "search_notes",
            "--input",
            "How tall is the Eiffel Tower?",
            "--db",
            str(db),
            "--session",
            "local-run",
            "--max-turns",
            "4",
        ],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    out = result.output
    assert "turn 1" in out and "→ call search_notes" in out
    assert "← result search_notes" in out and "Note n" in out
    assert "final answer" in out and "output (Finding)" in out
    log = Transcript(Store.open(db), "local-run").log()
    assert [c.role for c in log][:4] == ["system", "user", "assistant", "tool"]
