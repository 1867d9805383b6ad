"""The inspector's experiment pages: the list, an experiment's runs linked to their sessions, a comparison."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("starlette")

from starlette.testclient import TestClient

from weakprompt.adapters.testing import FunctionAdapter, text_turn
from weakprompt.agent import Agent
from weakprompt.evals import (
    Case,
    Dataset,
    ExpectedOutput,
    compare_experiments,
    load_experiment,
    run_experiment_sync,
)
from weakprompt.evals.evaluators import Outcome
from weakprompt.evals.results import RunResult
from weakprompt.inspector import InspectorSettings, create_app
from weakprompt.inspector.experiments import compare_stored
from weakprompt.messages import AssistantTurn, Usage
from weakprompt.model import ModelRequest
from weakprompt.store import Store
from weakprompt.store.eval_rows import EvalRow, insert_eval_rows

EVIL_CASE = "<script>alert('case')</script>"
EVIL_ANSWER = "<script>alert('answer')</script>"
EVIL_ERROR = "<script>alert('error')</script>"


def _agent(answers: dict[str, str]) -> Agent[None]:
    """Answers each input from ``answers``; raises for an input it has no answer to."""

    def model(request: ModelRequest) -> AssistantTurn:
        question = request.context.messages[-1].content
        if question not in answers:
            raise RuntimeError(f"{EVIL_ERROR} for {question}")
        return text_turn(answers[question])

    return Agent(FunctionAdapter(model), instructions="Answer.")


def _dataset(*names: str) -> Dataset[object, str]:
    cases: dict[str, Case[object, str]] = {
        "sum": Case(name="sum", input="1+1", expected="2"),
        EVIL_CASE: Case(name=EVIL_CASE, input="evil", expected="safe"),
        "boom": Case(name="boom", input="boom", expected="x"),
        "greet": Case(name="greet", input="hello", expected="hi"),
        "new": Case(name="new", input="new", expected="n"),
    }
    return Dataset(name="arith", cases=[cases[n] for n in names], evaluators=[ExpectedOutput()])


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Path]:
    """Two experiments: A (baseline) and B (a changed agent on a changed dataset)."""
    path = tmp_path / "evals.db"
    with Store.open(path) as store:
        run_experiment_sync(
            _agent({"1+1": "2", "evil": EVIL_ANSWER, "hello": "hi"}),
            _dataset("sum", EVIL_CASE, "boom", "greet"),
            store=store,
            name="baseline",
            experiment_id="exp-a",
            repeat=2,
            concurrency=1,
        )
        run_experiment_sync(
            _agent({"1+1": "3", "evil": "safe", "hello": "hi", "new": "n"}),
            _dataset("sum", EVIL_CASE, "greet", "new"),
            store=store,
            name="changed",
            experiment_id="exp-b",
            concurrency=1,
        )
    yield path


def _client(target: Path | Store, settings: InspectorSettings | None = None) -> TestClient:
    app = create_app(target if isinstance(target, Store) else str(target), settings=settings)
    return TestClient(app, base_url="http://127.0.0.1")


def test_the_experiment_list_shows_each_experiment_and_is_linked_from_the_navigation(db: Path) -> None:
    with _client(db) as client:
        assert 'class="experiments-nav" href="/experiments"' in client.get("/").text
        page = client.get("/experiments")
        assert page.status_code == 200
        rows = re.findall(r'<tr data-experiment="([^"]+)">(.*?)</tr>', page.text, re.S)
        assert [exp for exp, _ in rows] == ["exp-b", "exp-a"]  # newest first
        row_a = dict(rows)["exp-a"]
        assert "baseline" in row_a and "arith" in row_a
        assert '<td class="num">4</td>' in row_a and '<td class="num">8</td>' in row_a  # cases, runs
        assert "50%" in row_a and "(4/8)" in row_a  # sum and greet pass, the others fail
        assert 'href="/experiment?id=exp-a"' in row_a


def test_an_experiment_page_has_a_row_per_case_and_repeat_linked_to_its_session(db: Path) -> None:
    with _client(db) as client:
        page = client.get("/experiment", params={"id": "exp-a"}).text
        rows = re.findall(r'<tr data-case="([^"]*)" data-repeat="(\d+)">(.*?)</tr>', page, re.S)
        assert [(case, int(repeat)) for case, repeat, _ in rows][:2] == [("sum", 0), ("sum", 1)]
        assert len(rows) == 8
        sum_row = rows[0][2]
        assert "passed" in sum_row and "expected_output 1.00" in sum_row
        assert "expected_output</span>: passed" in sum_row
        session = re.search(r'class="session-link mono" href="/session\?id=([^"]+)"', sum_row)
        assert session is not None
        boom_row = next(body for case, _, body in rows if case == "boom")
        assert "failed" in boom_row and "none ran" in boom_row and "RuntimeError" in boom_row
        # the case's session page is there and holds its conversation
        session_page = client.get(f"/session?id={session.group(1)}")
        assert session_page.status_code == 200
        assert "1+1" in session_page.text
        # the latest experiment of a name is found by the name too
        assert 'data-case="new"' in client.get("/experiment", params={"id": "changed"}).text


def test_case_names_answers_and_errors_are_escaped_on_every_experiment_page(db: Path) -> None:
    with _client(db) as client:
        pages = [
            client.get("/experiments").text,
            client.get("/experiment", params={"id": "exp-a"}).text,
            client.get("/experiments/compare", params={"a": "exp-a", "b": "exp-b"}).text,
        ]
    for page in pages:
        assert "<script>" not in page
    experiment = pages[1]
    assert "&lt;script&gt;alert(&#39;case&#39;)&lt;/script&gt;" in experiment  # the case name
    assert "&lt;script&gt;alert(&#39;answer&#39;)" in experiment  # an outcome's reason
    assert "&lt;script&gt;alert(&#39;error&#39;)" in experiment  # the run's error
    assert "&lt;script&gt;alert(&#39;case&#39;)" in pages[2]


def test_reading_the_experiment_pages_leaves_the_store_file_unchanged(db: Path) -> None:
    before = db.read_bytes()
    with _client(db) as client:
        for path in ("/experiments", "/experiment?id=exp-a", "/experiments/compare?a=exp-a&b=exp-b"):
            assert client.get(path).status_code == 200
    assert db.read_bytes() == before


def test_an_unknown_experiment_is_a_404_page(db: Path) -> None:
    with _client(db) as client:
        missing = client.get("/experiment", params={"id": "<b>nope</b>"})
        assert missing.status_code == 404
        assert "Unknown experiment" in missing.text and "<b>nope" not in missing.text
        compared = client.get("/experiments/compare", params={"a": "exp-a", "b": "nope"})
        assert compared.status_code == 404 and "nope" in compared.text
        assert client.get("/experiment").status_code == 400  # no id at all


def test_the_comparison_page_labels_each_case_as_compare_experiments_does(db: Path) -> None:
    with Store.open(db) as store:
        expected = compare_experiments(load_experiment(store, "exp-a"), load_experiment(store, "exp-b"))
    with _client(db) as client:
        page = client.get("/experiments/compare", params={"a": "exp-a", "b": "exp-b"}).text
    shown = re.findall(r'<tr data-case="([^"]*)" data-change="([a-z_]+)">', page)
    labels = [
        (c.case_name.replace("'", "&#39;").replace("<", "&lt;").replace(">", "&gt;"), c.change)
        for c in expected.cases
    ]
    assert shown == labels
    assert {change for _, change in shown} == {"broken", "fixed", "same", "only_a", "only_b"}


def test_a_comparison_judges_passing_at_the_given_rate_and_refuses_a_bad_one(db: Path) -> None:
    with _client(db) as client:
        half = client.get("/experiments/compare", params={"a": "exp-a", "b": "exp-a", "min_pass_rate": "0.5"})
        assert half.status_code == 200 and "50% of its runs" in half.text
        for bad in ("2", "nan", "x"):
            refused = client.get(
                "/experiments/compare", params={"a": "exp-a", "b": "exp-b", "min_pass_rate": bad}
            )
            assert refused.status_code == 400 and "min_pass_rate" in refused.text


def test_long_lists_of_experiments_and_runs_are_paged(db: Path) -> None:
    with _client(db, InspectorSettings(experiments_per_page=1, runs_per_page=3)) as client:
        first = client.get("/experiments").text
        assert 'data-experiment="exp-b"' in first and 'data-experiment="exp-a"' not in first
        assert "page 1 of 2" in first
        assert 'data-experiment="exp-a"' in client.get("/experiments?page=2").text
        past = client.get("/experiments?page=9", follow_redirects=False)
        assert past.status_code == 303 and past.headers["location"] == "/experiments?page=2"
        runs = client.get("/experiment", params={"id": "exp-a", "page": 3}).text
        assert "page 3 of 3" in runs and len(re.findall(r"<tr data-case=", runs)) == 2
        assert "page 3 of 3" in client.get("/experiment", params={"id": "exp-a", "page": 99}).text


def test_experiment_pages_keep_the_host_and_token_checks(db: Path) -> None:
    token = "t" * 20
    with _client(db, InspectorSettings(token=token)) as client:
        assert client.get("/experiments").status_code == 401
        authorized = {"Authorization": f"Bearer {token}"}
        assert client.get("/experiments", headers=authorized).status_code == 200
        assert client.get("/experiments", headers={**authorized, "Host": "evil.example"}).status_code == 421


def test_a_store_without_the_results_table_lists_no_experiments(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with Store.open(path) as store:
        with sqlite3.connect(path) as raw:
            raw.execute("DROP TABLE eval_results")
        with _client(store) as client:
            assert "no experiments stored" in client.get("/experiments").text
            assert client.get("/experiment", params={"id": "x"}).status_code == 404


def test_damaged_stored_json_shows_as_nothing_rather_than_failing_the_page(tmp_path: Path) -> None:
    path = tmp_path / "damaged.db"
    row = EvalRow(
        experiment_id="d",
        case_name="c",
        repeat=0,
        case_index=0,
        experiment_name="d",
        dataset="ds",
        session_id="s",
        passed=False,
        scores_json='{"judge": true, "ok": 0.5}',
        outcomes_json="not json",
        usage_json="[]",
        turns=1,
        duration_ms=3,
        started_at="2026-01-01T00:00:00",
    )
    with Store.open(path) as store:
        with store.write() as conn:
            damaged = ((1, '[1, {"evaluator": 2, "passed": "yes", "score": "high"}]'), (2, '{"a": 1}'))
            others = [attrs.evolve(row, repeat=i, outcomes_json=text) for i, text in damaged]
            insert_eval_rows(conn, [row, *others])
        with _client(store) as client:
            page = client.get("/experiment", params={"id": "d"}).text
    assert page.count("none ran") == 2
    assert "ok 0.50" in page and "judge" not in page
    assert '<span class="mono">?</span>: failed' in page


_RUNS = st.lists(st.booleans(), min_size=1, max_size=3)
_CASES = st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), _RUNS, max_size=4)


def _store_experiment(store: Store, experiment_id: str, cases: dict[str, list[bool]]) -> None:
    runs = [
        RunResult(
            case_name=name,
            repeat=repeat,
            case_index=index,
            session_id=f"{experiment_id}-{index}-{repeat}",
            passed=passed,
            outcomes=(Outcome(evaluator="check", passed=passed, reason=""),),
            usage=Usage(),
            turns=1,
            duration_ms=1,
            started_at="2026-01-01T00:00:00",
        )
        for index, (name, verdicts) in enumerate(cases.items())
        for repeat, passed in enumerate(verdicts)
    ]
    with store.write() as conn:
        insert_eval_rows(
            conn,
            [r.row(experiment_id=experiment_id, experiment_name=experiment_id, dataset="d") for r in runs],
        )


@settings(max_examples=40, deadline=None)
@given(a=_CASES.filter(bool), b=_CASES.filter(bool), rate=st.sampled_from([0.0, 0.5, 2 / 3, 1.0]))
def test_stored_comparison_labels_equal_compare_experiments_for_any_pass_pattern(
    a: dict[str, list[bool]], b: dict[str, list[bool]], rate: float
) -> None:
    with Store.open("sqlite://") as store:
        _store_experiment(store, "A", a)
        _store_experiment(store, "B", b)
        expected = compare_experiments(
            load_experiment(store, "A"), load_experiment(store, "B", min_pass_rate=rate)
        )
        shown = compare_stored(store, "A", "B", min_pass_rate=rate)
    assert [(c.case_name, c.rate_a, c.rate_b, c.change) for c in shown.cases] == [
        (c.case_name, c.rate_a, c.rate_b, c.change) for c in expected.cases
    ]
