"""Read-only views the CLI prints: a stored transcript, its approvals, and a prompt's tools.

Every text a model, a tool or a person stored goes through
:func:`~weakprompt.cli.terminal.markup_text`, so none of it can drive the
terminal (a call id cannot overwrite the line a person is about to approve).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table

from ..parts import DocumentPart, ImagePart, Part, ReasoningPart
from ..runtime.pause_records import approval_note
from .live import call_text, shorten
from .terminal import markup_text

if TYPE_CHECKING:
    from ..inspector.sessions import SessionSummary
    from ..prompt import RenderedPrompt
    from ..runtime.pause_records import ApprovalNote, PauseRecord
    from ..transcript.records import CommitInfo
    from ..transcript.transcript import Transcript

__all__ = ["part_text", "print_commits", "print_pauses", "print_sessions", "print_tools", "tools_document"]

_ROLE_STYLE = {"system": "blue", "user": "green", "assistant": "cyan", "tool": "yellow"}


def print_commits(
    console: Console, transcript: Transcript, commits: Sequence[CommitInfo], *, full: bool
) -> None:
    """One block per commit: position, role, short hash, edit provenance, tools linked, usage."""
    limit = 10**9 if full else 600
    for info in commits:
        message = info.content
        style = _ROLE_STYLE.get(message.role, "white")
        header = f"#{info.seq} [{style}]{message.role}[/{style}] {info.hash[:12]}"
        if info.edit_target is not None:
            header += f" [magenta]EDIT of {info.edit_target[:12]}[/magenta]"
        tools = transcript.get_commit_tools(info.hash)
        if tools:
            header += f" [dim]tools: {markup_text(', '.join(str(t.get('name')) for t in tools))}[/dim]"
        usage = info.usage
        if usage is not None:
            header += f" [dim]usage: {usage.input_tokens} in / {usage.output_tokens} out[/dim]"
        if message.role == "tool":
            flag = " [red]error[/red]" if message.is_error else ""
            name, call_id = markup_text(message.name or ""), markup_text(message.tool_call_id or "")
            header += f" [dim]{name} id={call_id}[/dim]{flag}"
        console.print(header)
        decision = approval_note(info.metadata) if message.role == "tool" else None
        if decision is not None:
            console.print(
                f"  [magenta]decision[/magenta] {decision_text(decision, info.created_at.isoformat())}"
            )
        if message.content:
            console.print(markup_text(shorten(message.content, limit)), highlight=False)
        for call in message.tool_calls:
            console.print(f"  [yellow]→ call[/yellow] {call_text(call, limit)}")
        for part in message.parts:
            shown = part_text(part)
            if shown is not None:
                console.print(
                    f"  [magenta]{part.kind}[/magenta] {markup_text(shown)}", highlight=False, emoji=False
                )
        console.print()


def part_text(part: Part) -> str | None:
    """One line for an image, document or reasoning part (text parts are the message's text)."""
    if isinstance(part, ImagePart | DocumentPart):
        name = f"{part.name} " if part.name else ""
        source = f"{part.size} bytes, {part.digest[:19]}" if part.data is not None else part.url
        return f"{name}({part.media_type}, {source})"
    if isinstance(part, ReasoningPart):
        return f"from {part.issuer or '?'}" + (
            " (redacted)" if part.redacted else f": {shorten(part.text, 200)}"
        )
    return None


def decision_text(decision: ApprovalNote, when: str) -> str:
    """Who decided a call, what, and when its result was committed (markup, escaped)."""
    who = markup_text(decision.decided_by) if decision.decided_by else "(not recorded)"
    text = f"{markup_text(decision.decision.replace('_', ' '))} by {who} · committed {markup_text(when)}"
    if decision.message:
        text += f" · message: {markup_text(decision.message)}"
    asked, approved = decision.original_arguments_text, decision.arguments_text
    if asked is not None and approved is not None:
        text += f"\n    asked for {markup_text(asked)}\n    approved  {markup_text(approved)}"
    return text


def print_pauses(console: Console, pauses: Sequence[PauseRecord]) -> None:
    """Every pause of a session: a waiting one with each call and its token, a decided one with
    who decided (``decided_by``), when, and each call's decision."""
    for pause in pauses:
        if pause.paused:
            console.print(
                f"[bold red]PAUSED[/bold red] (pause {pause.seq}): {len(pause.waiting)} call(s) wait for a "
                f"decision (since {markup_text(pause.created_at)})"
            )
            for waiting in pause.waiting:
                state = "waiting for approval" if waiting.kind == "approval" else "waiting for its result"
                note = f" · {markup_text(waiting.note)}" if waiting.note else ""
                console.print(
                    f"  [yellow]pending[/yellow] {markup_text(waiting.call_id)} {markup_text(waiting.tool)}"
                    f"({markup_text(waiting.arguments_text)}) {state} "
                    f"[dim]token={markup_text(waiting.token)}[/dim]{note}"
                )
        else:
            who = markup_text(pause.decided_by) if pause.decided_by else "(not recorded)"
            when = markup_text(pause.decided_at) if pause.decided_at else "(not recorded)"
            console.print(f"[bold]pause {pause.seq}[/bold] decided by {who} at {when}")
            for decided in pause.decided:
                detail = f": {markup_text(shorten(decided.detail, 300))}" if decided.detail else ""
                console.print(
                    f"  {markup_text(decided.action)} {markup_text(decided.call_id)} "
                    f"{markup_text(decided.tool)}{detail}"
                )
        if pause.problem:
            console.print(f"  [red]damaged:[/red] {markup_text(pause.problem)}")


_STATUS_STYLE = {"finished": "green", "failed": "red", "paused": "yellow"}


def print_sessions(
    console: Console, sessions: Sequence[SessionSummary], waiting: Mapping[str, int] | None = None
) -> None:
    """The session list, newest first: start time, id, prompt, turns, tokens and status.

    ``waiting`` counts the pending calls of each paused session (shown beside its status).
    """
    if not sessions:
        console.print("no transcripts in this database")
        return
    pending = waiting or {}
    table = Table(title=f"{len(sessions)} session(s)", title_justify="left", box=None, pad_edge=False)
    for name in ("started", "session", "prompt", "turns", "tokens", "status"):
        table.add_column(name, justify="right" if name in ("turns", "tokens") else "left")
    for s in sessions:
        paused = s.session_id in pending
        status = "paused" if paused else s.status
        style = _STATUS_STYLE[status]
        mark = f" ({pending[s.session_id]} pending)" if paused else ""
        if s.damaged:
            mark += f" [red]({len(s.damaged)} damaged row(s): {markup_text('; '.join(s.damaged))})[/red]"
        table.add_row(
            markup_text(s.started_at[:19].replace("T", " ")),
            markup_text(s.session_id),
            markup_text(s.prompt or "-"),
            str(s.turns),
            f"{s.tokens:,}",
            f"[{style}]{status.upper() if paused else status}[/{style}]{mark}",
        )
    console.print(table)


def tools_document(rendered: RenderedPrompt[object]) -> list[dict[str, object]]:
    """The tools of a render as plain data: name, hash and schema, in offer order."""
    return [
        {"name": tool.name, "hash": digest, "schema": schema}
        for tool, digest, schema in zip(
            rendered.tools, rendered.tool_hashes, rendered.tool_schemas, strict=True
        )
    ]


def print_tools(console: Console, rendered: RenderedPrompt[object]) -> None:
    if not rendered.tools:
        console.print(f"prompt {markup_text(rendered.ns)}/{markup_text(rendered.key)} offers no tools")
        return
    table = Table(title=markup_text(f"tools of {rendered.ns}/{rendered.key}"), show_lines=True)
    table.add_column("name", style="bold")
    table.add_column("sha256")
    table.add_column("description")
    table.add_column("parameters (JSON Schema)")
    for tool, digest, schema in zip(rendered.tools, rendered.tool_hashes, rendered.tool_schemas, strict=True):
        table.add_row(
            markup_text(tool.name),
            markup_text(digest),
            markup_text(tool.description),
            markup_text(json.dumps(schema.get("parameters"), indent=2, ensure_ascii=False)),
        )
    console.print(table)
    if rendered.summarized_keys:
        keys = markup_text(", ".join(rendered.summarized_keys))
        console.print(f"summarized sections (more tools behind open_sections): {keys}")
