"""Properties of a mount over any tool names a server may send: safe, unique names that route back."""

from __future__ import annotations

import asyncio
from typing import Any

import mcp.types as mcp_types
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp.server import Server

from weakprompt.mcp import McpServer, McpToolset, ToolFilter
from weakprompt.messages import ToolCall
from weakprompt.runtime import ToolDispatcher
from weakprompt.session import Session
from weakprompt.tools.definition import NAME_PATTERN

pytestmark = pytest.mark.timeout(300)

_NAMES = st.text(
    st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1, max_size=80
).filter(lambda name: name.strip() == name and name != "")


def _server(names: list[str]) -> Server[Any]:
    async def list_tools(_ctx: Any, _params: Any) -> mcp_types.ListToolsResult:
        return mcp_types.ListToolsResult(
            tools=[
                mcp_types.Tool(name=name, description="d", input_schema={"type": "object"}) for name in names
            ]
        )

    async def call_tool(_ctx: Any, params: mcp_types.CallToolRequestParams) -> mcp_types.CallToolResult:
        return mcp_types.CallToolResult(content=[mcp_types.TextContent(type="text", text=params.name)])

    return Server("names", on_list_tools=list_tools, on_call_tool=call_tool)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_NAMES, min_size=1, max_size=6, unique=True), st.data())
def test_any_names_are_offered_safely_and_each_call_reaches_its_own_tool(
    names: list[str], data: st.DataObject
) -> None:
    kept = data.draw(st.lists(st.sampled_from(names), unique=True), label="include")
    prefix = data.draw(st.sampled_from(["", "p_", "Srv."]), label="prefix")

    async def main() -> dict[str, str]:
        toolset = McpToolset(
            McpServer.in_memory(_server(names)), prefix=prefix, filter=ToolFilter(include=kept)
        )
        async with toolset:
            tools = toolset.current_tools()
            dispatcher = ToolDispatcher(tools, session=Session())
            reached: dict[str, str] = {}
            for tool in tools:
                execution = await dispatcher.execute_async(ToolCall(id="c", name=tool.name, arguments="{}"))
                assert execution.success, execution.message
                reached[tool.info.name] = execution.message
            return reached

    reached = asyncio.run(main())
    assert set(reached) == set(kept)
    assert all(server_name == text for server_name, text in reached.items())  # each call reached its own tool


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_NAMES, min_size=1, max_size=6, unique=True))
def test_offered_names_are_provider_safe_and_unique(names: list[str]) -> None:
    async def main() -> list[str]:
        async with McpToolset(McpServer.in_memory(_server(names))) as toolset:
            return [tool.name for tool in toolset.current_tools()]

    offered = asyncio.run(main())
    assert len(offered) == len(names) == len(set(offered))
    assert all(NAME_PATTERN.fullmatch(name) for name in offered)
