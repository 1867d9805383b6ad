"""``weakprompt replay``: run a prompt again over a stored session, offline; exit 1 on a divergence."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.console import Console

from ..errors import WeakpromptError
from ..replay import replay_sync
from ..store import Store
from .loading import load_prompt
from .terminal import markup_text

__all__ = ["replay_command"]


@click.command("replay")
@click.argument("db")
@click.argument("session_id")
@click.argument("target")
@click.option(
    "--tools",
    "tool_mode",
    type=click.Choice(["stored", "run"]),
    default="stored",
    show_default=True,
    help="Answer each tool call with its recorded result, or run the handlers again.",
)
@click.option(
    "--record",
    is_flag=True,
    help="Keep the replayed run as a new session of DB (by default it is not stored).",
)
def replay_command(*, db: str, session_id: str, target: str, tool_mode: str, record: bool) -> None:
    """Replay SESSION_ID of DB with the prompt TARGET (app.py:build_prompt), calling no model.

    Exits 0 when every request equals the recorded one, 1 with the first divergence.
    """
    console = Console(width=None if sys.stdout.isatty() else 120, highlight=False)
    if "://" not in db and not Path(db).is_file():
        raise click.ClickException(f"no database at {db}")
    try:
        prompt = load_prompt(target)
        with Store.open(db) as store:
            report = replay_sync(
                store,
                session_id,
                prompt=prompt,
                tools="run" if tool_mode == "run" else "stored",
                record=record,
            )
    except WeakpromptError as exc:
        raise click.ClickException(f"{type(exc).__name__}: {exc}") from exc
    where = f"recorded as session {markup_text(report.replay_session_id)}" if record else "not stored"
    if report.divergence is None:
        console.print(f"identical: {report.turns} model call(s) {where}")
        return
    console.print(
        f"[bold]diverged[/bold] after {report.turns} of {report.recorded_turns} model call(s), {where}"
    )
    console.print(markup_text(report.divergence.describe()))
    sys.exit(1)
