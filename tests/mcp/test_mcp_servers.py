"""Real MCP servers no one here wrote, over stdio: mcp-server-time (PyPI) and server-everything (npm)."""

from __future__ import annotations

import asyncio
import json
import os
import signal

import pytest

from mcp_support import child_pids, everything_command, time_command
from weakprompt import run
from weakprompt.adapters.testing import ScriptedAdapter, tool_call, tool_call_turn
from weakprompt.mcp import McpConnectionError, McpServer, McpToolset, Reconnect, ToolFilter
from weakprompt.messages import ToolCall
from weakprompt.prompt import Prompt, PromptTemplate
from weakprompt.session import Session

pytestmark = pytest.mark.timeout(120)


def _prompt(*toolsets: McpToolset) -> Prompt[None]:
    sections = [toolset.section(title=toolset.server.name, key=f"s{i}") for i, toolset in enumerate(toolsets)]
    return Prompt(PromptTemplate(ns="tests", key="real", sections=sections))


async def _results(toolset: McpToolset, *calls: ToolCall) -> list[tuple[str, bool]]:
    adapter = ScriptedAdapter([tool_call_turn(*calls), "done"])
    await run(_prompt(toolset), adapter=adapter, session=Session())
    return [(m.content, m.is_error) for m in adapter.requests[1].context.messages if m.role == "tool"]


def _everything(**options: object) -> McpToolset:
    server = McpServer.stdio(everything_command(), "stdio", name="everything")
    return McpToolset(server, **options)  # type: ignore[arg-type]


def test_mcp_server_time_over_stdio() -> None:
    toolset = McpToolset(McpServer.stdio(time_command(), name="time"), prefix="time_")

    async def main() -> list[tuple[str, bool]]:
        async with toolset:
            assert {t.name for t in toolset.current_tools()} == {"time_get_current_time", "time_convert_time"}
            return await _results(
                toolset,
                tool_call("time_get_current_time", {"timezone": "Europe/Oslo"}, id="c1"),
                tool_call("time_get_current_time", {"timezone": "Nowhere/Atlantis"}, id="c2"),
            )

    before = child_pids()
    (found, failed), (bad, bad_failed) = asyncio.run(main())
    assert not failed and json.loads(found)["timezone"] == "Europe/Oslo"
    assert bad_failed and "Nowhere/Atlantis" in bad
    assert child_pids() <= before  # the server process is gone


def test_server_everything_tools_structured_content_and_errors() -> None:
    async def main() -> list[tuple[str, bool]]:
        async with _everything() as toolset:
            names = {t.name for t in toolset.current_tools()}
            assert {"echo", "get-sum", "get-structured-content", "get-tiny-image"} <= names
            assert toolset.problems == ()
            return await _results(
                toolset,
                tool_call("echo", {"message": "hello"}, id="c1"),
                tool_call("get-structured-content", {"location": "Chicago"}, id="c2"),
                tool_call("get-sum", {"a": 2, "b": "x"}, id="c3"),
                tool_call("gzip-file-as-resource", {"name": "a.gz", "data": "not a url"}, id="c4"),
                tool_call("get-tiny-image", {}, id="c5"),
            )

    echo, structured, bad_sum, server_error, image = asyncio.run(main())
    assert echo == ("Echo: hello", False)
    assert not structured[1] and set(json.loads(structured[0])) == {"temperature", "conditions", "humidity"}
    assert bad_sum[1] and "$.b" in bad_sum[0]  # refused by the schema before the server saw it
    assert server_error[1] and "Invalid URL" in server_error[0]  # the server's isError
    assert not image[1] and "[image image/png" in image[0]


def test_server_everything_read_only_filter() -> None:
    async def main() -> set[str]:
        async with _everything(filter=ToolFilter(read_only=True)) as toolset:
            return {t.info.name for t in toolset.current_tools()}

    names = asyncio.run(main())
    assert "echo" in names
    assert "toggle-simulated-logging" not in names  # hinted not read-only


def test_server_everything_resources_and_prompts() -> None:
    async def main() -> None:
        async with _everything() as toolset:
            resources = await toolset.list_resources()
            uri = next(r.uri for r in resources if r.uri.endswith("architecture.md"))
            section = await toolset.resource_section("Architecture", "arch", [uri])
            text = Prompt(PromptTemplate(ns="t", key="r", sections=[section])).render().text
            assert "Architecture" in text and "Everything Server" in text
            prompts = await toolset.list_prompts()
            args = next(p for p in prompts if p.name == "args-prompt")
            assert args.arguments == ("city", "state") and args.required == ("city",)

    asyncio.run(main())


def test_killing_the_server_mid_call_fails_that_call_and_the_next_one_reconnects() -> None:
    before = child_pids()

    async def main() -> tuple[tuple[str, bool], list[tuple[str, bool]]]:
        async with _everything(reconnect=Reconnect(max_restarts=2, delay=0.05)) as toolset:
            started = child_pids() - before
            assert started

            async def kill_soon() -> None:
                await asyncio.sleep(1.0)
                for pid in started:
                    os.kill(pid, signal.SIGKILL)

            killer = asyncio.ensure_future(kill_soon())
            [lost] = await _results(
                toolset, tool_call("trigger-long-running-operation", {"duration": 30, "steps": 3}, id="c1")
            )
            await killer
            after = await _results(toolset, tool_call("echo", {"message": "again"}, id="c2"))
            if after[0][1]:  # the restart raced the end of the kill on a loaded machine: one more try
                after += await _results(toolset, tool_call("echo", {"message": "again"}, id="c3"))
            return lost, after

    lost, after = asyncio.run(main())
    assert lost[1] and "stopped during the call" in lost[0]
    # the next call reconnects, or fails clearly and the one after it reconnects
    assert after[-1] == ("Echo: again", False)
    assert all("stopped" in text or "restart" in text for text, failed in after[:-1] if failed)
    assert child_pids() <= before  # no orphan server process


def test_a_server_that_keeps_dying_is_given_up_on_clearly() -> None:
    before = child_pids()

    async def main() -> list[tuple[str, bool]]:
        async with _everything(reconnect=Reconnect(max_restarts=0)) as toolset:
            for pid in child_pids() - before:  # only the server this test started
                os.kill(pid, signal.SIGKILL)
            first = await _results(toolset, tool_call("echo", {"message": "a"}, id="c1"))
            second = await _results(toolset, tool_call("echo", {"message": "b"}, id="c2"))
            return first + second

    (_first, failed), (second, failed_again) = asyncio.run(main())
    assert failed and failed_again
    assert "unavailable" in second or "stopped" in second


def test_a_command_that_is_not_a_server_fails_to_connect_clearly() -> None:
    async def main() -> None:
        async with McpToolset(McpServer.stdio("false"), connect_timeout=10):
            pass

    before = child_pids()
    with pytest.raises(McpConnectionError, match="could not connect to the MCP server 'false'"):
        asyncio.run(main())
    assert child_pids() <= before


def test_cancelling_the_owner_closes_the_server() -> None:
    before = child_pids()

    async def main() -> None:
        entered = asyncio.Event()

        async def hold() -> None:
            async with _everything():
                entered.set()
                await asyncio.sleep(60)

        task = asyncio.ensure_future(hold())
        await entered.wait()
        assert child_pids() - before
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert child_pids() <= before


def test_an_error_inside_the_block_closes_the_server() -> None:
    before = child_pids()

    async def main() -> None:
        async with _everything():
            assert child_pids() - before
            raise RuntimeError("the agent failed")

    with pytest.raises(RuntimeError, match="the agent failed"):
        asyncio.run(main())
    assert child_pids() <= before
