"""Each case as a pytest test, in a user's project run by a fresh pytest."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from evals_support import Forecast, dataset, make_agent
from weakprompt.evals import Case, assert_case
from weakprompt.store import Store

SUPPORT = Path(__file__).parent
# The inner pytest runs in another folder: the paths given go absolute now.
GIVEN = [str(Path(p).resolve()) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]


USER_TESTS = """
import pytest
from evals_support import Forecast, dataset, make_agent
from weakprompt.evals import Case, assert_case, case_params

DATA = dataset()
WRONG = Case(name="Porto-wrong", input="Porto", expected=Forecast("Porto", "sunny"))


@pytest.mark.parametrize("case", [*case_params(DATA), pytest.param(WRONG, id=WRONG.name)])
def test_weather(case):
    assert_case(make_agent(), DATA, case)
"""


def test_each_case_runs_as_its_own_test_and_a_failing_case_shows_its_report(tmp_path: Path) -> None:
    """A user's project, run by a fresh pytest in a subprocess (its own modules, its own folder)."""
    (tmp_path / "test_user_evals.py").write_text(USER_TESTS, encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(SUPPORT), *GIVEN]))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-v",
            "--rootdir",
            str(tmp_path),
            "-o",
            "addopts=",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    out = done.stdout
    assert done.returncode == 1, out + done.stderr
    assert re.search(r"test_weather\[Lisbon\] PASSED", out), out
    assert re.search(r"test_weather\[Faro\] PASSED", out)
    assert re.search(r"test_weather\[Porto\] PASSED", out)
    assert re.search(r"test_weather\[Porto-wrong\] FAILED", out)
    assert "expected_output: expected Forecast(city='Porto', sky='sunny'), got Forecast(" in out
    assert "3 passed" in out and "1 failed" in out


def test_assert_case_stores_in_the_store_given_and_returns_the_result() -> None:
    data = dataset()
    with Store.open("sqlite://") as store:
        result = assert_case(make_agent(), data, data.case("Faro"), store=store, repeat=2)
        assert result.name == "weather:Faro" and len(result.runs) == 2
        with pytest.raises(AssertionError, match="FAIL  nowhere"):
            assert_case(
                make_agent(),
                data,
                Case(name="nowhere", input="Nowhere", expected=Forecast("Nowhere", "sunny")),
                store=store,
            )


def test_case_params_give_one_param_per_case_named_after_it() -> None:
    from weakprompt.evals import case_params

    params = case_params(dataset())
    assert [p.id for p in params] == ["Lisbon", "Porto", "Faro"]
    assert [p.values[0].name for p in params] == ["Lisbon", "Porto", "Faro"]  # type: ignore[attr-defined]


def test_assert_case_without_a_store_keeps_the_run_in_a_store_of_its_own() -> None:
    data = dataset()
    result = assert_case(make_agent(), data, data.case("Lisbon"))
    assert result.passed and result.runs[0].session_id.startswith("eval-")
