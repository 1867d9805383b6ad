"""The SQL of eval results (``specs/EVALS.md``): one row per run of a case in an experiment.

The evals package decides what a row says (outcomes, scores and usage as
JSON text); the store only writes and reads rows. A row names the session
the case ran in, so its whole conversation is in the transcript.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs
from sqlalchemy import Connection, RowMapping, func, inspect, select

from . import tables

__all__ = ["EvalRow", "experiment_ids", "has_eval_table", "insert_eval_rows", "read_eval_rows"]


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
