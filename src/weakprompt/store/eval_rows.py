"""The SQL of eval results (``specs/EVALS.md``): one row per run of a case in an experiment.

The evals package decides what a row says (outcomes, scores and usage as
JSON text); the store only writes and reads rows. A row names the session
the case ran in, so its whole conversation is in the transcript.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal, TypeAlias

import attrs
from sqlalchemy import Connection, RowMapping, case, func, inspect, select

from . import tables

__all__ = [
    "Change",
    "EvalRow",
    "ExperimentSummary",
    "case_changes",
    "case_pass_rates",
    "count_experiments",
    "experiment_ids",
    "experiment_summaries",
    "has_eval_table",
    "insert_eval_rows",
    "read_eval_rows",
]


@attrs.frozen(kw_only=True)
class EvalRow:
    """One row of ``eval_results``: JSON columns kept as their text."""

    experiment_id: str
    case_name: str
    repeat: int
    case_index: int
    experiment_name: str
    dataset: str
    session_id: str
    passed: bool
    scores_json: str
    outcomes_json: str
    usage_json: str
    turns: int
    duration_ms: int
    started_at: str
    error: str | None = None


def has_eval_table(conn: Connection) -> bool:
    """Whether the database has the table (a read-only store of an older version has not)."""
    return tables.eval_results.name in inspect(conn).get_table_names()


def insert_eval_rows(conn: Connection, rows: Sequence[EvalRow]) -> None:
    """Write ``rows``; a row whose experiment, case and repeat exist already is an integrity error."""
    if rows:
        conn.execute(tables.eval_results.insert(), [attrs.asdict(row) for row in rows])


def _row(mapping: RowMapping) -> EvalRow:
    return EvalRow(**{field.name: mapping[field.name] for field in attrs.fields(EvalRow)})


def read_eval_rows(conn: Connection, experiment_id: str) -> list[EvalRow]:
    """The rows of one experiment, in the dataset's order of cases, then by repeat."""
    table = tables.eval_results
    query = (
        select(table)
        .where(table.c.experiment_id == experiment_id)
        .order_by(table.c.case_index, table.c.case_name, table.c.repeat)
    )
    return [_row(mapping) for mapping in conn.execute(query).mappings()]


def experiment_ids(conn: Connection, name: str | None = None) -> list[tuple[str, str, str]]:
    """``(experiment_id, experiment_name, first started_at)`` of the experiments, oldest first.

    ``name``: only the experiments with that name.
    """
    table = tables.eval_results
    started = func.min(table.c.started_at)
    query = select(table.c.experiment_id, table.c.experiment_name, started).group_by(
        table.c.experiment_id, table.c.experiment_name
    )
    if name is not None:
        query = query.where(table.c.experiment_name == name)
    rows = conn.execute(query.order_by(started, table.c.experiment_id)).all()
    return [(str(exp), str(label), str(when)) for exp, label, when in rows]


@attrs.frozen(kw_only=True)
class ExperimentSummary:
    """One experiment in a listing: its labels, how many cases and runs, how many passed, when it began."""

    experiment_id: str
    experiment_name: str
    dataset: str
    cases: int
    runs: int
    passes: int
    started_at: str

    @property
    def pass_rate(self) -> float:
        """Runs passed over runs made."""
        return self.passes / self.runs if self.runs else 0.0


def count_experiments(conn: Connection) -> int:
    """How many experiments the table holds."""
    table = tables.eval_results
    return int(conn.execute(select(func.count(func.distinct(table.c.experiment_id)))).scalar_one())


def experiment_summaries(conn: Connection, *, offset: int = 0, limit: int = 50) -> list[ExperimentSummary]:
    """A page of experiments, newest first (by their first run's start), counted in the database."""
    table = tables.eval_results
    started = func.min(table.c.started_at)
    query = (
        select(
            table.c.experiment_id,
            func.min(table.c.experiment_name),
            func.min(table.c.dataset),
            func.count(func.distinct(table.c.case_name)),
            func.count(),
            func.sum(case((table.c.passed, 1), else_=0)),
            started,
        )
        .group_by(table.c.experiment_id)
        .order_by(started.desc(), table.c.experiment_id.desc())
        .offset(offset)
        .limit(limit)
    )
    return [
        ExperimentSummary(
            experiment_id=str(exp),
            experiment_name=str(name),
            dataset=str(data),
            cases=int(cases),
            runs=int(runs),
            passes=int(passes or 0),
            started_at=str(when),
        )
        for exp, name, data, cases, runs, passes, when in conn.execute(query).all()
    ]


Change: TypeAlias = Literal["fixed", "broken", "better", "worse", "same", "only_a", "only_b"]
"""How a case moved from experiment A to B: ``fixed`` (failed in A, passes in B), ``broken`` (the
reverse), ``better`` / ``worse`` (its pass rate moved without crossing ``min_pass_rate``), ``same``,
or found in one experiment only."""


def case_pass_rates(rows: Sequence[EvalRow]) -> dict[str, float]:
    """Each case's runs passed over its runs, in the order the cases first appear."""
    tally: dict[str, list[int]] = {}
    for row in rows:
        counts = tally.setdefault(row.case_name, [0, 0])
        counts[0] += 1 if row.passed else 0
        counts[1] += 1
    return {name: passes / runs for name, (passes, runs) in tally.items()}


def _change(rate_a: float, rate_b: float, threshold: float) -> Change:
    passed_a, passed_b = rate_a >= threshold, rate_b >= threshold
    if passed_a != passed_b:
        return "fixed" if passed_b else "broken"
    if rate_a == rate_b:
        return "same"
    return "better" if rate_b > rate_a else "worse"


def case_changes(
    rates_a: Mapping[str, float], rates_b: Mapping[str, float], threshold: float
) -> list[tuple[str, Change]]:
    """The cases of two experiments paired by name (A's order, then B's new ones), each with its change.

    The one rule of comparison: the evals report and the inspector both label with it.
    A case passes when its rate reaches ``threshold``.
    """
    names = [*rates_a, *(name for name in rates_b if name not in rates_a)]
    changes: list[tuple[str, Change]] = []
    for name in names:
        rate_a, rate_b = rates_a.get(name), rates_b.get(name)
        if rate_a is None or rate_b is None:
            change: Change = "only_a" if rate_b is None else "only_b"
        else:
            change = _change(rate_a, rate_b, threshold)
        changes.append((name, change))
    return changes
