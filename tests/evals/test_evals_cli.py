"""``weakprompt eval DATASET AGENT``: the report, exit 1 when a case fails, --compare with a stored run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from weakprompt.cli import cli
from weakprompt.evals import load_experiment
from weakprompt.store import Store

SUPPORT = Path(__file__).parent / "evals_support.py"


def test_eval_prints_the_report_and_exits_0_when_every_case_passes(tmp_path: Path) -> None:
    db = str(tmp_path / "evals.db")
    ran = CliRunner().invoke(
        cli, ["eval", f"{SUPPORT}:dataset", f"{SUPPORT}:make_agent", "--db", db, "--name", "look-up"]
    )
    assert ran.exit_code == 0, ran.output
    assert "PASS  Porto  1/1 (100%)" in ran.output
    assert ran.output.rstrip().endswith("passed")
    with Store.open(db) as store:
        assert load_experiment(store, "look-up").passed


def test_eval_exits_1_on_a_failing_case_and_compares_with_the_experiment_named(tmp_path: Path) -> None:
    db = str(tmp_path / "evals.db")
    first = CliRunner().invoke(
        cli, ["eval", f"{SUPPORT}:dataset", f"{SUPPORT}:make_agent", "--db", db, "--name", "look-up"]
    )
    assert first.exit_code == 0, first.output
    second = CliRunner().invoke(
        cli,
        [
            "eval",
            f"{SUPPORT}:dataset",
            f"{SUPPORT}:guessing_agent",
            "--db",
            db,
            "--name",
            "guess",
            "--repeat",
            "2",
            "--compare",
            "look-up",
        ],
    )
    assert second.exit_code == 1, second.output
    assert "FAIL  Faro  0/2 (0%)" in second.output
    assert "broken  Faro  100% -> 0%" in second.output
    assert "0 fixed, 1 broken" in second.output


def test_eval_names_what_is_wrong_with_its_arguments(tmp_path: Path) -> None:
    no_db = CliRunner().invoke(cli, ["eval", f"{SUPPORT}:dataset", f"{SUPPORT}:make_agent", "--compare", "x"])
    assert no_db.exit_code == 2 and "give the store with --db" in no_db.output
    swapped = CliRunner().invoke(cli, ["eval", f"{SUPPORT}:make_agent", f"{SUPPORT}:dataset"])
    assert swapped.exit_code == 1
    assert "make_agent is a Agent; DATASET must be a Dataset" in swapped.output
    not_callable = CliRunner().invoke(cli, ["eval", f"{SUPPORT}:FORECASTS", f"{SUPPORT}:make_agent"])
    assert "FORECASTS is a dict; DATASET must be a Dataset" in not_callable.output
    db = str(tmp_path / "e.db")
    unknown = CliRunner().invoke(
        cli, ["eval", f"{SUPPORT}:dataset", f"{SUPPORT}:make_agent", "--db", db, "--compare", "nope"]
    )
    assert unknown.exit_code == 1 and "no experiment 'nope'" in unknown.output


def test_eval_works_as_a_ci_step_in_a_fresh_process() -> None:
    command = "from weakprompt.cli import main; main()"
    done = subprocess.run(
        [sys.executable, "-c", command, "eval", f"{SUPPORT}:dataset", f"{SUPPORT}:guessing_agent"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    assert "FAILED: 1 case(s) below 100%" in done.stdout
