"""A turn: commits staged in memory and stored together in one transaction.

A model turn is the assistant's reply plus the result of every tool call it
made. Stored one commit at a time, a crash between the reply and its last
result leaves a conversation that providers refuse (a tool call without an
answer) and costs one transaction per commit. Inside
:meth:`Transcript.turn` each commit gets its final hash at once and is
visible to this transcript object (compile, queries, ``get``, ``log``),
but is written only when the block ends, all of it or none of it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from .records import CommitInfo

if TYPE_CHECKING:
    from .writer import Placed

__all__ = ["StagedTurn", "TurnRecord"]


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

    @property
    def head(self) -> str | None:
        """Hash of the last commit of the turn (None when it made none)."""
        return self.commits[-1].hash if self.commits else None
