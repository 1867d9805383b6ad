"""Read-only views the CLI prints: a stored transcript and a prompt's tools."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from .live import call_text, shorten

if TYPE_CHECKING:
    from ..inspector.sessions import SessionSummary
    from ..prompt import RenderedPrompt
    from ..transcript.records import CommitInfo
    from ..transcript.transcript import Transcript

__all__ = ["print_commits", "print_sessions", "print_tools", "tools_document"]

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
            header += f" [dim]tools: {escape(', '.join(str(t.get('name')) for t in tools))}[/dim]"
        usage = info.usage
        if usage is not None:
            header += f" [dim]usage: {usage.input_tokens} in / {usage.output_tokens} out[/dim]"
        if message.role == "tool":
            flag = " [red]error[/red]" if message.is_error else ""
            header += (
                f" [dim]{escape(message.name or '')} id={escape(message.tool_call_id or '')}[/dim]{flag}"
            )
        console.print(header)
        if message.content:
            console.print(escape(shorten(message.content, limit)), highlight=False)
        for call in message.tool_calls:
            console.print(f"  [yellow]→ call[/yellow] {call_text(call, limit)}")
        console.print()


_STATUS_STYLE = {"finished": "green", "failed": "red", "paused": "yellow"}


def print_sessions(console: Console, sessions: Sequence[SessionSummary]) -> None:
    """The session list, newest first: start time, id, prompt, turns, tokens and status."""
    if not sessions:
        console.print("no transcripts in this database")
        return
    table = Table(title=f"{len(sessions)} session(s)", title_justify="left", box=None, pad_edge=False)
    for name in ("started", "session", "prompt", "turns", "tokens", "status"):
        table.add_column(name, justify="right" if name in ("turns", "tokens") else "left")
    for s in sessions:
        style = _STATUS_STYLE[s.status]
        table.add_row(
            s.started_at[:19].replace("T", " "),
            escape(s.session_id),
            escape(s.prompt or "-"),
            str(s.turns),
            f"{s.tokens:,}",
            f"[{style}]{s.status}[/{style}]",
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
        console.print(f"prompt {escape(rendered.ns)}/{escape(rendered.key)} offers no tools")
        return
    table = Table(title=f"tools of {rendered.ns}/{rendered.key}", show_lines=True)
    table.add_column("name", style="bold")
    table.add_column("sha256")
    table.add_column("description")
    table.add_column("parameters (JSON Schema)")
    for tool, digest, schema in zip(rendered.tools, rendered.tool_hashes, rendered.tool_schemas, strict=True):
        table.add_row(
            escape(tool.name),
            digest,
            escape(tool.description),
            escape(json.dumps(schema.get("parameters"), indent=2, ensure_ascii=False)),
        )
    console.print(table)
    if rendered.summarized_keys:
        console.print(
            f"summarized sections (more tools behind open_sections): {', '.join(rendered.summarized_keys)}"
        )
