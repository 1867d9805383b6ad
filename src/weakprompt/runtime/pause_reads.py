"""Reading the store's pauses: the runs waiting for decisions, and checking decisions without resuming.

Re-exported by ``runtime.resume`` (their home before); the resume itself is there.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..safetext import lone_surrogate, type_name
from .pause_errors import ResumeError

if TYPE_CHECKING:
    from ..store import Store
    from .approval import Decision, PausedRun

__all__ = ["check_decided_by", "check_decisions_for", "load_pause_rows", "paused_run", "paused_runs"]


def load_pause_rows():
    """The store's pause rows, loaded at first use.

    The runtime package binds ``resume`` from ``runtime.resume``, whose name
    it shares, so that module and this one (which it re-exports from) load
    with ``import weakprompt.runtime``; that import loads no store (SQLAlchemy).
    """
    from ..store import pause_rows

    return pause_rows


def paused_run(store: Store, session_id: str) -> PausedRun | None:
    """The pause session ``session_id`` waits in, or ``None`` when it waits for nothing."""
    from .recovery import paused_from_row

    pause_rows = load_pause_rows()
    with store.read() as conn:
        rows = pause_rows.paused_rows(conn, session_id=session_id)
    return paused_from_row(rows[-1]) if rows else None


def paused_runs(store: Store) -> list[PausedRun]:
    """Every run of the store waiting for decisions, oldest first."""
    from .recovery import paused_from_row

    pause_rows = load_pause_rows()
    with store.read() as conn:
        return [paused_from_row(row) for row in pause_rows.paused_rows(conn)]


def check_decisions_for(
    store: Store,
    session_id: str,
    decisions: Sequence[Decision],
    *,
    seq: int | None = None,
    decided_by: str | None = None,
) -> PausedRun:
    """Check ``decisions`` against the pause ``session_id`` waits in, writing nothing; that pause.

    For deciding in one place and resuming in another (a queue): it refuses
    (:class:`ResumeError`) what can be told from the store alone: no pause
    waits, or not pause ``seq``, or it was decided already; a stored call was
    altered; a pending call has no decision, two, or a wrong token. The
    checks that need the prompt (a changed tool, edited arguments) and the
    claim of the pause are :func:`resume_sync`'s. ``decided_by`` is
    refused here too when the store could not keep it.
    """
    check_decided_by(decided_by)
    from .approval import approval_key
    from .decision_checks import check_decisions
    from .recovery import paused_from_row

    pause_rows = load_pause_rows()
    with store.read() as conn:
        pause = pause_rows.latest_pause(conn, session_id)
        store_id = pause_rows.store_id(conn) if pause is not None else ""
    if pause is None:
        raise ResumeError(f"session {session_id!r} has no paused run: nothing is waiting for decisions")
    if pause.status != "paused" or (seq is not None and pause.seq != seq):
        asked = pause.seq if seq is None else seq
        raise ResumeError(
            f"pause {asked} of session {session_id!r} is not waiting for decisions (the session's last "
            f"pause is {pause.seq}, {pause.status}"
            + (f" by {pause.decided_by}" if pause.decided_by and pause.status != "paused" else "")
            + ")"
        )
    paused = paused_from_row(pause)
    check_decisions(paused, tuple(decisions), None, None, store_id=store_id, key=approval_key())
    return paused


def check_decided_by(decided_by: object) -> None:
    """Refuse a ``decided_by`` the store cannot keep, before anything is read or written.

    It is stored with the decisions and in each decided call's metadata: a
    lone surrogate would fail deep in the database driver, half-way through.
    """
    if decided_by is None:
        return
    if not isinstance(decided_by, str):
        raise ResumeError(f"decided_by must be text or None, not {type_name(decided_by)}")
    where = lone_surrogate(decided_by)
    if where is not None:
        raise ResumeError(f"decided_by holds a lone surrogate {where}, which is not valid Unicode")
