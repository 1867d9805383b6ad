"""Paused runs in the CLI: how they are shown, and what ``weakprompt approve`` / ``deny`` decide."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, cast

import click
from rich.console import Console
from rich.markup import escape

if TYPE_CHECKING:
    from ..jsontypes import JSONObject
    from ..runtime import Decision, PausedRun

__all__ = ["cli_decisions", "print_paused"]


def print_paused(console: Console, paused: PausedRun) -> None:
    """The pause a session waits in: each pending call with its arguments and token."""
    console.print(
        f"[bold red]PAUSED[/bold red] (pause {paused.seq}): {len(paused.pending)} call(s) wait for a decision"
    )
    for waiting in paused.pending:
        arguments = json.dumps(waiting.arguments, ensure_ascii=False)
        note = f" · {escape(waiting.note)}" if waiting.note else ""
        call = f"{escape(waiting.call_id)} {escape(waiting.tool)}({escape(arguments)})"
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
    from ..runtime import Approve, Deny

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
