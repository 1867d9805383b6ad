"""Paused runs in the CLI: how they are shown, what ``weakprompt approve`` / ``deny`` decide,
and ``weakprompt approvals``, the list of who decided what and when."""

from __future__ import annotations

import getpass
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, cast

import click
from rich.console import Console

from ..errors import WeakpromptError
from ..runtime import Approve, Deny, decision_records
from ..store import Store
from .terminal import markup_text

if TYPE_CHECKING:
    from ..jsontypes import JSONObject
    from ..runtime import CallDecision, Decision, PausedRun

__all__ = ["approvals", "cli_decisions", "default_decider", "print_decisions", "print_paused"]


def default_decider() -> str | None:
    """Who decides when ``--by`` is not given: the OS user (``None`` when it cannot be told)."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry and no LOGNAME/USER: the decision names nobody
        return None


def print_paused(console: Console, paused: PausedRun) -> None:
    """The pause a session waits in: each pending call with its arguments and token."""
    console.print(
        f"[bold red]PAUSED[/bold red] (pause {paused.seq}): {len(paused.pending)} call(s) wait for a decision"
    )
    for waiting in paused.pending:
        arguments = json.dumps(waiting.arguments, ensure_ascii=False)
        note = f" · {markup_text(waiting.note)}" if waiting.note else ""
        call = f"{markup_text(waiting.call_id)} {markup_text(waiting.tool)}({markup_text(arguments)})"
        detail = f"[dim]{waiting.kind} token={waiting.token}[/dim]{note}"
        console.print(f"  [yellow]pending[/yellow] {call} {detail}")


def cli_decisions(
    paused: PausedRun,
    *,
    approve: Sequence[str],
    deny: Sequence[str],
    message: str,
    arguments: str | None,
    default: str | None,
) -> list[Decision]:
    """Decisions for every pending call: the ones named, and ``default`` ("approve" / "deny") for the rest.

    Without a default every pending call must be named.
    """
    known = {p.call_id for p in paused.pending}
    for call_id in (*approve, *deny):
        if call_id not in known:
            raise click.ClickException(
                f"no pending call {call_id!r} in pause {paused.seq} (pending: {', '.join(sorted(known))})"
            )
    edited: JSONObject | None = None
    if arguments is not None:
        if len(approve) != 1:
            raise click.ClickException("--arguments edits one call: name it with one --call")
        try:
            loaded = json.loads(arguments)
        except json.JSONDecodeError as exc:
            raise click.ClickException(f"--arguments is not JSON: {exc}") from exc
        if not isinstance(loaded, dict):
            raise click.ClickException("--arguments must be a JSON object")
        edited = cast("JSONObject", loaded)
    decisions: list[Decision] = []
    unnamed = [p.call_id for p in paused.pending if p.call_id not in approve and p.call_id not in deny]
    if unnamed and default is None:
        raise click.ClickException(f"decide every pending call; not named: {', '.join(unnamed)}")
    for waiting in paused.pending:
        approved = waiting.call_id in approve or (waiting.call_id not in deny and default == "approve")
        if approved:
            decisions.append(
                Approve(waiting.call_id, waiting.token, edited if waiting.call_id in approve else None)
            )
        else:
            decisions.append(Deny(waiting.call_id, waiting.token, message))
    return decisions


def print_decisions(console: Console, records: Sequence[CallDecision]) -> None:
    """One line per call of a stored pause: when, session and pause, the call, the decision, who."""
    if not records:
        console.print("no pauses stored")
        return
    for record in records:
        moment = record.decided_at or record.paused_at
        when = moment.isoformat(timespec="seconds") if moment is not None else "(time not recorded)"
        arguments = json.dumps(record.arguments, ensure_ascii=False)
        call = f"{markup_text(record.call_id)} {markup_text(record.tool)}({markup_text(arguments)})"
        where = f"{markup_text(record.session_id)} #{record.seq}"
        if record.decision == "pending":
            detail = f"[yellow]pending[/yellow] [dim]{record.kind} token={record.token}[/dim]"
        else:
            named = record.decided_by
            who = markup_text(named) if named is not None else "[dim](not named)[/dim]"
            detail = f"[bold]{record.decision}[/bold] by {who}"
            if record.edited_arguments is not None:
                edited = json.dumps(record.edited_arguments, ensure_ascii=False)
                detail += f" [dim]ran with[/dim] {markup_text(edited)}"
            if record.message:
                detail += f" [dim]·[/dim] {markup_text(record.message)}"
        console.print(f"{when}  {where}  {call}  {detail}", highlight=False)


@click.command()
@click.option("--db", required=True, help="SQLite file or database URL.")
@click.option("--session", "session_id", help="Only this session's pauses.")
def approvals(db: str, session_id: str | None) -> None:
    """List every stored decision on paused calls: when, which call, which decision, who decided.

    Calls still waiting are listed as pending, with their tokens.
    """
    from pathlib import Path

    if "://" not in db and not Path(db).is_file():
        raise click.ClickException(f"no database at {db}")
    try:
        store = Store.open(db, read_only=True)
        try:
            records = decision_records(store, session_id)
        finally:
            store.close()
    except WeakpromptError as exc:
        raise click.ClickException(f"{type(exc).__name__}: {exc}") from exc
    print_decisions(Console(width=None, highlight=False, soft_wrap=True), records)
