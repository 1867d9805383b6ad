"""What a resume runs: read what the run left, check the decisions, claim the pause, restore the state.

Runs on a worker thread for ``runtime.resume.resume_with``; the plan it returns
is what the loop continues from (``runtime.resumption``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

import attrs

from .. import session as sessions  # its state persistence resolves on first use (the package root)
from ..canonical import parse_canonical_json
from ..session import Session
from .pause_errors import ResumeError
from .pause_reads import load_pause_rows

if TYPE_CHECKING:
    from ..prompt import Prompt
    from ..session import PersistedState
    from ..store import Store
    from ..store.pause_rows import PauseRow
    from .approval import Decision
    from .resumption import Resumption, RunContext

__all__ = ["Tokens", "prepare", "restore", "resume_pause", "stored_state"]

OutputT = TypeVar("OutputT")


@attrs.frozen
class Tokens:
    """What a pause's tokens are checked with here: the store's id and this process's approval key."""

    store_id: str
    key: bytes | None


def prepare(  # noqa: PLR0917 - one call site (runtime.resume), on a worker thread
    store: Store,
    session_id: str,
    decisions: tuple[Decision, ...],
    prompt: Prompt[OutputT],
    session: Session,
    given: bool,
    decided_by: str | None,
) -> tuple[Resumption, int]:
    """Read what the run left, check decisions, claim the pause; the plan and the pause number (0: none)."""
    from .approval import approval_key
    from .recovery import recovery_plan

    pause_rows = load_pause_rows()
    with store.read() as conn:
        pause = pause_rows.latest_pause(conn, session_id)
        journal = pause_rows.read_journal(conn, session_id)
        store_id = pause_rows.store_id(conn) if pause is not None else ""
    key = approval_key()
    if pause is not None and pause.status == "paused":
        tokens = Tokens(store_id, key)
        return resume_pause(store, pause, decisions, prompt, session, given, decided_by, tokens), pause.seq
    if decisions:
        if pause is not None:
            raise ResumeError(
                f"pause {pause.seq} of session {session_id!r} was already decided"
                + (f" by {pause.decided_by}" if pause.decided_by else "")
                + "; nothing is waiting for decisions"
            )
        raise ResumeError(f"session {session_id!r} has no paused run: nothing is waiting for decisions")
    resumption, state_of = recovery_plan(store, session_id, pause, journal, store_id=store_id, key=key)
    if state_of is not None:  # the decided turn of this pause was not stored: its state still holds
        restore(state_of, session, given)
    return resumption, 0


def resume_pause(  # noqa: PLR0917 - one call site, just above
    store: Store,
    pause: PauseRow,
    decisions: tuple[Decision, ...],
    prompt: Prompt[OutputT],
    session: Session,
    given: bool,
    decided_by: str | None,
    tokens: Tokens,
) -> Resumption:
    from .approval import decisions_to_json
    from .decision_checks import check_decisions, schema_hashes
    from .recovery import paused_from_row
    from .resumption import Resumption, plan_steps

    pause_rows = load_pause_rows()
    paused = paused_from_row(pause)
    context, persisted = stored_state(pause, given)
    rendered = (prompt.with_expanded(context.expanded) if context.expanded else prompt).render(session)
    tools = {t.name: t for t in rendered.tools}
    check_decisions(
        paused,
        decisions,
        tools,
        schema_hashes(rendered.tools, rendered.tool_names, rendered.tool_hashes),
        store_id=tokens.store_id,
        key=tokens.key,
    )
    with store.write(lock=f"paused_runs:{pause.session_id}") as conn:
        claimed = pause_rows.claim_pause(
            conn,
            pause.session_id,
            pause.seq,
            decisions_json=decisions_to_json(decisions),
            decided_by=decided_by,
            now=store.clock.now().isoformat(),
        )
    if not claimed:
        raise ResumeError(
            f"pause {pause.seq} of session {pause.session_id!r} was already resumed by someone else"
        )
    try:
        sessions.restore_state(session, persisted)
    except sessions.SessionStateError as exc:
        exc.add_note("the pause is claimed: resume again (without decisions) once the session types import")
        raise
    return Resumption(plan_steps(paused.pending, decisions, decided_by), context=context, pause=pause.seq)


def stored_state(pause: PauseRow, given: bool) -> tuple[RunContext, PersistedState]:
    """The run context and session state stored with ``pause`` (refused: a slice missing and not given)."""
    from .resumption import RunContext

    state = parse_canonical_json(pause.state_json)
    context = RunContext.from_json(state.get("run") if isinstance(state, dict) else None)
    persisted = sessions.PersistedState.from_json(state.get("session") if isinstance(state, dict) else None)
    if persisted.unpersisted and not given:
        raise ResumeError(
            f"pause {pause.seq} of session {pause.session_id!r}: session slices "
            f"{', '.join(sorted(persisted.unpersisted))} could not be stored "
            f"({'; '.join(persisted.unpersisted.values())}); pass session= holding them"
        )
    return context, persisted


def restore(pause: PauseRow, session: Session, given: bool) -> None:
    sessions.restore_state(session, stored_state(pause, given)[1])
