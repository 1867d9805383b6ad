"""``weakprompt fork``: branch a stored session at a commit into a new session (no copy of its history)."""

from __future__ import annotations

from pathlib import Path

import click

from ..errors import WeakpromptError
from ..replay import fork
from ..safetext import terminal_text
from ..store import Store
from ..transcript import Transcript

__all__ = ["fork_command"]

_SHORTEST = 7


def _resolve(store: Store, session_id: str, at: str) -> str:
    """A full commit hash from a unique prefix of one in the session's chain (the text as given otherwise)."""
    if len(at) >= 64 or len(at) < _SHORTEST:
        return at
    matches = [c.hash for c in Transcript(store, session_id).log() if c.hash.startswith(at)]
    if len(matches) > 1:
        raise click.ClickException(
            terminal_text(f"commit prefix {at!r} is ambiguous in session {session_id!r}")
        )
    return matches[0] if matches else at


@click.command("fork")
@click.argument("db")
@click.argument("session_id")
@click.option("--at", "at", required=True, help="The commit to fork at (its hash, or a unique prefix of 7+).")
@click.option("--as", "new_session", default=None, help="The new session's id (default: a new one).")
def fork_command(*, db: str, session_id: str, at: str, new_session: str | None) -> None:
    """Fork SESSION_ID of DB at a commit into a new session sharing its history; print the new id."""
    if "://" not in db and not Path(db).is_file():
        raise click.ClickException(f"no database at {db}")
    try:
        with Store.open(db) as store:
            made = fork(store, session_id, at=_resolve(store, session_id, at), new_session=new_session)
    except WeakpromptError as exc:
        raise click.ClickException(terminal_text(f"{type(exc).__name__}: {exc}")) from exc
    click.echo(terminal_text(made))
