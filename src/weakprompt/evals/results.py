"""The result model of an experiment, as stored and read back, and the comparison of two.

An experiment is one run of a dataset against an agent: every case, each
``repeat`` times. Each run is a :class:`RunResult` (one ``eval_results`` row,
linked to its session); a case's runs give its pass rate
(:class:`CaseSummary`). Results hold no typed answers: the answer is in the
run's transcript, found by ``session_id``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import attrs

from ..errors import ConfigurationError
from ..jsontypes import JSONValue
from ..messages import Usage
from ..store.eval_rows import Change, EvalRow, case_changes, experiment_ids, read_eval_rows
from .evaluators import Outcome

if TYPE_CHECKING:
    from ..store import Store

__all__ = [
    "CaseComparison",
    "CaseSummary",
    "Change",
    "Comparison",
    "ExperimentResult",
    "RunResult",
    "compare_experiments",
    "list_experiments",
    "load_experiment",
]


@attrs.frozen(kw_only=True)
class RunResult:
    """One run of one case: its verdict, each evaluator's outcome, usage and time, and its session."""

    case_name: str
    repeat: int
    session_id: str
    passed: bool
    outcomes: tuple[Outcome, ...]
    case_index: int = 0
    """The case's place in its dataset (results are read back in the dataset's order)."""
    usage: Usage
    turns: int
    duration_ms: int
    started_at: str
    error: str | None = None
    """Why the run itself failed (it raised, or paused): then no evaluator ran."""

    @property
    def scores(self) -> dict[str, float]:
        return {o.evaluator: o.score for o in self.outcomes if o.score is not None}

    @property
    def failures(self) -> tuple[Outcome, ...]:
        return tuple(o for o in self.outcomes if not o.passed)

    def row(self, *, experiment_id: str, experiment_name: str, dataset: str) -> EvalRow:
        usage: dict[str, JSONValue] = dict(attrs.asdict(self.usage))
        return EvalRow(
            experiment_id=experiment_id,
            case_name=self.case_name,
            repeat=self.repeat,
            case_index=self.case_index,
            experiment_name=experiment_name,
            dataset=dataset,
            session_id=self.session_id,
            passed=self.passed,
            scores_json=json.dumps(self.scores, sort_keys=True),
            outcomes_json=json.dumps([o.to_json() for o in self.outcomes]),
            usage_json=json.dumps(usage, sort_keys=True),
            turns=self.turns,
            duration_ms=self.duration_ms,
            started_at=self.started_at,
            error=self.error,
        )

    @classmethod
    def from_row(cls, row: EvalRow) -> RunResult:
        outcomes: list[Mapping[str, JSONValue]] = json.loads(row.outcomes_json)
        usage: dict[str, int] = json.loads(row.usage_json)
        known = attrs.fields_dict(Usage)
        return cls(
            case_name=row.case_name,
            repeat=row.repeat,
            case_index=row.case_index,
            session_id=row.session_id,
            passed=bool(row.passed),
            outcomes=tuple(Outcome.from_json(o) for o in outcomes),
            usage=Usage(**{k: v for k, v in usage.items() if k in known}),
            turns=row.turns,
            duration_ms=row.duration_ms,
            started_at=row.started_at,
            error=row.error,
        )


@attrs.frozen(kw_only=True)
class CaseSummary:
    """A case's runs in one experiment: how many, how many passed."""

    case_name: str
    runs: tuple[RunResult, ...]

    @property
    def passes(self) -> int:
        return sum(1 for run in self.runs if run.passed)

    @property
    def pass_rate(self) -> float:
        return self.passes / len(self.runs) if self.runs else 0.0


@attrs.frozen(kw_only=True)
class ExperimentResult:
    """Every run of an experiment. A case passes when its pass rate reaches ``min_pass_rate``."""

    experiment_id: str
    name: str
    dataset: str
    runs: tuple[RunResult, ...]
    min_pass_rate: float = 1.0

    @property
    def cases(self) -> tuple[CaseSummary, ...]:
        """One summary per case, in the order the cases first appear."""
        grouped: dict[str, list[RunResult]] = {}
        for run in self.runs:
            grouped.setdefault(run.case_name, []).append(run)
        return tuple(
            CaseSummary(case_name=name, runs=tuple(sorted(runs, key=lambda r: r.repeat)))
            for name, runs in grouped.items()
        )

    def case(self, name: str) -> CaseSummary:
        for summary in self.cases:
            if summary.case_name == name:
                return summary
        raise KeyError(f"experiment {self.name!r} has no case {name!r}")

    @property
    def failed_cases(self) -> tuple[CaseSummary, ...]:
        return tuple(c for c in self.cases if c.pass_rate < self.min_pass_rate)

    @property
    def passed(self) -> bool:
        """Every case reached ``min_pass_rate``."""
        return not self.failed_cases

    @property
    def pass_rate(self) -> float:
        """Runs passed over runs made."""
        return sum(1 for r in self.runs if r.passed) / len(self.runs) if self.runs else 0.0

    @property
    def usage(self) -> Usage:
        total = Usage()
        for run in self.runs:
            total = total + run.usage
        return total


def _check_rate(value: float) -> None:
    if not 0.0 <= value <= 1.0:
        raise ConfigurationError(f"min_pass_rate must be within [0, 1], got {value!r}")


def list_experiments(store: Store, name: str | None = None) -> list[tuple[str, str, str]]:
    """``(experiment_id, name, started_at)`` of the experiments (or those named ``name``), oldest first."""
    with store.read() as conn:
        return experiment_ids(conn, name)


def load_experiment(store: Store, experiment: str, *, min_pass_rate: float = 1.0) -> ExperimentResult:
    """The stored experiment with id ``experiment``, or the latest one named ``experiment``."""
    _check_rate(min_pass_rate)
    with store.read() as conn:
        rows = read_eval_rows(conn, experiment)
        if not rows:
            named = experiment_ids(conn, experiment)
            if named:
                rows = read_eval_rows(conn, named[-1][0])
    if not rows:
        known = [f"{label} ({exp})" for exp, label, _ in list_experiments(store)[-5:]]
        raise ConfigurationError(
            f"no experiment {experiment!r} in the store (by id or name); "
            f"latest: {', '.join(known) or 'none stored'}"
        )
    first = rows[0]
    return ExperimentResult(
        experiment_id=first.experiment_id,
        name=first.experiment_name,
        dataset=first.dataset,
        runs=tuple(RunResult.from_row(row) for row in rows),
        min_pass_rate=min_pass_rate,
    )


@attrs.frozen(kw_only=True)
class CaseComparison:
    """One case in two experiments: pass rates, mean scores per evaluator, and the change."""

    case_name: str
    rate_a: float | None
    rate_b: float | None
    scores_a: Mapping[str, float]
    scores_b: Mapping[str, float]
    change: Change


@attrs.frozen(kw_only=True)
class Comparison:
    """Two experiments case by case (prompt A against prompt B, model A against model B)."""

    a: ExperimentResult
    b: ExperimentResult
    cases: tuple[CaseComparison, ...]

    def changed(self, *changes: Change) -> tuple[CaseComparison, ...]:
        return tuple(c for c in self.cases if c.change in changes)


def _mean_scores(runs: Sequence[RunResult]) -> dict[str, float]:
    collected: dict[str, list[float]] = {}
    for run in runs:
        for name, score in run.scores.items():
            collected.setdefault(name, []).append(score)
    return {name: sum(values) / len(values) for name, values in collected.items()}


def compare_experiments(a: ExperimentResult, b: ExperimentResult) -> Comparison:
    """Case by case, in A's order then B's new cases; a case passes at B's ``min_pass_rate``."""
    summaries_a = {c.case_name: c for c in a.cases}
    summaries_b = {c.case_name: c for c in b.cases}
    rates_a = {name: summary.pass_rate for name, summary in summaries_a.items()}
    rates_b = {name: summary.pass_rate for name, summary in summaries_b.items()}
    rows: list[CaseComparison] = []
    for name, change in case_changes(rates_a, rates_b, b.min_pass_rate):
        case_a, case_b = summaries_a.get(name), summaries_b.get(name)
        rows.append(
            CaseComparison(
                case_name=name,
                rate_a=None if case_a is None else case_a.pass_rate,
                rate_b=None if case_b is None else case_b.pass_rate,
                scores_a={} if case_a is None else _mean_scores(case_a.runs),
                scores_b={} if case_b is None else _mean_scores(case_b.runs),
                change=change,
            )
        )
    return Comparison(a=a, b=b, cases=tuple(rows))
