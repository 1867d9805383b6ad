"""``fork``: a session branched at a commit, to be continued with another model, prompt, input or decision."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..transcript import fork_session

if TYPE_CHECKING:
    from ..store import Store

__all__ = ["fork"]


def fork(store: Store, session_id: str, *, at: str, new_session: str | None = None) -> str:
    """Branch ``session_id`` at commit ``at`` into a new session sharing its history; returns the new id.

    Nothing is copied: the new session reads the parent's commits up to
    ``at`` in place, and its own continue from there. Run on it as on any
    session (``Agent.run(..., session=new_id)``, ``run(..., store=store,
    session=Session(session_id=new_id))``). Unknown sessions, a commit not in
    the session's chain and an existing target are refused
    (:class:`~weakprompt.errors.TranscriptError`), the store unchanged.
    """
    return fork_session(store, session_id, at=at, new_session=new_session)
