"""Each case as a pytest test, in a user's project run by a fresh pytest."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from evals_support import Forecast, dataset, make_agent
from weakprompt.evals import Case, assert_case
from weakprompt.store import Store

SUPPORT = Path(__file__).parent
# The inner pytest runs in another folder (pytester changes into it): paths given go absolute now.
GIVEN = [str(Path(p).resolve()) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]


def test_each_case_runs_as_its_own_test_and_a_failing_case_shows_its_report(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(SUPPORT), *GIVEN]))
    pytester.makepyfile(
        test_user_evals="""
        import pytest
        from evals_support import Forecast, dataset, make_agent
        from weakprompt.evals import Case, assert_case, case_params

        DATA = dataset()
        WRONG = Case(name="Porto-wrong", input="Porto", expected=Forecast("Porto", "sunny"))

        @pytest.mark.parametrize("case", [*case_params(DATA), pytest.param(WRONG, id=WRONG.name)])
        def test_weather(case):
            assert_case(make_agent(), DATA, case)
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-v")
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*test_weather?Lisbon? PASSED*",
            "*test_weather?Faro? PASSED*",
            "*test_weather?Porto-wrong? FAILED*",
            "*expected_output: expected Forecast(city='Porto', sky='sunny'), got Forecast(*sky='rainy')*",
        ]
    )


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
