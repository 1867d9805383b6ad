"""Mount a real MCP server (``mcp-server-time``) into a section and run it on the local model.

Run: ``.venv/bin/python examples/mcp_time_agent.py`` (or ``--scripted`` for a scripted model).

The ``Clock`` section owns the server's tools: the server is started over
stdio when the toolset is entered and stopped when it is left, its tools are
offered with the server's own schemas (prefixed ``time_``), and only its
read-only tools are mounted. Each call goes through weakprompt's dispatcher:
its arguments are checked against the server's schema, it is published as one
``ToolInvoked``, and a failure comes back as a failed result the model reads.
The local model (SmolLM2-135M through llama.cpp) is small, so its first turn is
forced to call ``time_get_current_time``.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
from pathlib import Path

from weakprompt import Agent, MarkdownSection, Prompt, PromptTemplate
from weakprompt.adapters.testing import ScriptedAdapter, tool_call, tool_call_turn
from weakprompt.mcp import McpServer, McpToolset, ToolFilter
from weakprompt.model import ProviderAdapter
from weakprompt.runtime import ForceTool, ToolChoice


def time_server() -> McpServer:
    """``mcp-server-time`` from this interpreter's environment."""
    local = Path(sys.executable).with_name("mcp-server-time")
    command = str(local) if local.exists() else shutil.which("mcp-server-time")
    if command is None:
        return McpServer.stdio(sys.executable, "-m", "mcp_server_time", name="time")
    return McpServer.stdio(command, name="time")


def build_prompt(toolset: McpToolset) -> Prompt[None]:
    return Prompt(
        PromptTemplate(
            ns="examples",
            key="mcp-time",
            sections=[
                MarkdownSection(
                    title="Role",
                    key="role",
                    template="You answer questions about the time. Use the clock tools; never guess.",
                ),
                toolset.section(
                    "Clock",
                    "clock",
                    "time_get_current_time gives the current time in an IANA time zone, e.g. Europe/Lisbon.",
                ),
            ],
        )
    )


async def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--scripted", action="store_true", help="use a scripted adapter instead of the model")
    args = parser.parse_args(argv)

    adapter: ProviderAdapter
    choice: ToolChoice
    if args.scripted:
        call = tool_call("time_get_current_time", {"timezone": "Europe/Lisbon"}, id="call_1")
        adapter, choice = ScriptedAdapter([tool_call_turn(call), "It is the time shown above."]), "auto"
    else:
        from weakprompt import LocalAdapter

        adapter, choice = LocalAdapter(max_tokens=120), ForceTool("time_get_current_time")

    toolset = McpToolset(time_server(), prefix="time_", filter=ToolFilter(read_only=True))
    async with toolset:
        prompt = build_prompt(toolset)
        print("tools:", ", ".join(prompt.render().tool_names))
        agent = Agent(adapter, template=prompt, tool_choice=choice, max_turns=3)
        response = await agent.run("What time is it in Lisbon?")
    for execution in response.tool_executions:
        outcome = "ok" if execution.success else "FAILED"
        print(f"[{outcome}] {execution.event.name} {execution.event.arguments}")
        print(f"    {execution.message}")
    print(f"final answer: {response.text!r}")
    return 0 if response.tool_executions else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
