"""The ``weakprompt`` command: run a prompt, read a stored transcript, list a prompt's tools."""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from collections.abc import Generator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.console import Console
from rich.markup import escape
from rich.panel import Panel

from ..errors import WeakpromptError
from .adapters import BUILTIN_ADAPTERS, build_adapter
from .live import LivePrinter
from .loading import load_prompt, load_redactor
from .mcp_commands import mcp, run_with_servers
from .views import print_commits, print_sessions, print_tools, tools_document

if TYPE_CHECKING:
    from ..prompt import Prompt
    from ..runtime.response import PromptResponse
    from ..store import Store

__all__ = ["cli", "main"]


def _console() -> Console:
    # Wide enough that schemas and tool calls are not folded in pipes and CI logs.
    return Console(width=None if sys.stdout.isatty() else 120, highlight=False)


@contextmanager
def _reported_errors() -> Generator[None]:
    """weakprompt errors end the command with their message and exit status 1, no traceback."""
    try:
        yield
    except WeakpromptError as exc:
        notes = getattr(exc, "__notes__", [])
        detail = "".join(f"\n  {note}" for note in notes)
        raise click.ClickException(f"{type(exc).__name__}: {exc}{detail}") from exc


def _open_store(db: str | None, *, must_exist: bool) -> Store:
    from ..store import Store

    if db is None:
        return Store.open("sqlite://")
    is_url = "://" in db
    if must_exist and not is_url and not Path(db).is_file():
        raise click.ClickException(f"no database at {db}")
    return Store.open(db)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="weakprompt")
def cli() -> None:
    """Typed prompts and tools for LLM agents."""


@cli.command()
@click.argument("target")
@click.option(
    "--adapter",
    "adapter_spec",
    default="local",
    show_default=True,
    help=f"{' | '.join(BUILTIN_ADAPTERS)}, or module:name of an adapter or adapter factory.",
)
@click.option("--model", help="Model name (openai, anthropic) or GGUF path (local; default SmolLM2-135M).")
@click.option("--base-url", help="Endpoint of an OpenAI- or Anthropic-compatible server.")
@click.option("--input", "input_text", help="The user message.")
@click.option("--db", help="SQLite file (or database URL) that keeps the transcript; default: in memory.")
@click.option("--session", "session_id", help="Session id for the transcript; default: a new one.")
@click.option("--max-turns", default=16, show_default=True, type=click.IntRange(min=1))
@click.option("--force-tool", help="Make the model call this tool on its first turn.")
@click.option("--output-retries", default=1, show_default=True, type=click.IntRange(min=0))
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), help="Deadline in seconds.")
@click.option(
    "--redact",
    "redact_ref",
    help="module:name of a function (text -> text) that scrubs secrets from tool results "
    "(failure texts and successful output); default: the built-in one.",
)
@click.option(
    "--mcp",
    "mcp_servers",
    multiple=True,
    help="Mount an MCP server's tools for the run: a command line (quoted) or an http(s) URL. Repeatable.",
)
def run(
    target: str,
    *,
    adapter_spec: str,
    model: str | None,
    base_url: str | None,
    input_text: str | None,
    db: str | None,
    session_id: str | None,
    max_turns: int,
    force_tool: str | None,
    output_retries: int,
    timeout: float | None,
    redact_ref: str | None,
    mcp_servers: tuple[str, ...] = (),
) -> None:
    """Evaluate the prompt TARGET (path/to/module.py:name) and print every turn as it happens.

    TARGET may name a Prompt, a PromptTemplate, or a function with no
    arguments that returns one.
    """
    from ..deadlines import Deadline
    from ..runtime import ForceTool, default_redact
    from ..runtime.loop import run as run_loop
    from ..session import Session

    console = _console()
    with _reported_errors():
        redact = load_redactor(redact_ref) if redact_ref is not None else default_redact
        prompt = load_prompt(target)
        adapter = build_adapter(adapter_spec, model=model, base_url=base_url)
        session = Session(session_id=session_id or str(uuid.uuid4()))
        printer = LivePrinter(console)
        printer.attach(session.dispatcher)
        store = _open_store(db, must_exist=False)
        try:
            console.print(
                f"[bold]{escape(prompt.template.display_name)}[/bold] on "
                f"{escape(adapter.name)}/{escape(adapter.model)} · session {escape(session.session_id)}"
            )

            # the reply streams into the printer: text as it is written, each call as it completes
            async def loop_run(mounted: Prompt[object]) -> PromptResponse[object]:  # with any --mcp tools
                return await run_loop(
                    mounted,
                    adapter=adapter,
                    session=session,
                    input=input_text,
                    store=store,
                    deadline=Deadline.after(timeout, clock=session.clock) if timeout is not None else None,
                    max_turns=max_turns,
                    tool_choice=ForceTool(force_tool) if force_tool else "auto",
                    output_retries=output_retries,
                    redact=redact,
                    on_event=printer.on_event,
                )

            response = asyncio.run(run_with_servers(mcp_servers, prompt, loop_run))
        finally:
            store.close()
        _print_final(console, response)


def _print_final(console: Console, response: PromptResponse[object]) -> None:
    from ..serde import dump

    console.rule("final answer", style="green")
    console.print(Panel(escape(response.text or "(empty)"), title="text", expand=False))
    if response.output is not None:
        console.print(
            Panel(
                escape(json.dumps(dump(response.output), indent=2, ensure_ascii=False)),
                title=f"output ({type(response.output).__name__})",
                expand=False,
            )
        )
    usage = response.usage
    console.print(
        f"{response.turns} model call(s), {response.tool_calls} tool call(s) "
        f"({response.failed_tool_calls} failed), {usage.input_tokens} input / "
        f"{usage.output_tokens} output tokens · session {escape(response.session_id)}"
    )


@cli.group()
def transcript() -> None:
    """Read transcripts stored in a database."""


@transcript.command("show")
@click.option("--db", required=True, help="SQLite file or database URL.")
@click.option("--session", "session_id", help="Session id; without it, list the sessions.")
@click.option("--compiled", is_flag=True, help="Show only what is sent to the model (edits applied).")
@click.option("--full", is_flag=True, help="Do not shorten long messages.")
def show(*, db: str, session_id: str | None, compiled: bool, full: bool) -> None:
    """Print a session's commits: roles, hashes, edits, linked tools and usage."""
    console = _console()
    with _reported_errors():
        store = _open_store(db, must_exist=True)
        try:
            if session_id is None:
                from ..inspector.sessions import list_sessions

                print_sessions(console, list_sessions(store, limit=10**9).sessions)
                return
            from ..transcript import Transcript

            record = Transcript(store, session_id)
            commits = list(record.compile_view().commits) if compiled else record.log()
            if not commits:
                known = store.session_ids()
                raise click.ClickException(
                    f"no commits for session {session_id!r} in {db} "
                    f"(sessions: {', '.join(known) if known else 'none'})"
                )
            print_commits(console, record, commits, full=full)
        finally:
            store.close()


@cli.command()
@click.option("--db", required=True, help="SQLite file or database URL (opened read-only).")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535), help="0: any port.")
@click.option(
    "--trace-url",
    help="Link a turn's trace id to this URL, e.g. http://localhost:16686/trace/{trace_id}.",
)
def inspect(*, db: str, host: str, port: int, trace_url: str | None) -> None:
    """Serve a read-only web inspector for the store at --db (needs the 'inspector' extra)."""
    if "://" not in db and not Path(db).is_file():
        raise click.ClickException(f"no database at {db}")
    try:
        import uvicorn

        from ..inspector.app import InspectorSettings, create_app
    except ImportError as exc:
        raise click.ClickException(
            f"the inspector needs its extra: pip install 'weakprompt[inspector]' ({exc.name} is missing)"
        ) from exc
    app = create_app(db, settings=InspectorSettings(trace_url=trace_url))
    click.echo(f"weakprompt inspector on http://{host}:{port}/ (read-only; Ctrl-C stops it)")
    uvicorn.run(app, host=host, port=port, log_level="warning")


@cli.command()
@click.argument("target")
@click.option("--json", "as_json", is_flag=True, help="Print the tools as JSON instead of a table.")
def tools(target: str, *, as_json: bool) -> None:
    """List the tools prompt TARGET offers, with their JSON Schemas and content hashes."""
    console = _console()
    with _reported_errors():
        rendered = load_prompt(target).render()
        if as_json:
            click.echo(json.dumps(tools_document(rendered), indent=2, ensure_ascii=False))
            return
        print_tools(console, rendered)


cli.add_command(mcp)


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point."""
    cli.main(args=argv, prog_name="weakprompt")
