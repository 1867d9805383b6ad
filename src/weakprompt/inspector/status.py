"""A run's status as the store shows it: finished, failed, or paused.

The transcript records turns, not outcomes, so the status is read from
its shape: a session whose last appended commit is an assistant reply
without tool calls reached a final answer (``finished``); any other
session ended without one (``failed``, or still running). ``paused``
comes from a table of paused runs, when the database has one: stores
written before human approval existed have none, and the inspector must
open them all the same. :class:`PausedRuns` names that table, so the
query follows it wherever it is defined.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import attrs
from sqlalchemy import Connection, String, column, inspect, select, table, text

__all__ = ["DEFAULT_PAUSED_RUNS", "PausedRuns", "RunStatus", "shape_status"]

RunStatus = Literal["finished", "failed", "paused"]


def shape_status(last_role: str | None, last_has_tool_calls: bool) -> RunStatus:
    """``finished`` when the last appended commit is a final answer, else ``failed``."""
    return "finished" if last_role == "assistant" and not last_has_tool_calls else "failed"


@attrs.frozen
class PausedRuns:
    """Where paused runs are kept: a table with one row (or more) per paused session.

    ``where`` is an optional SQL condition on that table's rows (for a
    table that keeps resumed runs too, e.g. ``"resumed_at IS NULL"``).
    A database without the table has no paused runs.
    """

    table: str = "paused_runs"
    session_column: str = "session_id"
    where: str | None = None

    def present(self, conn: Connection) -> bool:
        return inspect(conn).has_table(self.table)

    def paused(self, conn: Connection, session_ids: Sequence[str]) -> set[str]:
        """The sessions among ``session_ids`` with a paused run."""
        if not session_ids or not self.present(conn):
            return set()

        session = column(self.session_column, String)
        query = select(session).select_from(table(self.table)).where(session.in_(list(session_ids)))
        if self.where is not None:
            query = query.where(text(self.where))
        return {str(value) for value in conn.execute(query.distinct()).scalars()}


DEFAULT_PAUSED_RUNS = PausedRuns()
