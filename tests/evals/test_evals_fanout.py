"""The DBOS fan-out: every case a durable run taken by workers; judged and stored by the submitter.

The PostgreSQL check (two workers, one SIGKILLed midway, 100 cases finished
exactly once) is ``benchmarks/evals_fanout_bench.py``, run here; it needs
``WEAKPROMPT_PG_URL`` (skipped without it, failed without it under CI). The
other tests hand the runner a client that runs each job at once in this
process, to pin what the runner does with each kind of result.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

pytest.importorskip("dbos")

from evals_support import Forecast, dataset, make_agent
from weakprompt.agent import Agent
from weakprompt.errors import ConfigurationError
from weakprompt.evals import Case, Dataset, load_experiment, run_experiment_durable
from weakprompt.store import Store

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


class InlineClient:
    """Stands for ``DurableClient``: runs each submitted job at once with a local agent."""

    def __init__(self, store: Store, agent: Agent[Any]) -> None:
        self.store, self.agent = store, agent
        self.results: dict[str, object] = {}
        self.submitted: list[tuple[str, str, str, str | None]] = []

    def submit_sync(
        self, queue: str, prompt: str, *, adapter: str, session_id: str, input: str | None, max_turns: int
    ) -> str:
        from weakprompt.durable import DurableResult

        self.submitted.append((queue, prompt, session_id, input))
        try:
            response = self.agent.run_sync(input, session=session_id, store=self.store, max_turns=max_turns)
            self.results[session_id] = DurableResult.from_response(response)
        except Exception as exc:
            self.results[session_id] = exc
        return session_id

    def result_sync(self, workflow_id: str, *, timeout: float | None = None) -> object:
        found = self.results[workflow_id]
        if isinstance(found, Exception):
            raise found
        return found


def test_each_run_is_submitted_as_a_job_then_judged_from_its_transcript_and_stored() -> None:
    with Store.open("sqlite://") as store:
        client = InlineClient(store, make_agent())
        result = run_experiment_durable(
            dataset(),
            client=client,  # type: ignore[arg-type]
            queue="q",
            prompt="app:prompt",
            adapter="app:adapter",
            store=store,
            output_type=Forecast,
            repeat=2,
            name="fanned",
        )
        assert result.passed and len(result.runs) == 6
        assert [s[2] for s in client.submitted] == [run.session_id for run in result.runs]
        assert {s[:2] for s in client.submitted} == {("q", "app:prompt")}
        assert all(run.turns == 2 and run.usage.model_calls == 2 for run in result.runs)
        assert load_experiment(store, "fanned") == result


def test_a_failed_a_paused_and_an_unparsable_run_each_fail_their_case() -> None:
    from weakprompt.adapters.testing import FunctionAdapter, text_turn, tool_call, tool_call_turn
    from weakprompt.messages import AssistantTurn
    from weakprompt.model import ModelRequest
    from weakprompt.tools import tool

    @tool(requires_approval=True)
    def refund(amount: int) -> str:
        """Refund."""
        return "done"

    def model(request: ModelRequest) -> AssistantTurn:
        said = request.context.messages[-1].content
        if said == "boom":
            raise RuntimeError("model down")
        if said == "refund":
            return tool_call_turn(tool_call("refund", {"amount": 1}))
        return text_turn("not json")

    agent = Agent(FunctionAdapter(model), instructions="x", tools=[refund])
    data = Dataset(
        name="d",
        cases=[
            Case(name="boom", input="boom"),
            Case(name="refund", input="refund"),
            Case(name="text", input="t"),
        ],
    )
    with Store.open("sqlite://") as store:
        result = run_experiment_durable(
            data,
            client=InlineClient(store, agent),  # type: ignore[arg-type]
            queue="q",
            prompt="p:p",
            adapter="a:a",
            store=store,
            output_type=Forecast,  # type: ignore[arg-type]
        )
    errors = {run.case_name: run.error or "" for run in result.runs}
    assert "model down" in errors["boom"]
    assert errors["refund"] == "the run paused for approval of 1 call(s)"
    assert errors["text"].startswith("the answer does not parse as")
    assert not result.passed


def test_cases_with_params_objects_cannot_be_queued() -> None:
    data = Dataset(name="d", cases=[Case(name="p", input="x", params=[object()])])
    with (
        Store.open("sqlite://") as store,
        pytest.raises(ConfigurationError, match="case\\(s\\) 'p' have params"),
    ):
        run_experiment_durable(
            data,
            client=InlineClient(store, make_agent()),
            queue="q",
            prompt="p:p",
            adapter="a:a",
            store=store,  # type: ignore[arg-type]
        )


@pytest.fixture
def bench() -> Iterator[ModuleType]:
    spec = importlib.util.spec_from_file_location("evals_fanout_bench", BENCHMARKS / "evals_fanout_bench.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop(spec.name, None)


@pytest.mark.postgres
def test_100_cases_on_two_dbos_workers_finish_exactly_once_after_one_is_killed(bench: ModuleType) -> None:
    url = os.environ.get("WEAKPROMPT_PG_URL")
    if not url:
        if os.environ.get("CI"):
            pytest.fail("CI is set but WEAKPROMPT_PG_URL is not: the PostgreSQL fan-out check must run in CI")
        pytest.skip("WEAKPROMPT_PG_URL is not set")
    with bench.scratch_database(url) as db:
        check = bench.run_check(db, cases=100, delay=0.02)
    assert check.stored_rows == 100 and check.passed_cases == 100
    assert check.cases_with_two_stored_replies == 100
    assert check.model_calls == 200 + check.repeated_calls
    assert check.repeats_outside_the_kill_window == 0
    assert check.taken_over > 0, "the killed worker had no run in hand"
    assert check.ok


def test_the_benchmark_dataset_and_model_work_without_workers(bench: ModuleType, tmp_path: Path) -> None:
    from weakprompt.evals import run_experiment_sync

    agent = Agent(bench.fanout_adapter(), template=bench.fanout_prompt())
    with Store.open("sqlite://") as store:
        assert run_experiment_sync(agent, bench.dataset(3), store=store).passed
    assert not bench.FanoutCheck(1, 0, 0, 0, 0, 0, 0, "e0", 0, 0.0).ok
    assert bench._notes(tmp_path) == []
