"""The ``weakprompt`` command: run a prompt, read a stored transcript, list a prompt's tools."""

from __future__ import annotations

import asyncio
import json
import socket
import sys
import uuid
from collections.abc import Callable, Generator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

import click
from rich.console import Console
from rich.panel import Panel

from ..deadlines import Deadline
from ..errors import WeakpromptError
from ..inspector.sessions import list_sessions
from ..model.output_mode import OUTPUT_MODES, OutputMode
from ..runtime import ForceTool, default_redact, paused_run, resume_sync
from ..runtime.loop import run as run_loop
from ..runtime.pause_records import stored_pauses
from ..safetext import lone_surrogate, terminal_text
from ..serde import dump
from ..session import Session
from ..store import Store
from ..transcript import Transcript
from .adapters import BUILTIN_ADAPTERS, AdapterOptions, build_adapter
from .attachments import input_content
from .evals import eval_command
from .files import mount_files
from .fork import fork_command
from .live import LivePrinter
from .loading import load_prompt, load_redactor
from .mcp_commands import mcp, run_with_servers
from .pauses import approvals, cli_decisions, default_decider, print_paused
from .replay import replay_command
from .terminal import markup_text
from .views import print_commits, print_pauses, print_sessions, print_tools, tools_document
from .worker import worker

if TYPE_CHECKING:
    from ..prompt import Prompt
    from ..runtime.response import PromptResponse

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
    help=f"{' | '.join(BUILTIN_ADAPTERS)}, or an adapter or adapter factory: ./file.py:name, or "
    "module:name (found from the current directory first). A factory gets --model and the adapter "
    "options below that it names as parameters.",
)
@click.option(
    "--model",
    help="Model name (openai, anthropic, gemini, openai-responses) "
    "or GGUF path (local; default SmolLM2-135M).",
)
@click.option("--base-url", help="Endpoint of the provider's server (or of one compatible with its API).")
@click.option("--input", "input_text", help="The user message.")
@click.option(
    "--image",
    "images",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False),
    help="Send this image with the user message (media type from its suffix). Repeatable.",
)
@click.option(
    "--file",
    "files",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False),
    help="Send this document (a PDF, a text file, ...) with the user message. Repeatable.",
)
@click.option("--db", help="SQLite file (or database URL) that keeps the transcript; default: in memory.")
@click.option("--session", "session_id", help="Session id for the transcript; default: a new one.")
@click.option("--max-turns", default=16, show_default=True, type=click.IntRange(min=1))
@click.option("--force-tool", help="Make the model call this tool on its first turn.")
@click.option("--output-retries", default=1, show_default=True, type=click.IntRange(min=0))
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), help="Deadline in seconds.")
@click.option(
    "--output-mode",
    type=click.Choice(OUTPUT_MODES),
    help="How a structured answer is asked for: native (JSON schema), json_object (JSON mode plus the "
    "schema in the instructions), tool (a final-answer tool), prompted (instructions only), or auto "
    "(the best the server accepts). Default: the prompt's, else auto.",
)
@click.option("--temperature", type=click.FloatRange(min=0), help="Sampling temperature.")
@click.option("--max-tokens", type=click.IntRange(min=1), help="Reply length limit per model call.")
@click.option(
    "--retries",
    type=click.IntRange(min=0),
    help="Retries of a model call after a rate limit, overload or lost connection (openai, anthropic; "
    "default 2), with exponential backoff; retry-after is honoured.",
)
@click.option(
    "--strict-tools/--no-strict-tools",
    default=None,
    help="Send tool schemas in strict mode (openai default: on; many compatible servers need off).",
)
@click.option(
    "--max-tokens-field",
    type=click.Choice(["max_completion_tokens", "max_tokens"]),
    help="The request field for --max-tokens (openai; compatible servers often know only max_tokens).",
)
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
@click.option(
    "--files",
    "files_dir",
    type=click.Path(exists=True, file_okay=False, dir_okay=True),
    help="Give the model this directory through the file tools (list, read, glob, grep), read-only. "
    "Adds the Files section unless the prompt has one.",
)
@click.option(
    "--files-writable",
    is_flag=True,
    help="With --files: also offer write_file and edit_file, which change the directory without asking.",
)
def run(
    target: str,
    *,
    adapter_spec: str,
    model: str | None,
    base_url: str | None,
    input_text: str | None,
    images: tuple[str, ...] = (),
    files: tuple[str, ...] = (),
    db: str | None,
    session_id: str | None,
    max_turns: int,
    force_tool: str | None,
    output_retries: int,
    timeout: float | None,
    output_mode: OutputMode | None,
    temperature: float | None,
    max_tokens: int | None,
    retries: int | None,
    strict_tools: bool | None,
    max_tokens_field: str | None,
    redact_ref: str | None,
    mcp_servers: tuple[str, ...] = (),
    files_dir: str | None = None,
    files_writable: bool = False,
) -> None:
    """Evaluate the prompt TARGET (path/to/module.py:name) and print every turn as it happens.

    TARGET may name a Prompt, a PromptTemplate, or a function with no
    arguments that returns one.
    """
    console = _console()
    with _reported_errors():
        redact = load_redactor(redact_ref) if redact_ref is not None else default_redact
        if files_writable and files_dir is None:
            raise click.UsageError("--files-writable needs --files DIR")
        content = input_content(input_text, images, files)
        prompt = load_prompt(target)
        resources = None
        if files_dir is not None:
            prompt, resources = mount_files(prompt, files_dir, writable=files_writable)
        options = AdapterOptions(
            output_mode=output_mode,
            temperature=temperature,
            retries=retries,
            strict_tools=strict_tools,
            max_tokens_field=max_tokens_field,
        )
        adapter = build_adapter(adapter_spec, model=model, base_url=base_url, options=options)
        session = Session(session_id=session_id or str(uuid.uuid4()))
        printer = LivePrinter(console)
        printer.attach(session.bus)
        store = _open_store(db, must_exist=False)
        try:
            console.print(
                f"[bold]{markup_text(prompt.template.display_name)}[/bold] on "
                f"{markup_text(adapter.name)}/{markup_text(adapter.model)} · "
                f"session {markup_text(session.session_id)}"
            )

            # the reply streams into the printer: text as it is written, each call as it completes
            async def loop_run(mounted: Prompt[object]) -> PromptResponse[object]:  # with any --mcp tools
                return await run_loop(
                    mounted,
                    adapter=adapter,
                    session=session,
                    input=content,
                    store=store,
                    deadline=Deadline.after(timeout, clock=session.clock) if timeout is not None else None,
                    max_turns=max_turns,
                    tool_choice=ForceTool(force_tool) if force_tool else "auto",
                    output_retries=output_retries,
                    max_output_tokens=max_tokens,
                    redact=redact,
                    resources=resources,
                    on_event=printer.on_event,
                )

            response = asyncio.run(run_with_servers(mcp_servers, prompt, loop_run))
        finally:
            store.close()
        if response.paused is not None:  # not an empty answer: calls wait for `weakprompt approve`
            print_paused(console, response.paused)
            return
        _print_final(console, response)


def _print_final(console: Console, response: PromptResponse[object]) -> None:
    console.rule("final answer", style="green")
    console.print(Panel(markup_text(response.text or "(empty)"), title="text", expand=False))
    if response.output is not None:
        console.print(
            Panel(
                markup_text(json.dumps(dump(response.output), indent=2, ensure_ascii=False)),
                title=f"output ({type(response.output).__name__})",
                expand=False,
            )
        )
    usage = response.usage
    console.print(
        f"{response.turns} model call(s), {response.tool_calls} tool call(s) "
        f"({response.failed_tool_calls} failed), {usage.input_tokens} input / "
        f"{usage.output_tokens} output tokens · session {markup_text(response.session_id)}"
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
                sessions = list_sessions(store, limit=10**9).sessions
                waiting = {  # read as the inspector reads them: a damaged pause row does not end the list
                    s.session_id: sum(len(p.waiting) for p in stored_pauses(store, s.session_id))
                    for s in sessions
                    if s.status == "paused"
                }
                print_sessions(console, sessions, waiting)
                return
            record = Transcript(store, session_id)
            commits = list(record.compile_view().commits) if compiled else record.log()
            if not commits:
                known = store.session_ids()
                raise click.ClickException(
                    f"no commits for session {session_id!r} in {db} "
                    f"(sessions: {', '.join(known) if known else 'none'})"
                )
            print_commits(console, record, commits, full=full)
            print_pauses(console, stored_pauses(store, session_id))
        finally:
            store.close()


TOKEN_ENV = "WEAKPROMPT_INSPECTOR_TOKEN"
"""Where ``weakprompt inspect`` reads its token when ``--token`` is not given."""


@cli.command()
@click.option("--db", required=True, help="SQLite file or database URL (opened read-only).")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535), help="0: any port.")
@click.option(
    "--trace-url",
    help="Link a turn's trace id to this URL, e.g. http://localhost:16686/trace/{trace_id}.",
)
@click.option(
    "--allow-host",
    "allow_hosts",
    multiple=True,
    metavar="NAME",
    help="Also answer requests whose Host is NAME (repeatable); loopback names always are.",
)
@click.option(
    "--token",
    envvar=TOKEN_ENV,
    show_envvar=True,
    metavar="TOKEN",
    help="Require this token (16+ visible ASCII characters) on every request; needed when --host is "
    "not 127.0.0.1, ::1 or localhost. The environment variable keeps it out of the process list.",
)
@click.option(
    "--insecure",
    is_flag=True,
    help="Serve off loopback without a token: anyone who reaches the address reads every transcript.",
)
def inspect(
    *,
    db: str,
    host: str,
    port: int,
    trace_url: str | None,
    allow_hosts: tuple[str, ...],
    token: str | None,
    insecure: bool,
) -> None:
    """Serve a read-only web inspector for the store at --db (needs the 'inspector' extra).

    It answers only requests addressed to a loopback name (127.0.0.1,
    localhost, [::1]), the --host address, and the names given with
    --allow-host: a web page on another site cannot read the store through
    a domain that points at this machine. Off loopback it also needs a
    token (--token or $WEAKPROMPT_INSPECTOR_TOKEN), which the printed URL
    carries; only --insecure serves it there without one.
    """
    if "://" not in db and not Path(db).is_file():
        raise click.ClickException(f"no database at {db}")
    try:
        import uvicorn

        from ..inspector.access import checked_token, is_loopback_bind
        from ..inspector.app import InspectorSettings, create_app
        from ..inspector.hosts import allowed_host
    except ImportError as exc:
        raise click.ClickException(
            f"the inspector needs its extra: pip install 'weakprompt[inspector]' ({exc.name} is missing)"
        ) from exc
    if token is not None:
        try:
            checked_token(token)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint=f"--token / ${TOKEN_ENV}") from exc
    elif not is_loopback_bind(host):
        if not insecure:
            raise click.UsageError(
                f"refusing to serve the store on {terminal_text(host)!r} without a token: off loopback "
                f"(anything but 127.0.0.1, ::1 and localhost) anyone who reaches the address could read "
                f"every transcript. Give --token TOKEN or set {TOKEN_ENV} (e.g. to the output of "
                "python -c 'import secrets; print(secrets.token_urlsafe(32))'), "
                "or --insecure to serve it to everyone anyway."
            )
        click.echo(
            f"warning: --insecure: serving the store on {terminal_text(host)!r} with no token; "
            "anyone who can reach that address can read every transcript",
            err=True,
        )
    names = list(allow_hosts)
    if host not in _ANY_ADDRESS:  # a client that reaches a named address may call it by that address
        names.append(host)
    for name in names:
        try:
            allowed_host(name)
        except ValueError as exc:
            raise click.BadParameter(
                str(exc), param_hint="--allow-host" if name != host else "--host"
            ) from exc
    settings = InspectorSettings(trace_url=trace_url, allowed_hosts=tuple(names), token=token)
    app = create_app(db, settings=settings)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning")

    class AnnouncedServer(uvicorn.Server):
        """Says where it listens once it does: with ``--port 0``, the port the system chose."""

        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            if self.should_exit:  # pragma: no cover - uvicorn exits the process when it cannot bind
                return
            bound = sorted({s.getsockname()[1] for server in self.servers for s in server.sockets})
            for line in inspector_banner(host, bound, token):
                click.echo(line)

    AnnouncedServer(config).run()


def inspector_banner(host: str, ports: list[int], token: str | None) -> list[str]:
    """What ``inspect`` prints once it listens: URLs a person can open (with the token), and caveats."""
    query = f"?token={quote(token, safe='')}" if token is not None else ""
    where = ", ".join(terminal_text(_http_url(host, port) + query) for port in ports)
    lines = [f"weakprompt inspector on {where} (read-only; Ctrl-C stops it)"]
    if host in _ANY_ADDRESS:
        lines.append("listening on every address: requests for other names need --allow-host NAME")
    return lines


_ANY_ADDRESS = frozenset({"", "0.0.0.0", "::"})


def _http_url(host: str, port: int) -> str:
    """Where a browser on this machine reaches the server (every address includes loopback)."""
    if host in _ANY_ADDRESS:
        host = "::1" if host == "::" else "127.0.0.1"
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/"


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


def _decide(
    default: str,
    *,
    target: str,
    db: str,
    session_id: str,
    calls: tuple[str, ...],
    others: tuple[str, ...],
    message: str,
    arguments: str | None,
    by: str | None,
    adapter_spec: str,
    model: str | None,
    base_url: str | None,
    files_dir: str | None = None,
    files_writable: bool = False,
) -> None:
    """Decide a paused run's calls and resume it to its next stop (shared by approve and deny).

    ``--files`` / ``--files-writable`` must repeat what the run was started
    with, so the resumed prompt offers the same tools on the same directory.
    """
    console = _console()
    with _reported_errors():
        if files_writable and files_dir is None:
            raise click.UsageError("--files-writable needs --files DIR")
        store = _open_store(db, must_exist=True)
        try:
            paused = paused_run(store, session_id)
            if paused is None:
                raise click.ClickException(f"session {session_id!r} is not paused: nothing to decide")
            approve, deny = (calls, others) if default == "approve" else (others, calls)
            decisions = cli_decisions(
                paused,
                approve=approve,
                deny=deny,
                message=message,
                arguments=arguments,
                default=None if calls else default,
            )
            prompt = load_prompt(target)
            resources = None
            if files_dir is not None:
                prompt, resources = mount_files(prompt, files_dir, writable=files_writable)
            adapter = build_adapter(adapter_spec, model=model, base_url=base_url)
            session = Session(session_id=session_id)
            printer = LivePrinter(console)
            printer.attach(session.bus)
            response = resume_sync(
                store,
                session_id,
                decisions,
                prompt=prompt,
                adapter=adapter,
                session=session,
                decided_by=by,
                resources=resources,
                on_event=printer.on_event,
            )
        finally:
            store.close()
        if response.paused is not None:
            print_paused(console, response.paused)
            return
        _print_final(console, response)


def _storable_text(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    """Refuse text no database can store (a lone surrogate, as a non-UTF-8 argument decodes to)."""
    where = None if value is None else lone_surrogate(value)
    if where is not None:
        raise click.BadParameter(f"holds a lone surrogate {where}, which is not valid Unicode")
    return value


def _decision_command(default: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    def decorate(fn: Callable[..., None]) -> Callable[..., None]:
        options = [
            click.argument("target"),
            click.option("--db", required=True, help="SQLite file or database URL holding the paused run."),
            click.option("--session", "session_id", required=True, help="Session id of the paused run."),
            click.option(
                "--call",
                "calls",
                multiple=True,
                help=f"Call id to {default} (repeatable); default: every pending call.",
            ),
            click.option(
                "--deny" if default == "approve" else "--approve",
                "others",
                multiple=True,
                help="Call id to decide the other way (repeatable).",
            ),
            click.option(
                "--message",
                default="The operator did not allow this call.",
                show_default=True,
                help="What the model reads for a denied call.",
            ),
            click.option("--arguments", help="JSON object: run the one --call with these arguments instead."),
            click.option(
                "--by",
                callback=_storable_text,
                help="Who decides (recorded with the decision); default: the OS user.",
            ),
            click.option(
                "--adapter",
                "adapter_spec",
                default="local",
                show_default=True,
                help=f"{' | '.join(BUILTIN_ADAPTERS)}, or module:name.",
            ),
            click.option("--model", help="Model name or GGUF path."),
            click.option(
                "--base-url", help="Endpoint of the provider's server (or of one compatible with its API)."
            ),
            click.option(
                "--files",
                "files_dir",
                type=click.Path(exists=True, file_okay=False, dir_okay=True),
                help="The directory the run was started with (run --files).",
            ),
            click.option("--files-writable", is_flag=True, help="Repeat run's --files-writable."),
        ]
        for option in reversed(options):
            fn = option(fn)
        return fn

    return decorate


@cli.command()
@_decision_command("approve")
def approve(**options: object) -> None:
    """Approve the pending calls of a paused run (of prompt TARGET) and resume it.

    Without --call every pending call is approved; --deny ID denies that one.
    """
    _run_decision("approve", options)


@cli.command()
@_decision_command("deny")
def deny(**options: object) -> None:
    """Deny the pending calls of a paused run (of prompt TARGET) and resume it: the model reads the denial.

    Without --call every pending call is denied; --approve ID approves that one.
    """
    _run_decision("deny", options)


def _run_decision(default: str, options: dict[str, object]) -> None:
    def text(name: str) -> str | None:
        value = options.get(name)
        return value if isinstance(value, str) else None

    def names(name: str) -> tuple[str, ...]:
        value = options.get(name)
        return tuple(str(v) for v in value) if isinstance(value, tuple) else ()  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]

    _decide(
        default,
        target=str(options["target"]),
        db=str(options["db"]),
        session_id=str(options["session_id"]),
        calls=names("calls"),
        others=names("others"),
        message=text("message") or "",
        arguments=text("arguments"),
        by=text("by") or default_decider(),
        adapter_spec=text("adapter_spec") or "local",
        model=text("model"),
        base_url=text("base_url"),
        files_dir=text("files_dir"),
        files_writable=options.get("files_writable") is True,
    )


cli.add_command(approvals)
cli.add_command(mcp)
cli.add_command(worker)
cli.add_command(replay_command)
cli.add_command(fork_command)
cli.add_command(eval_command)


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point."""
    cli.main(args=argv, prog_name="weakprompt")
