"""``weakprompt mcp ...``: list an MCP server's tools, serve a prompt's tools; ``run --mcp`` mounting."""

from __future__ import annotations

import asyncio
import importlib.util
import json
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import attrs
import click
from rich.console import Console

from ..errors import WeakpromptError
from ..mcp import McpServer, McpToolset, PromptServer, is_loopback, mounted, with_toolsets
from ..safetext import terminal_text
from ..store import Store
from .terminal import markup_text

if TYPE_CHECKING:
    from ..prompt import Prompt

__all__ = ["mcp", "run_with_servers"]

T = TypeVar("T")


def _require_sdk() -> None:
    if importlib.util.find_spec("mcp") is None:
        raise click.ClickException("MCP needs the extra: pip install 'weakprompt[mcp]'")


async def run_with_servers(
    specs: Sequence[str], prompt: Prompt[Any], start: Callable[[Prompt[Any]], Awaitable[T]]
) -> T:
    """Run ``start`` on ``prompt`` with each server in ``specs`` (a command or URL) mounted for the run."""
    if not specs:
        return await start(prompt)
    _require_sdk()
    toolsets = [McpToolset(McpServer.parse(spec)) for spec in specs]
    async with mounted(*toolsets):
        return await start(with_toolsets(prompt, *toolsets))


@click.group()
def mcp() -> None:
    """Model Context Protocol: list a server's tools, serve a prompt's tools."""


@mcp.command("tools")
@click.argument("server")
@click.option("--json", "as_json", is_flag=True, help="Print the tools as JSON instead of text.")
@click.option("--timeout", default=30.0, show_default=True, type=click.FloatRange(min=0, min_open=True))
def tools_command(server: str, *, as_json: bool, timeout: float) -> None:
    """List the tools of SERVER (a command line, quoted, or an http(s) URL) with their schemas.

    Its prompts and resources are listed after them.
    """
    _require_sdk()

    async def read() -> dict[str, Any]:
        async with McpToolset(McpServer.parse(server), connect_timeout=timeout) as toolset:
            listed = [
                {
                    "name": tool.name,
                    "server_name": tool.info.name,
                    "description": tool.info.description,
                    "read_only": tool.info.read_only,
                    "destructive": tool.info.destructive,
                    "input_schema": tool.info.input_schema,
                }
                for tool in toolset.current_tools()
            ]
            prompts = [attrs.asdict(p) for p in await toolset.list_prompts()]
            resources = [attrs.asdict(r) for r in await toolset.list_resources()]
            return {
                "tools": listed,
                "problems": list(toolset.problems),
                "prompts": prompts,
                "resources": resources,
            }

    try:
        document = asyncio.run(read())
    except WeakpromptError as exc:
        raise click.ClickException(terminal_text(f"{type(exc).__name__}: {exc}")) from exc
    if as_json:  # JSON escapes of what the server sent, never its control characters
        click.echo(json.dumps(document, indent=2, ensure_ascii=True))
        return
    console = Console(highlight=False)
    console.print(f"{len(document['tools'])} tool(s)")
    for item in document["tools"]:
        hints = [
            h for h, on in (("read-only", item["read_only"]), ("destructive", item["destructive"])) if on
        ]
        shown = (
            item["name"] if item["name"] == item["server_name"] else f"{item['name']} ({item['server_name']})"
        )
        console.print(f"[bold]{markup_text(shown)}[/bold] {markup_text(' '.join(hints))}")
        if item["description"]:
            console.print(f"  {markup_text(item['description'])}")
        console.print(f"  {markup_text(json.dumps(item['input_schema'], ensure_ascii=False))}")
    for problem in document["problems"]:
        console.print(f"[red]not offered:[/red] {markup_text(problem)}")
    if document["prompts"]:
        names = markup_text(", ".join(str(p["name"]) for p in document["prompts"]))
        console.print(f"{len(document['prompts'])} prompt(s): {names}")
    if document["resources"]:
        uris = markup_text(", ".join(str(r["uri"]) for r in document["resources"]))
        console.print(f"{len(document['resources'])} resource(s): {uris}")


@mcp.command("serve")
@click.argument("target")
@click.option("--http", "use_http", is_flag=True, help="Serve streamable HTTP instead of stdio.")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8000, show_default=True, type=click.IntRange(min=0, max=65535))
@click.option("--path", "url_path", default="/mcp", show_default=True)
@click.option("--db", help="SQLite file (or database URL) to record each session's calls in.")
@click.option("--name", help="Server name announced to clients; default: the prompt's ns/key.")
@click.option(
    "--token",
    envvar="WEAKPROMPT_MCP_TOKEN",
    help="Bearer token every HTTP request must carry (env WEAKPROMPT_MCP_TOKEN); required off loopback.",
)
@click.option(
    "--insecure", is_flag=True, help="Serve HTTP off loopback without a token (anyone reaching the port)."
)
@click.option(
    "--allow-host", "allowed_hosts", multiple=True, help="Another Host name to answer (repeatable)."
)
@click.option(
    "--allow-origin",
    "allowed_origins",
    multiple=True,
    help="Another Origin to accept, e.g. https://app.example.",
)
def serve_command(
    target: str,
    *,
    use_http: bool,
    host: str,
    port: int,
    url_path: str,
    db: str | None,
    name: str | None,
    token: str | None,
    insecure: bool,
    allowed_hosts: tuple[str, ...],
    allowed_origins: tuple[str, ...],
) -> None:
    """Serve the enabled tools of prompt TARGET (path/to/module.py:name) as an MCP server.

    Over HTTP, requests naming another Host or Origin are refused on any bind;
    a bind off loopback needs --token (or WEAKPROMPT_MCP_TOKEN) or --insecure.
    """
    _require_sdk()
    from .loading import load_prompt

    try:
        prompt = load_prompt(target)
        store = None
        if db is not None:
            store = Store.open(db)
    except WeakpromptError as exc:
        raise click.ClickException(f"{type(exc).__name__}: {exc}") from exc
    server = PromptServer(prompt, name=name, store=store)
    try:
        if use_http:
            if insecure and token is None and not is_loopback(host):
                click.echo(
                    f"warning: serving on {host} without a token: anyone who can reach port {port} "
                    "can call these tools",
                    err=True,
                )
            asyncio.run(
                server.serve_http(
                    host=host,
                    port=port,
                    path=url_path,
                    token=token,
                    insecure=insecure,
                    allowed_hosts=allowed_hosts,
                    allowed_origins=allowed_origins,
                )
            )
        else:
            asyncio.run(server.serve_stdio())
    except KeyboardInterrupt:
        pass
    except WeakpromptError as exc:
        raise click.ClickException(f"{type(exc).__name__}: {exc}") from exc
    finally:
        if store is not None:
            store.close()
