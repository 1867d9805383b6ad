"""A run's status as the store shows it: finished, failed, or paused.

The transcript records turns, not outcomes, so the status is read from
its shape: a session whose last appended commit is an assistant reply
without tool calls, not marked rejected, reached a final answer
(``finished``); any other session ended without one (``failed``, or still
running). ``paused``
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

from ..runtime.output_checks import OUTPUT_REJECTED
from ._json import load_object

__all__ = ["DEFAULT_PAUSED_RUNS", "PausedRuns", "RunStatus", "shape_status"]

RunStatus = Literal["finished", "failed", "paused"]


def shape_status(last_role: str | None, last_has_tool_calls: bool, last_metadata: str = "") -> RunStatus:
    """``finished`` when the last appended commit is a final answer the run accepted, else ``failed``.

    A final answer the run rejected (it did not parse, or a validator
    refused it, and no corrective turn followed) carries ``output_rejected``
    in its metadata (``last_metadata``, the commit's metadata JSON): that
    run ended on an ``OutputParseError`` / ``OutputValidationError``.
    """
    if last_role != "assistant" or last_has_tool_calls:
        return "failed"
    return "failed" if OUTPUT_REJECTED in load_object(last_metadata) else "finished"


@attrs.frozen
class PausedRuns:
    """Where paused runs are kept: by default the store's ``paused_runs`` table (specs/APPROVAL.md).

    ``where`` is an SQL condition on that table's rows: the table keeps
    resumed runs too, so only rows still ``paused`` count. A database
    without the table (older than schema 4) has no paused runs.
    """

    table: str = "paused_runs"
    session_column: str = "session_id"
    where: str | None = "status = 'paused'"

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
