"""Eval experiments for the inspector: the list, one experiment's runs, and two compared case by case.

Read through ``store.eval_rows`` only: the inspector sits below
``weakprompt.evals`` in the layers, so it reads the stored rows and labels
a comparison with the same store-level rule (``case_changes``) that
``compare_experiments`` uses. The stored JSON is read for display and
never raises, whatever the database holds.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import cast

import attrs
from sqlalchemy import Connection

from ..jsontypes import JSONValue
from ..store import Store
from ..store.eval_rows import (
    Change,
    EvalRow,
    ExperimentSummary,
    case_changes,
    case_pass_rates,
    count_experiments,
    experiment_ids,
    experiment_summaries,
    has_eval_table,
    read_eval_rows,
)
from ._json import as_int, as_object, as_str, load_object

__all__ = [
    "ComparedCase",
    "ComparisonView",
    "ExperimentListing",
    "ExperimentView",
    "OutcomeView",
    "RunView",
    "UnknownExperiment",
    "compare_stored",
    "list_experiment_summaries",
    "load_experiment_view",
]


@attrs.frozen
class ExperimentListing:
    """A page of experiments, newest first, and how many the store holds."""

    experiments: tuple[ExperimentSummary, ...]
    total: int


@attrs.frozen
class OutcomeView:
    """One evaluator's verdict on a run, as stored."""

    evaluator: str
    passed: bool
    reason: str
    score: float | None


@attrs.frozen
class RunView:
    """One run of one case: a row of the experiment page."""

    case_name: str
    repeat: int
    session_id: str
    passed: bool
    outcomes: tuple[OutcomeView, ...]
    scores: tuple[tuple[str, float], ...]
    turns: int
    input_tokens: int
    output_tokens: int
    duration_ms: int
    started_at: str
    error: str | None


@attrs.frozen
class ExperimentView:
    """An experiment's labels, its totals, and a page of its runs (in the dataset's order)."""

    experiment_id: str
    name: str
    dataset: str
    cases: int
    total_runs: int
    passes: int
    started_at: str
    runs: tuple[RunView, ...]
    page: int
    pages: int

    @property
    def pass_rate(self) -> float:
        return self.passes / self.total_runs if self.total_runs else 0.0


@attrs.frozen
class ComparedCase:
    """One case in two experiments: both pass rates (``None``: not in that one) and the change."""

    case_name: str
    rate_a: float | None
    rate_b: float | None
    change: Change


@attrs.frozen
class ComparisonView:
    """Two experiments case by case; passing is judged at ``min_pass_rate``."""

    a: ExperimentSummary
    b: ExperimentSummary
    cases: tuple[ComparedCase, ...]
    min_pass_rate: float


def list_experiment_summaries(store: Store, *, offset: int = 0, limit: int = 50) -> ExperimentListing:
    """Experiments newest first, ``limit`` from ``offset``; none for a store without the table."""
    with store.read() as conn:
        if not has_eval_table(conn):
            return ExperimentListing(experiments=(), total=0)
        page = experiment_summaries(conn, offset=offset, limit=limit)
        return ExperimentListing(experiments=tuple(page), total=count_experiments(conn))


def _rows_of(conn: Connection, experiment: str) -> list[EvalRow]:
    """The rows of the experiment with id ``experiment``, else of the latest one with that name."""
    if not has_eval_table(conn):
        return []
    rows = read_eval_rows(conn, experiment)
    if not rows:
        named = experiment_ids(conn, experiment)
        if named:
            rows = read_eval_rows(conn, named[-1][0])
    return rows


def _summary(rows: Sequence[EvalRow]) -> ExperimentSummary:
    first = rows[0]
    return ExperimentSummary(
        experiment_id=first.experiment_id,
        experiment_name=first.experiment_name,
        dataset=first.dataset,
        cases=len({row.case_name for row in rows}),
        runs=len(rows),
        passes=sum(1 for row in rows if row.passed),
        started_at=min(row.started_at for row in rows),
    )


def _score(value: JSONValue | None) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _outcomes(text: object) -> tuple[OutcomeView, ...]:
    """The stored list of outcomes; what is not a list of objects shows as no outcomes."""
    try:
        items = cast("JSONValue", json.loads(text)) if isinstance(text, str) else None
    except ValueError:
        items = None
    found: list[OutcomeView] = []
    for item in items if isinstance(items, list) else []:
        outcome = as_object(item)
        found.append(
            OutcomeView(
                evaluator=as_str(outcome.get("evaluator")) or "?",
                passed=outcome.get("passed") is True,
                reason=as_str(outcome.get("reason")) or "",
                score=_score(outcome.get("score")),
            )
        )
    return tuple(found)


def _run(row: EvalRow) -> RunView:
    scores = load_object(row.scores_json)
    usage = load_object(row.usage_json)
    return RunView(
        case_name=row.case_name,
        repeat=row.repeat,
        session_id=row.session_id,
        passed=bool(row.passed),
        outcomes=_outcomes(row.outcomes_json),
        scores=tuple((name, score) for name, value in scores.items() if (score := _score(value)) is not None),
        turns=row.turns,
        input_tokens=as_int(usage.get("input_tokens")),
        output_tokens=as_int(usage.get("output_tokens")),
        duration_ms=row.duration_ms,
        started_at=row.started_at,
        error=row.error,
    )


def load_experiment_view(
    store: Store, experiment: str, *, page: int = 1, per_page: int = 100
) -> ExperimentView | None:
    """Experiment ``experiment`` (an id, or the latest with that name), a page of its runs; or ``None``."""
    with store.read() as conn:
        rows = _rows_of(conn, experiment)
    if not rows:
        return None
    summary = _summary(rows)
    pages = max(1, -(-len(rows) // per_page))
    number = min(page, pages)
    shown = rows[(number - 1) * per_page : number * per_page]
    return ExperimentView(
        experiment_id=summary.experiment_id,
        name=summary.experiment_name,
        dataset=summary.dataset,
        cases=summary.cases,
        total_runs=summary.runs,
        passes=summary.passes,
        started_at=summary.started_at,
        runs=tuple(_run(row) for row in shown),
        page=number,
        pages=pages,
    )


class UnknownExperiment(LookupError):
    """No stored experiment has this id or name (``args[0]``)."""


def compare_stored(store: Store, a: str, b: str, *, min_pass_rate: float = 1.0) -> ComparisonView:
    """Experiments ``a`` and ``b`` (ids or names) case by case; a missing one raises UnknownExperiment."""
    with store.read() as conn:
        rows_a, rows_b = _rows_of(conn, a), _rows_of(conn, b)
    for ref, rows in ((a, rows_a), (b, rows_b)):
        if not rows:
            raise UnknownExperiment(ref)
    rates_a, rates_b = case_pass_rates(rows_a), case_pass_rates(rows_b)
    cases = tuple(
        ComparedCase(case_name=name, rate_a=rates_a.get(name), rate_b=rates_b.get(name), change=change)
        for name, change in case_changes(rates_a, rates_b, min_pass_rate)
    )
    return ComparisonView(a=_summary(rows_a), b=_summary(rows_b), cases=cases, min_pass_rate=min_pass_rate)
