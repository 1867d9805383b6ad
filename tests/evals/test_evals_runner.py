"""The runner: cases in their own sessions, repeats and pass rates, stored results, reports, comparisons."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from sqlalchemy import inspect

from evals_support import Forecast, dataset, flaky_text_agent, guessing_agent, lookup, make_agent
from weakprompt.adapters.testing import FunctionAdapter, ScriptedAdapter, text_turn, tool_call, tool_call_turn
from weakprompt.agent import Agent
from weakprompt.clock import FakeClock
from weakprompt.errors import ConfigurationError
from weakprompt.evals import (
    Case,
    Dataset,
    ExperimentResult,
    Observation,
    Outcome,
    OutputSatisfies,
    compare_experiments,
    format_comparison,
    format_report,
    list_experiments,
    load_experiment,
    run_experiment,
    run_experiment_sync,
)
from weakprompt.messages import AssistantTurn
from weakprompt.model import ModelRequest
from weakprompt.store import MIGRATIONS, Store, tables
from weakprompt.store.engine import build_engine
from weakprompt.store.eval_rows import has_eval_table
from weakprompt.store.migrations import migrate
from weakprompt.tools import tool
from weakprompt.transcript import Transcript


def test_each_run_has_its_own_session_and_its_stored_row_links_to_it(tmp_path: Path) -> None:
    with Store.open(tmp_path / "evals.db") as store:
        result = run_experiment_sync(make_agent(), dataset(), store=store, repeat=2, name="baseline")
        assert result.passed and result.pass_rate == 1.0
        assert [(c.case_name, c.passes, len(c.runs)) for c in result.cases] == [
            ("Lisbon", 2, 2),
            ("Porto", 2, 2),
            ("Faro", 2, 2),
        ]
        sessions = {run.session_id for run in result.runs}
        assert len(sessions) == 6
        for run in result.runs:
            log = Transcript(store, run.session_id).log()
            assert [c.text for c in log if c.role == "user"] == [run.case_name]
            assert run.turns == 2 and run.usage.model_calls == 2
            assert {o.evaluator for o in run.outcomes} == {
                "expected_output",
                "called:lookup",
                "max_turns",
                "never_called:delete",
            }
        with store.read() as conn:
            rows = conn.execute(tables.eval_results.select()).mappings().all()
        assert len(rows) == 6
        row = next(r for r in rows if r["case_name"] == "Porto" and r["repeat"] == 1)
        assert row["experiment_name"] == "baseline" and row["dataset"] == "weather"
        assert row["passed"] and row["error"] is None and row["turns"] == 2
        assert json.loads(row["scores_json"]) == {"expected_output": 1.0}
        assert json.loads(row["usage_json"])["model_calls"] == 2
        assert json.loads(row["outcomes_json"])[0]["evaluator"] == "expected_output"
    with Store.open(tmp_path / "evals.db") as reopened:  # nothing is lost when the store closes
        assert load_experiment(reopened, result.experiment_id) == result
        assert load_experiment(reopened, "baseline").experiment_id == result.experiment_id


def test_pass_rates_of_a_model_that_varies_and_the_min_pass_rate() -> None:
    data = Dataset(name="flaky", cases=[Case(name=f"c{i}", input="q", expected="right") for i in range(2)])
    with Store.open("sqlite://") as store:
        strict = run_experiment_sync(flaky_text_agent(), data, store=store, repeat=4, concurrency=1)
        assert [c.pass_rate for c in strict.cases] == [0.5, 0.5]
        assert not strict.passed and len(strict.failed_cases) == 2
        lenient = run_experiment_sync(
            flaky_text_agent(), data, store=store, repeat=4, concurrency=1, min_pass_rate=0.5
        )
        assert lenient.passed and lenient.pass_rate == 0.5
        report = format_report(strict)
        assert "FAIL  c0  2/4 (50%)" in report and "expected 'right', got 'wrong'" in report
        assert report.endswith("FAILED: 2 case(s) below 100%")
        assert format_report(lenient).endswith("passed")


def test_runs_go_at_once_up_to_the_concurrency_limit() -> None:
    in_flight = 0
    most = 0

    async def model(request: ModelRequest) -> AssistantTurn:
        nonlocal in_flight, most
        in_flight += 1
        most = max(most, in_flight)
        await asyncio.sleep(0.02)
        in_flight -= 1
        return text_turn("ok")

    agent = Agent(FunctionAdapter(model), instructions="Answer.")
    data = Dataset(name="many", cases=[Case(name=f"c{i}", input="q", expected="ok") for i in range(8)])
    with Store.open("sqlite://") as store:
        result = asyncio.run(run_experiment(agent, data, store=store, concurrency=3))
    assert result.passed and len(result.runs) == 8
    assert 1 < most <= 3


def test_a_run_that_raises_fails_its_case_with_the_error_and_the_others_go_on() -> None:
    def model(request: ModelRequest) -> AssistantTurn:
        if request.context.messages[-1].content == "boom":
            raise RuntimeError("the model fell over")
        return text_turn("ok")

    agent = Agent(FunctionAdapter(model), instructions="Answer.")
    data = Dataset(
        name="d", cases=[Case(name="good", input="q", expected="ok"), Case(name="bad", input="boom")]
    )
    with Store.open("sqlite://") as store:
        result = run_experiment_sync(agent, data, store=store)
        bad = result.case("bad").runs[0]
        assert not bad.passed and bad.outcomes == ()
        assert bad.error is not None and "the model fell over" in bad.error
        assert result.case("good").pass_rate == 1.0
        assert "run 0: error:" in format_report(result)
        assert load_experiment(store, result.experiment_id).case("bad").runs[0].error == bad.error


def test_a_run_that_pauses_for_approval_fails_its_case_and_keeps_the_usage_stored() -> None:
    @tool(requires_approval=True)
    def refund(amount: int) -> str:
        """Refund money."""
        return "done"

    adapter = ScriptedAdapter([tool_call_turn(tool_call("refund", {"amount": 5}))])
    agent = Agent(adapter, instructions="Refund.", tools=[refund])
    with Store.open("sqlite://") as store:
        result = run_experiment_sync(
            agent, Dataset(name="d", cases=[Case(name="r", input="refund")]), store=store
        )
    (run,) = result.runs
    assert not run.passed and run.error == "the run paused for approval of 1 call(s)"
    assert run.turns == 1 and run.usage.model_calls == 1


def test_an_evaluator_that_raises_fails_the_run_with_its_error() -> None:
    class Broken:
        name = "broken"

        async def evaluate(self, observation: Observation[object], /) -> Outcome:
            raise ValueError("no idea")

    data = Dataset(name="d", cases=[Case(name="c", input="q", evaluators=[Broken()])])
    with Store.open("sqlite://") as store:
        result = run_experiment_sync(flaky_text_agent(every=99), data, store=store)
    (run,) = result.runs
    assert not run.passed
    assert run.failures == (
        Outcome(evaluator="broken", passed=False, reason="the evaluator raised ValueError: no idea"),
    )


def test_two_prompt_versions_compared_case_by_case() -> None:
    with Store.open("sqlite://", clock=FakeClock()) as store:
        a = run_experiment_sync(make_agent(), dataset(), store=store, name="look-up")
        b = run_experiment_sync(guessing_agent(), dataset(), store=store, name="guess")
        comparison = compare_experiments(load_experiment(store, "look-up"), load_experiment(store, "guess"))
    assert [(c.case_name, c.change) for c in comparison.cases] == [
        ("Lisbon", "same"),
        ("Porto", "same"),
        ("Faro", "broken"),
    ]
    faro = comparison.changed("broken")[0]
    assert (faro.rate_a, faro.rate_b) == (1.0, 0.0)
    assert faro.scores_a == {"expected_output": 1.0} and faro.scores_b == {"expected_output": 0.0}
    back = compare_experiments(b, a)
    assert [c.change for c in back.changed("fixed")] == ["fixed"]
    text = format_comparison(comparison)
    assert "broken  Faro  100% -> 0%  expected_output 1.00->0.00" in text
    assert text.endswith("0 fixed, 1 broken, 0 better, 0 worse; pass rate 100% -> 67%")


def test_a_comparison_names_cases_found_in_one_experiment_only_and_rate_moves() -> None:
    def result(name: str, runs: dict[str, list[bool]]) -> ExperimentResult:
        from weakprompt.evals import RunResult
        from weakprompt.messages import Usage

        return ExperimentResult(
            experiment_id=name,
            name=name,
            dataset="d",
            min_pass_rate=0.5,
            runs=tuple(
                RunResult(
                    case_name=case,
                    repeat=i,
                    session_id=f"{name}-{case}-{i}",
                    passed=passed,
                    outcomes=(),
                    usage=Usage(),
                    turns=1,
                    duration_ms=1,
                    started_at="t",
                )
                for case, verdicts in runs.items()
                for i, passed in enumerate(verdicts)
            ),
        )

    a = result("a", {"up": [True, False, False, True], "down": [True] * 4, "gone": [True]})
    b = result("b", {"up": [True] * 4, "down": [True, True, False, True], "new": [False]})
    changes = {c.case_name: c.change for c in compare_experiments(a, b).cases}
    assert changes == {"up": "better", "down": "worse", "gone": "only_a", "new": "only_b"}
    assert "only_a  gone  100% -> -" in format_comparison(compare_experiments(a, b))


def test_experiments_are_listed_and_an_unknown_one_is_named() -> None:
    with Store.open("sqlite://") as store:
        assert list_experiments(store) == []
        first = run_experiment_sync(make_agent(), dataset(), store=store, name="x", experiment_id="e1")
        second = run_experiment_sync(make_agent(), dataset(), store=store, name="x", experiment_id="e2")
        assert [e[:2] for e in list_experiments(store)] == [("e1", "x"), ("e2", "x")]
        assert [e[0] for e in list_experiments(store, "x")] == ["e1", "e2"]
        assert load_experiment(store, "x").experiment_id == second.experiment_id
        assert load_experiment(store, "e1") == first
        with pytest.raises(ConfigurationError, match=r"no experiment 'nope'.*latest: x \(e1\), x \(e2\)"):
            load_experiment(store, "nope")
        with pytest.raises(ConfigurationError, match="min_pass_rate"):
            load_experiment(store, "x", min_pass_rate=2)


def test_a_report_escapes_what_a_model_or_a_case_name_could_send_to_the_terminal() -> None:
    data = Dataset(name="d\x1b[2J", cases=[Case(name="c\x1b]52;c;AAAA\x07", input="q", expected="no")])
    with Store.open("sqlite://") as store:
        result = run_experiment_sync(flaky_text_agent(every=99), data, store=store)
    report = format_report(result) + format_comparison(compare_experiments(result, result))
    assert "\x1b" not in report and "\x07" not in report
    assert "\\x1b" in report


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"repeat": 0}, "repeat must be an int >= 1"),
        ({"concurrency": 0}, "concurrency must be an int >= 1"),
        ({"min_pass_rate": -0.1}, "min_pass_rate must be within"),
    ],
)
def test_bad_runner_options_are_refused_by_name(options: dict[str, float], message: str) -> None:
    with Store.open("sqlite://") as store, pytest.raises(ConfigurationError, match=message):
        run_experiment_sync(make_agent(), dataset(), store=store, **options)  # type: ignore[arg-type]


def test_a_typed_check_sees_the_typed_answer() -> None:
    data = Dataset(
        name="typed",
        cases=[Case(name="Porto", input="Porto", evaluators=[OutputSatisfies(lambda f: f.sky == "rainy")])],
        evaluators=[],
    )
    with Store.open("sqlite://") as store:
        assert run_experiment_sync(make_agent(), data, store=store).passed
    assert isinstance(data.cases[0].evaluators[0], OutputSatisfies)
    assert Forecast("a", "b").sky == "b"


def test_a_store_from_before_evals_gains_the_results_table_when_opened(tmp_path: Path) -> None:
    step = next(i for i, m in enumerate(MIGRATIONS) if m.description.startswith("eval results"))
    path = tmp_path / "old.db"
    engine = build_engine(f"sqlite:///{path}")
    try:
        with engine.begin() as conn:
            migrate(conn, FakeClock(), migrations=MIGRATIONS[:step])
        with engine.connect() as conn:
            assert not has_eval_table(conn)
    finally:
        engine.dispose()
    with Store.open(path) as store:
        with store.read() as conn:
            assert has_eval_table(conn)
            assert {"experiment_id", "session_id", "outcomes_json"} <= {
                c["name"] for c in inspect(conn).get_columns("eval_results")
            }
        assert run_experiment_sync(make_agent(), dataset(), store=store).passed


def test_a_case_not_in_the_experiment_is_named_and_no_rows_write_nothing() -> None:
    from weakprompt.store.eval_rows import insert_eval_rows

    with Store.open("sqlite://") as store:
        result = run_experiment_sync(make_agent(), dataset(), store=store)
        with pytest.raises(KeyError, match="has no case 'Madrid'"):
            result.case("Madrid")
        with store.write() as conn:
            insert_eval_rows(conn, [])
        assert len(load_experiment(store, result.experiment_id).runs) == 3


def test_called_never_matches_a_call_whose_arguments_are_not_an_object() -> None:
    from weakprompt.evals import Called

    adapter = ScriptedAdapter([tool_call_turn(tool_call("lookup", "[1, 2]")), text_turn("ok")])
    agent = Agent(adapter, instructions="x", tools=[lookup])
    data = Dataset(name="d", cases=[Case(name="c", input="q", evaluators=[Called("lookup", {"city": "x"})])])
    with Store.open("sqlite://") as store:
        (run,) = run_experiment_sync(agent, data, store=store).runs
    assert run.failures[0].reason.startswith("expected at least once, found 0 matching call(s) of 1")


def test_a_reused_experiment_id_is_refused_before_any_run_continues_its_sessions() -> None:
    with Store.open("sqlite://") as store:
        run_experiment_sync(make_agent(), dataset(), store=store, experiment_id="e1")
        with pytest.raises(ConfigurationError, match="experiment_id 'e1' is taken"):
            run_experiment_sync(make_agent(), dataset(), store=store, experiment_id="e1")
        with pytest.raises(ConfigurationError, match="1 to 64 letters"):
            run_experiment_sync(make_agent(), dataset(), store=store, experiment_id="a b")
        assert len(load_experiment(store, "e1").runs) == 3
        roles = [c.role for c in Transcript(store, "eval-e1-0-0").log()]
        assert roles == ["system", "user", "assistant", "tool", "assistant"]  # one run, not two
