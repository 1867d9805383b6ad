"""A turn: commits staged in memory and stored together in one transaction.

A model turn is the assistant's reply plus the result of every tool call it
made. Stored one commit at a time, a crash between the reply and its last
result leaves a conversation that providers refuse (a tool call without an
answer) and costs one transaction per commit. Inside
:meth:`Transcript.turn` each commit gets its final hash at once and is
visible to this transcript object (compile, queries, ``get``, ``log``),
but is written only when the block ends, all of it or none of it.

Rows that belong to the turn without being commits (the stored outputs of
its tool results) join the same transaction through :class:`TurnWrite`,
a protocol implemented above this layer: the transcript never learns
what they are. On a deferred store (``Store.open(deferred=True)``) a turn
whose writes can all be decided without reading (:class:`PlannedWrite`) is
kept back with the store instead of written at once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

import attrs

from ..errors import TranscriptError
from .records import CommitInfo

if TYPE_CHECKING:
    from sqlalchemy import Connection

    from .writer import Placed

__all__ = ["PlannedWrite", "StagedTurn", "TurnRecord", "TurnWrite"]


class TurnWrite(Protocol):
    """More rows to store with a turn, in its transaction (see :meth:`TurnRecord.attach`)."""

    def write(self, conn: Connection) -> None:
        """Write the rows inside the turn's transaction, after its commits; raising undoes the turn."""
        ...

    def committed(self) -> None:
        """The turn's transaction has committed (publish events here); must not raise."""
        ...


class PlannedWrite(TurnWrite, Protocol):
    """A :class:`TurnWrite` that can also decide its rows before any transaction (optional ``plan``)."""

    def plan(self) -> Callable[[Connection], None] | None:
        """Decide now, without reading the database, what :meth:`write` would write; return the writing.

        The function returned runs later, inside a write transaction, after
        the turn's commits; :meth:`committed` is called as soon as the turn
        is kept, as it would be once stored. None: deciding needs a read,
        nothing was decided, and :meth:`write` will be called instead.
        """
        ...


@attrs.frozen
class _AfterCommit:
    """A :class:`TurnWrite` with nothing to write: a callback for when the turn is stored."""

    callback: Callable[[], None]

    def write(self, conn: Connection) -> None:
        return None

    def plan(self) -> Callable[[Connection], None]:
        return self.write  # it writes nothing, and reads nothing

    def committed(self) -> None:
        self.callback()


@attrs.define
class StagedTurn:
    """The open turn of one transcript object: where it started and what it staged."""

    base: str | None
    base_seq: int
    record: TurnRecord
    chain: list[Placed] = attrs.Factory(list)  # pyright: ignore[reportUnknownVariableType]
    by_hash: dict[str, Placed] = attrs.Factory(dict)  # pyright: ignore[reportUnknownVariableType]
    depth: int = 1

    @property
    def tail(self) -> tuple[str | None, int]:
        """Parent hash and sequence number for the next staged commit."""
        if self.chain:
            last = self.chain[-1].info
            return last.hash, last.seq + 1
        return self.base, self.base_seq + 1

    def stage(self, placed: Placed) -> None:
        self.chain.append(placed)
        self.by_hash[placed.info.hash] = placed
        self.record.commits = tuple(p.info for p in self.chain)


@attrs.define(eq=False)
class TurnRecord:
    """What a :meth:`Transcript.turn` block wrote, for the code inside and after it.

    ``commits`` are the commits made in the block, oldest first. While the
    block runs they are staged; after it ends, ``stored`` says whether they
    were written. If another writer appended to the session while the block
    ran, the turn was placed after that writer's commits (``moved``), and
    ``commits`` then holds the hashes as stored, which differ from the ones
    handed out inside the block.
    """

    commits: tuple[CommitInfo, ...] = ()
    stored: bool = False
    moved: bool = False
    writes: list[TurnWrite] = attrs.field(factory=list[TurnWrite], init=False, repr=False)
    """What was attached, in order (see :meth:`attach`); emptied when the block ends.

    Attached writes often refer back to the turn (a callback that reads its
    stored hashes): kept here after they ran, they would make every turn a
    reference cycle that only the cyclic garbage collector frees.
    """
    open: bool = attrs.field(default=True, init=False, repr=False)
    """True until the block ends (stored or not): only then may writes be attached."""
    renamed: dict[str, str] = attrs.field(factory=dict[str, str], init=False, repr=False)
    """Staged hash -> stored hash of each commit, when the turn ``moved``."""

    @property
    def head(self) -> str | None:
        """Hash of the last commit of the turn (None when it made none)."""
        return self.commits[-1].hash if self.commits else None

    def attach(self, write: TurnWrite) -> None:
        """Store ``write``'s rows in this turn's transaction, and tell it once that has committed.

        Writes run in the order they were attached, after the turn's commits;
        if the turn is not stored (its block raised, or writing failed),
        none of them is written and none is told. Committed-callbacks run in
        attach order once everything is stored.
        """
        if not self.open:
            raise TranscriptError("this turn has ended: nothing more can be stored with it")
        self.writes.append(write)

    def release_writes(self) -> list[TurnWrite]:
        """End the block: no more writes may be attached; returns (and forgets) the attached ones."""
        self.open = False
        writes, self.writes = self.writes, []
        return writes

    def on_stored(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` once the turn is stored, in order with the attached writes."""
        self.attach(_AfterCommit(callback))

    def stored_hash(self, staged: str) -> str:
        """The hash a commit handed out inside the block has as stored (they differ if ``moved``)."""
        return self.renamed.get(staged, staged)
