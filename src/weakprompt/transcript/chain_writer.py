"""The store side of one transcript object's writes: a commit now, or a staged turn at its end.

It places drafts (:mod:`weakprompt.transcript.writer`) on the stored chain
and writes them; it knows nothing of the compiled view, which the
:class:`~weakprompt.transcript.Transcript` keeps up to date from what this
returns.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Sequence

from sqlalchemy import Connection

from ..errors import TranscriptError
from ..store.commit_rows import session_head
from ..store.store import Store
from .records import CommitInfo
from .turns import StagedTurn, TurnWrite
from .writer import (
    Draft,
    Placed,
    place,
    replace_chain,
    resolve_edit,
    shared_commit,
    store_commits,
    stored_commit,
)

__all__ = ["ChainWriter"]


class ChainWriter:
    """Appends to the chain of ``session_id``; remembers which tool sets are known to be stored."""

    def __init__(self, store: Store, session_id: str, *, assume_new: bool = False) -> None:
        self._store = store
        self._session_id = session_id
        # The session has no commits and nothing else writes it before this writer's first write.
        self._assume_new = assume_new
        # Tool sets are immutable and shared store-wide, so once seen stored they stay stored.
        self._stored_sets: set[str] = set()
        # The head this writer stored last (hash, seq) and the store's change count right after
        # its transaction (see Store.change_count): while the count holds, that is still the head.
        self._last_write: tuple[str, int, int] | None = None
        # The head this writer left and the store's write_count inside that write: while the
        # count holds, nothing else was written through the store (used by deferred stores).
        self._mark: tuple[str, int] | None = None

    @property
    def _lock_name(self) -> str:
        # Keeps concurrent writers of this session (other processes on
        # PostgreSQL) from picking the same head as parent.
        return f"transcript:{self._session_id}"

    def write_now(self, draft: Draft) -> Placed:
        """Append one commit to the stored head, in its own transaction."""
        with self._store.write(lock=self._lock_name) as conn:
            head = self._head(conn)
            parent, seq = (None, 0) if head is None else (head[0], head[1] + 1)
            target = None
            if draft.edit is not None:
                target = resolve_edit(
                    stored_commit(conn),
                    session_id=self._session_id,
                    target_hash=draft.edit,
                    content=draft.content,
                    shared=shared_commit(conn, self._session_id),
                )
            placed = place(draft, session_id=self._session_id, parent=parent, seq=seq, edit_target=target)
            new_sets = store_commits(conn, [placed], self._stored_sets)
            last_write = self._noted(conn, placed)
            mark = (placed.info.hash, self._store.write_count)
        self._stored_sets |= new_sets
        self._last_write = last_write
        self._mark = mark
        self._assume_new = False
        return placed

    def stage(self, turn: StagedTurn, draft: Draft, *, shown: Container[str]) -> Placed:
        """Place a commit after the turn's last one; an edit is checked against staged and stored commits.

        ``shown`` holds the commits of the view the turn builds on. An edit
        must target one of them: a commit another writer stored after the
        turn's base exists, but has no place in that view to be replaced.
        """
        parent, seq = turn.tail
        target = None
        if draft.edit is not None:
            with self._store.read() as conn:
                stored = stored_commit(conn)

                def lookup(commit: str) -> CommitInfo | None:
                    staged = turn.by_hash.get(commit)
                    return staged.info if staged is not None else stored(commit)

                target = resolve_edit(
                    lookup,
                    session_id=self._session_id,
                    target_hash=draft.edit,
                    content=draft.content,
                    shared=shared_commit(conn, self._session_id),
                )
            if target not in shown:
                raise TranscriptError(
                    f"cannot edit {draft.edit[:12]} inside this turn: it was stored by another writer "
                    "after the view the turn started from; edit it outside the turn, or in a turn "
                    "opened after it (with refresh=True)"
                )
        placed = place(draft, session_id=self._session_id, parent=parent, seq=seq, edit_target=target)
        turn.stage(placed)
        return placed

    def store_turn(self, turn: StagedTurn) -> tuple[list[Placed], bool]:
        """Write a finished turn in one transaction: the commits as stored, and whether they moved.

        They move (new parents and hashes) when another writer appended to
        the session after the turn's base. The rows attached to the turn
        (:meth:`TurnRecord.attach`) are written in the same transaction,
        after the commits.
        """
        chain = turn.chain
        writes = turn.record.writes
        if not chain and not writes:
            return [], False
        if self._store.deferred and self._defer_turn(turn, writes):
            return chain, False
        moved = False
        new_sets: set[str] = set()
        last_write = self._last_write
        mark = None
        with self._store.write(lock=self._lock_name) as conn:
            if chain:
                head = self._head(conn)
                if (None if head is None else head[0]) != turn.base:
                    chain = replace_chain(chain, session_id=self._session_id, head=head)
                    moved = True
                new_sets = store_commits(conn, chain, self._stored_sets)
            for write in writes:
                write.write(conn)
            if chain:
                last_write = self._noted(conn, chain[-1])
                mark = (chain[-1].info.hash, self._store.write_count)
        self._stored_sets |= new_sets
        self._last_write = last_write
        self._mark = mark if chain else self._mark
        self._assume_new = self._assume_new and not chain
        return chain, moved

    def _defer_turn(self, turn: StagedTurn, writes: Sequence[TurnWrite]) -> bool:
        """Keep the turn back with a deferred store, when it can be written without reading anything.

        That takes a known head (a new session, or nothing written through
        the store since this writer's last write) that the turn starts from,
        and writes that can all be decided now (:class:`~.turns.PlannedWrite`).
        """
        chain = turn.chain
        if not chain:
            return False
        after = None  # a promised-new session: nothing else writes before this writer's first write
        if not self._assume_new:
            if self._mark is None or self._mark != (turn.base, self._store.write_count):
                return False
            after = self._mark[1]  # and nothing written through the store since (checked when kept)
        elif turn.base is not None:  # pragma: no cover - a promised-new session starts with no base
            return False
        plans: list[Callable[[Connection], None]] = []
        for write in writes:
            planned: Callable[[], Callable[[Connection], None] | None] | None = getattr(write, "plan", None)
            plan = None if planned is None else planned()
            if plan is None:
                return False  # written now instead (rows already planned are decided again there)
            plans.append(plan)
        placed = list(chain)

        def store(conn: Connection) -> None:
            store_commits(conn, placed, set())  # tool sets: asked inside the deferred transaction
            for plan in plans:
                plan(conn)

        count = self._store.defer(store, after=after)
        if count is None:
            return False  # another thread wrote meanwhile: written now (planned rows are decided again)
        self._mark = (placed[-1].info.hash, count)
        self._last_write = None  # the database has not seen it: ask it next time
        self._assume_new = False
        return True

    def _head(self, conn: Connection) -> tuple[str, int] | None:
        """The session's stored head: known without asking when nothing was written since this writer."""
        if self._assume_new:
            return None
        last = self._last_write
        if last is not None and self._store.change_count(conn) == last[2]:
            return last[0], last[1]
        return session_head(conn, self._session_id)

    def _noted(self, conn: Connection, head: Placed) -> tuple[str, int, int] | None:
        """``head`` with the change count at the end of the transaction that stores it (None: not kept)."""
        count = self._store.change_count(conn)
        return None if count is None else (head.info.hash, head.info.seq, count)
