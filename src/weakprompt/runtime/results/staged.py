"""A prepared output waiting for a transcript turn to store it in the turn's own transaction."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ...store.output_record import ToolResultMetadata
from .records import PreparedOutput

if TYPE_CHECKING:
    from sqlalchemy import Connection

    from .store import ToolOutputStore

__all__ = ["StagedOutput"]


class StagedOutput:
    """A prepared output waiting for a transcript turn to store it (a ``TurnWrite``).

    ``reference`` is ``None`` until the turn's transaction has committed;
    then it is the stored record (``deduplicated`` as :meth:`store_result`
    would report it).
    """

    def __init__(
        self,
        outputs: ToolOutputStore,
        prepared: PreparedOutput,
        on_stored: Callable[[ToolResultMetadata], None] | None = None,
    ) -> None:
        self.prepared = prepared
        self.reference: ToolResultMetadata | None = None
        self._outputs = outputs
        self._on_stored = on_stored
        self._written: ToolResultMetadata | None = None

    def write(self, conn: Connection) -> None:
        self._written = self._outputs.write_staged(conn, self.prepared)

    def plan(self) -> Callable[[Connection], None] | None:
        planned = self._outputs.plan_staged(self.prepared)
        if planned is None:
            return None
        self._written, write = planned
        return write

    def committed(self) -> None:
        reference = self._written
        if reference is None:  # pragma: no cover - the turn calls write before committed
            return
        self.reference = reference
        self._outputs.staged_stored(reference)
        if self._on_stored is not None:
            self._on_stored(reference)
