"""``examples/eval_agent.py``: a small agent evaluated on a dataset, two prompt versions compared."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from weakprompt.evals import list_experiments, load_experiment
from weakprompt.store import Store

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "eval_agent.py"


def test_the_eval_example_reports_both_prompts_and_the_cases_prompt_b_breaks(tmp_path: Path) -> None:
    db = tmp_path / "evals.db"
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), "--db", str(db)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "PASS  status of A-2  2/2 (100%)" in out
    assert "FAIL  status of A-2  0/2 (0%)" in out
    assert (
        "expected Answer(order_id='A-2', status='delivered'), got Answer(order_id='A-2', status='shipped')"
        in out
    )
    assert "broken  status of A-3  100% -> 0%  expected_output 1.00->0.00  judge 1.00->1.00" in out
    assert "0 fixed, 3 broken, 0 better, 0 worse; pass rate 100% -> 0%" in out
    with Store.open(db) as store:
        assert [name for _, name, _ in list_experiments(store)] == ["prompt A", "prompt B"]
        assert load_experiment(store, "prompt A").passed
        assert not load_experiment(store, "prompt B").passed
