"""Per-call cost of an MCP tool call, against one in-process server written with the SDK.

Cases, all in one event loop and one run, interleaved round by round:

- bare SDK: ``Client.call_tool`` on the SDK's in-process client (the floor: no framework at all);
- weakprompt: the model's tool call through ``ToolDispatcher.execute_async`` with the mounted
  tool (arguments decoded once and checked against the server's schema, session snapshot,
  the call, the result converted, one ``ToolInvoked``);
- openai-agents: the ``FunctionTool`` its ``MCPUtil`` makes for the server's tool,
  ``on_invoke_tool`` (what its runner calls);
- pydantic-ai: ``MCPToolset.call_tool`` on the toolset its agent would use (fastmcp client).

Two transports: the SDK's default in-process path (2026-07-28, direct dispatch: what
``Client(server)`` and weakprompt use by default) and the handshake-era memory streams (JSON-RPC
framing, what the peers use). Each framework is compared with the bare SDK on the same transport.
"""

from __future__ import annotations

import asyncio
import gc
import json
import time
from collections.abc import Awaitable, Callable
from importlib import metadata
from typing import Any

from harness import Stats, run_cli, stats_of

from weakprompt.mcp import McpServer, McpToolset
from weakprompt.messages import ToolCall
from weakprompt.runtime import ToolDispatcher
from weakprompt.session import Session

ARGUMENTS = {"city": "Lisbon", "days": 3, "units": "metric"}
ARGUMENTS_TEXT = json.dumps(ARGUMENTS)

Call = Callable[[], Awaitable[object]]


def make_server() -> Any:
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("bench")

    @server.tool()
    def forecast(city: str, days: int, units: str) -> str:
        """Weather forecast."""
        return "ok"

    return server


async def timed(cases: dict[str, Call], *, number: int, repeats: int) -> dict[str, Stats]:
    for call in cases.values():
        for _ in range(20):
            await call()  # warm caches, lazy imports, connections
    samples: dict[str, list[float]] = {label: [] for label in cases}
    enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(repeats):
            for label, call in cases.items():
                start = time.perf_counter()
                for _ in range(number):
                    await call()
                samples[label].append((time.perf_counter() - start) / number * 1e6)
    finally:
        if enabled:
            gc.enable()
    return {label: stats_of(values) for label, values in samples.items()}


async def _bare(stack: Any, server: Any, mode: str) -> Call:
    from mcp import Client

    client = await stack.enter_async_context(Client(server, cache=None, mode=mode))

    def call() -> Awaitable[object]:
        return client.call_tool("forecast", ARGUMENTS)

    return call


async def _weakprompt(stack: Any, server: Any, mode: str) -> Call:
    toolset = await stack.enter_async_context(
        McpToolset(McpServer.in_memory(server, mode=mode))  # type: ignore[arg-type]
    )
    dispatcher = ToolDispatcher(toolset.current_tools(), session=Session())

    async def call() -> object:
        execution = await dispatcher.execute_async(
            ToolCall(id="c1", name="forecast", arguments=ARGUMENTS_TEXT)
        )
        assert execution.success, execution.message
        return execution

    return call


async def _openai_agents(stack: Any, server: Any) -> Call:
    import agents
    from agents import Agent
    from agents.mcp import MCPUtil
    from agents.mcp.server import _MCPServerWithClientSession  # pyright: ignore[reportPrivateUsage]
    from agents.run_context import RunContextWrapper
    from agents.tool_context import ToolContext as AgentsToolContext
    from mcp.client._memory import InMemoryTransport  # pyright: ignore[reportPrivateUsage]

    agents.set_tracing_disabled(True)

    class InProcess(_MCPServerWithClientSession):  # pyright: ignore[reportUnknownBaseType]
        def create_streams(self) -> Any:
            return InMemoryTransport(server)

        @property
        def name(self) -> str:
            return "bench"

    peer = InProcess(cache_tools_list=True, client_session_timeout_seconds=30)
    await stack.enter_async_context(peer)
    run_context: Any = RunContextWrapper(context=None)
    tools = await MCPUtil.get_function_tools(peer, False, run_context, Agent(name="bench"))
    [tool] = [t for t in tools if t.name == "forecast"]
    context: Any = AgentsToolContext(
        context=None, tool_name="forecast", tool_call_id="c1", tool_arguments=ARGUMENTS_TEXT
    )

    def call() -> Awaitable[object]:
        return tool.on_invoke_tool(context, ARGUMENTS_TEXT)

    return call


async def _pydantic_ai(stack: Any, server: Any) -> Call:
    from pydantic_ai.mcp import MCPToolset

    toolset: Any = MCPToolset(server)
    await stack.enter_async_context(toolset)
    from pydantic_ai.models.test import TestModel
    from pydantic_ai.tools import RunContext
    from pydantic_ai.usage import RunUsage

    ctx: Any = RunContext(deps=None, model=TestModel(), usage=RunUsage())
    tools = await toolset.get_tools(ctx)
    tool = tools["forecast"]

    def call() -> Awaitable[object]:
        return toolset.call_tool("forecast", dict(ARGUMENTS), ctx, tool)

    return call


async def measure_all(quick: bool) -> tuple[dict[str, Stats], dict[str, str]]:
    from contextlib import AsyncExitStack

    number, repeats = (50, 3) if quick else (300, 9)
    peers: dict[str, str] = {}
    async with AsyncExitStack() as stack:
        cases: dict[str, Call] = {
            "bare SDK (direct)": await _bare(stack, make_server(), "auto"),
            "weakprompt (direct)": await _weakprompt(stack, make_server(), "auto"),
            "bare SDK (memory streams)": await _bare(stack, make_server(), "legacy"),
            "weakprompt (memory streams)": await _weakprompt(stack, make_server(), "legacy"),
        }
        for label, build, dist in (
            ("openai-agents (memory streams)", _openai_agents, "openai-agents"),
            ("pydantic-ai (fastmcp in-process)", _pydantic_ai, "pydantic-ai-slim"),
        ):
            try:
                cases[label] = await build(stack, make_server())
                await cases[label]()
                peers[label] = metadata.version(dist)
            except Exception as exc:  # a missing or failing peer is reported, not dropped
                cases.pop(label, None)
                peers[label] = f"failed: {type(exc).__name__}: {str(exc)[:200]}"
        return await timed(cases, number=number, repeats=repeats), peers


def main(quick: bool = False) -> dict[str, Any]:
    stats, peers = asyncio.run(measure_all(quick))
    rows: list[dict[str, Any]] = []
    for label, value in stats.items():
        floor = stats[
            "bare SDK (memory streams)" if "memory" in label or "fastmcp" in label else "bare SDK (direct)"
        ]
        rows.append(value.as_row(label, x_bare_sdk_same_transport=round(value.ratio_to(floor), 2)))
    ours = stats["weakprompt (direct)"]
    ours_streams = stats["weakprompt (memory streams)"]
    direct_ratio = ours.ratio_to(stats["bare SDK (direct)"])
    streams_ratio = ours_streams.ratio_to(stats["bare SDK (memory streams)"])
    goals: list[dict[str, Any]] = [
        {
            "goal": "weakprompt MCP call within 1.5x of the bare SDK call (direct in-process)",
            "met": direct_ratio <= 1.5,
            "value": f"{direct_ratio:.2f}x",
        },
        {
            "goal": "weakprompt MCP call within 1.5x of the bare SDK call (memory streams)",
            "met": streams_ratio <= 1.5,
            "value": f"{streams_ratio:.2f}x",
        },
    ]
    for label in ("openai-agents (memory streams)", "pydantic-ai (fastmcp in-process)"):
        theirs = stats.get(label)
        if theirs is None:
            goals.append({"goal": f"faster than {label}", "met": False, "value": peers[label]})
            continue
        # as users get each: weakprompt's default in-process path, the peer's own
        speedup = theirs.median_us / ours.median_us
        goals.append({"goal": f"faster than {label}", "met": speedup > 1, "value": f"{speedup:.2f}x faster"})
        # and on the same transport as the peer (memory streams)
        same = theirs.median_us / ours_streams.median_us
        goals.append(
            {
                "goal": f"faster than {label}, both on memory streams",
                "met": same > 1,
                "value": f"{same:.2f}x faster",
            }
        )
    notes = [
        "x_bare_sdk_same_transport divides each case by the bare SDK call on the same transport "
        "(peers: the memory streams).",
        "weakprompt's extra work per call: decode the arguments once, validate them with the server's "
        "JSON Schema (compiled once per tool), snapshot the session, convert the result, one ToolInvoked.",
    ]
    return {
        "title": "MCP tool call: weakprompt vs the bare SDK, openai-agents and pydantic-ai",
        "rows": rows,
        "goals": goals,
        "peers": peers,
        "notes": notes,
    }


if __name__ == "__main__":
    run_cli(main, name="mcp", description=__doc__, show_notes=True, quick_help="few repeats")
