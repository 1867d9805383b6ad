"""``fork``: a session branched at a commit, to be continued with another model, prompt, input or decision."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..runtime.approval import approval_key, pending_to_json, sign_pending
from ..runtime.decision_checks import check_stored_tokens
from ..runtime.recovery import paused_from_row
from ..store.pause_rows import PauseRow, insert_pause, pause_history, store_id
from ..transcript import fork_session

if TYPE_CHECKING:
    from sqlalchemy import Connection

    from ..store import Store
    from ..store.fork_rows import ForkRow

__all__ = ["fork"]


def fork(store: Store, session_id: str, *, at: str, new_session: str | None = None) -> str:
    """Branch ``session_id`` at commit ``at`` into a new session sharing its history; returns the new id.

    Nothing is copied: the new session reads the parent's commits up to
    ``at`` in place, and its own continue from there. Run on it as on any
    session (``Agent.run(..., session=new_id)``, ``run(..., store=store,
    session=Session(session_id=new_id))``). A run that paused at ``at`` is
    paused on the fork too, waiting for decisions of its own (whatever the
    parent decided): ``resume`` it there. Unknown sessions, a commit not in
    the session's chain and an existing target are refused
    (:class:`~weakprompt.errors.TranscriptError`), the store unchanged.
    """
    return fork_session(store, session_id, at=at, new_session=new_session, also=_carry_pause)


def _carry_pause(conn: Connection, made: ForkRow) -> None:
    """The parent's last pause at the fork commit, waiting again on the fork (its tokens made anew for it).

    The parent's tokens are checked first, so an altered row is refused
    rather than signed again. A pause decided inline (number 0) was never
    waiting, so it is not carried.
    """
    found = [
        row
        for row in pause_history(conn, session_id=made.parent_session)
        if row.head_hash == made.fork_commit and row.seq > 0
    ]
    if not found:
        return
    row = found[-1]
    store = store_id(conn)
    key = approval_key()
    paused = paused_from_row(row)
    check_stored_tokens(paused, store_id=store, key=key)
    signed = sign_pending(paused.pending, store_id=store, session_id=made.session_id, seq=1, key=key)
    insert_pause(
        conn,
        PauseRow(
            session_id=made.session_id,
            seq=1,
            status="paused",
            head_hash=made.fork_commit,
            pending_json=pending_to_json(signed),
            state_json=row.state_json,
            created_at=made.created_at.isoformat(),
        ),
    )
