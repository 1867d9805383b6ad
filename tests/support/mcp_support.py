"""Shared pieces of the MCP tests: an SDK server written here, prompts mounting it, process checks."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel

from weakprompt.mcp import McpServer, McpToolset
from weakprompt.prompt import MarkdownSection, Prompt, PromptTemplate

ROOT = Path(__file__).resolve().parents[2]
EVERYTHING = ROOT / "tests" / "mcp_servers" / "node_modules" / ".bin" / "mcp-server-everything"
VENV_BIN = Path(os.environ.get("VIRTUAL_ENV", ROOT / ".venv")) / "bin"


def everything_command() -> str:
    """The pinned server-everything binary; skips (fails under CI) when it is not installed."""
    return node_server_command("mcp-server-everything")


def node_server_command(binary: str) -> str:
    """A pinned npm reference server's binary; skips (fails under CI) when it is not installed."""
    found = EVERYTHING.parent / binary
    if found.exists() and shutil.which("node"):
        return str(found)
    if os.environ.get("CI"):
        pytest.fail(f"{found} is missing: run `make` (npm ci in tests/mcp_servers)")
    pytest.skip(f"{binary} is not installed (npm ci in tests/mcp_servers)")


STDIO_SERVER = """
import sys, time
from mcp.server.mcpserver import MCPServer

server = MCPServer("stdio-test")


@server.tool()
def big(size: int) -> str:
    \"\"\"A reply of about size characters.\"\"\"
    return "x" * size


@server.tool()
async def stuck() -> str:
    \"\"\"Blocks the server's only thread: no later request is read until it is restarted.\"\"\"
    time.sleep(600)
    return "never"


@server.tool()
def ping() -> str:
    \"\"\"Answers.\"\"\"
    return "pong"


server.run("stdio")
"""


RAW_SERVER = r"""
import json, sys

out = sys.stdout.buffer


def send(message):
    out.write(json.dumps(message).encode() + b"\n")
    out.flush()


TOOLS = [
    {"name": name, "inputSchema": {"type": "object", "properties": {"size": {"type": "integer"}}}}
    for name in ("shout", "garbage", "late")
]
for line in sys.stdin.buffer:
    message = json.loads(line)
    method, ident = message.get("method"), message.get("id")
    if ident is None:
        continue
    if method == "initialize":
        version = message["params"]["protocolVersion"]
        info = {"name": "raw", "version": "1"}
        result = {"protocolVersion": version, "capabilities": {"tools": {}}, "serverInfo": info}
        send({"jsonrpc": "2.0", "id": ident, "result": result})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": ident, "result": {"tools": TOOLS}})
    elif method == "tools/call":
        name, size = message["params"]["name"], (message["params"].get("arguments") or {}).get("size", 0)
        if name == "shout":  # a notification over the limit: it answers no request
            params = {"level": "info", "data": "y" * size}
            send({"jsonrpc": "2.0", "method": "notifications/message", "params": params})
        elif name == "garbage":
            out.write(b"\nnot json\n")
        elif name == "late":  # the id after the result, as some servers write it
            text = json.dumps({"content": [{"type": "text", "text": "z" * size}]})
            out.write(('{"result":' + text + ',"jsonrpc":"2.0","id":' + json.dumps(ident) + "}\n").encode())
            out.flush()
            continue
        send({"jsonrpc": "2.0", "id": ident, "result": {"content": [{"type": "text", "text": name}]}})
    else:
        send({"jsonrpc": "2.0", "id": ident, "error": {"code": -32601, "message": "Method not found"}})
"""


def raw_server(directory: Path) -> McpServer:
    """A JSON-RPC server written by hand over stdio, to send bytes no SDK server would."""
    import sys

    script = directory / "raw_server.py"
    script.write_text(RAW_SERVER)
    return McpServer.stdio(sys.executable, str(script), name="raw", mode="legacy")


def stdio_server(directory: Path, name: str = "stdio-test") -> McpServer:
    """A small SDK server started as a real subprocess over stdio (see ``STDIO_SERVER``)."""
    import sys

    script = directory / "stdio_server.py"
    script.write_text(STDIO_SERVER)
    return McpServer.stdio(sys.executable, str(script), name=name)


def time_command() -> str:
    found = ROOT / ".venv" / "bin" / "mcp-server-time"
    if found.exists():
        return str(found)
    which = shutil.which("mcp-server-time")
    if which:
        return which
    if os.environ.get("CI"):
        pytest.fail("mcp-server-time is missing: install the dev extra")
    pytest.skip("mcp-server-time is not installed")


class Weather(BaseModel):
    city: str
    celsius: float


def demo_server() -> MCPServer:
    """A fresh server per test, so a tool one test adds stays in that test."""
    server = MCPServer("demo")

    @server.tool()
    def weather(city: str) -> Weather:
        """Weather for a city."""
        return Weather(city=city, celsius=21.5)

    @server.tool()
    def echo(text: str) -> str:
        """Echo the text back."""
        return text

    @server.tool()
    def boom(x: int) -> str:
        """Always fails."""
        raise ValueError(f"bad x {x}")

    @server.tool()
    async def slow(ctx: Context) -> str:
        """Reports progress twice."""
        await ctx.report_progress(1, 2, "half")
        await ctx.report_progress(2, 2, "done")
        return "finished"

    @server.tool()
    async def grow(ctx: Context) -> str:
        """Adds a tool named newer and says the list changed."""

        @server.tool()
        def newer(y: int) -> int:
            """A tool added at run time."""
            return y * 2

        await ctx.notify_tools_changed()
        return "grown"

    return server


def mounted_prompt(toolset: McpToolset, *, enabled: bool = True) -> Prompt[None]:
    section = MarkdownSection(
        title="Demo", key="demo", template="Use the demo tools.", toolsets=(toolset,), enabled=enabled
    )
    return Prompt(PromptTemplate(ns="tests", key="mcp", sections=[section]))


def in_memory(**options: object) -> McpToolset:
    return McpToolset(McpServer.in_memory(demo_server()), **options)  # type: ignore[arg-type]


def child_pids() -> set[int]:
    """Processes whose parent is this one (read from /proc)."""
    me = os.getpid()
    found: set[int] = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[1]) == me and fields[0] != "Z":
            found.add(int(entry.name))
    return found
