"""Serving a prompt's tools over MCP: the SDK's client and weakprompt's own, in process, stdio and HTTP."""

from __future__ import annotations

import asyncio
import json
import socket
import sys
from pathlib import Path

import anyio
import pytest

from mcp import Client
from weakprompt import run
from weakprompt.adapters.testing import ScriptedAdapter, tool_call, tool_call_turn
from weakprompt.events import ToolInvoked
from weakprompt.mcp import McpServer, McpToolset, PromptServer
from weakprompt.prompt import MarkdownSection, Prompt, PromptTemplate, Visibility
from weakprompt.session import Session
from weakprompt.store import Store
from weakprompt.transcript import Transcript

pytestmark = pytest.mark.timeout(120)

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples"))

import mcp_served_tools as example  # noqa: E402

Note = example.Note


def test_the_sdk_client_lists_strict_schemas_and_calls_through_the_dispatcher() -> None:
    server = PromptServer(example.prompt)
    invoked: list[ToolInvoked] = []

    def session() -> Session:
        made = Session()
        made.bus.subscribe(ToolInvoked, invoked.append)
        return made

    server.session_factory = session

    async def main() -> None:
        async with Client(server.sdk_server, cache=None, mode="legacy") as client:
            listed = {t.name: t for t in (await client.list_tools()).tools}
            assert set(listed) == {"add_note", "list_notes", "add_note_then_fail"}
            assert listed["add_note"].input_schema["additionalProperties"] is False
            first = await client.call_tool("add_note", {"text": "milk"})
            assert not first.is_error and first.structured_content == {"notes": ["milk"]}
            failed = await client.call_tool("add_note_then_fail", {"text": "eggs"})
            assert failed.is_error
            assert "could not file 'eggs'" in failed.content[0].text  # type: ignore[union-attr]
            after = await client.call_tool("list_notes", {})
            assert after.structured_content == {"notes": ["milk"]}  # the failed call was rolled back
            wrong = await client.call_tool("add_note", {"txt": 1})
            assert wrong.is_error

    asyncio.run(main())
    assert [e.name for e in invoked] == ["add_note", "add_note_then_fail", "list_notes", "add_note"]


def test_each_connection_gets_its_own_session() -> None:
    server = PromptServer(example.prompt)

    async def main() -> None:
        async with (
            Client(server.sdk_server, cache=None, mode="legacy") as one,
            Client(server.sdk_server, cache=None, mode="legacy") as two,
        ):
            await one.call_tool("add_note", {"text": "from one"})
            await two.call_tool("add_note", {"text": "from two"})
            mine = await one.call_tool("list_notes", {})
            theirs = await two.call_tool("list_notes", {})
            assert mine.structured_content == {"notes": ["from one"]}
            assert theirs.structured_content == {"notes": ["from two"]}

    asyncio.run(main())


def test_sessionless_requests_each_get_a_fresh_session() -> None:
    server = PromptServer(example.prompt)

    async def main() -> None:
        async with Client(server.sdk_server, cache=None) as client:  # 2026-07-28: no sessions
            assert client.protocol_version == "2026-07-28"
            await client.call_tool("add_note", {"text": "milk"})
            listed = await client.call_tool("list_notes", {})
            assert listed.structured_content == {"notes": []}

    asyncio.run(main())


def test_calls_are_recorded_in_a_transcript_when_a_store_is_given() -> None:
    store = Store.open("sqlite://")
    server = PromptServer(example.prompt, store=store)

    async def main() -> str:
        async with Client(server.sdk_server, cache=None, mode="legacy") as client:
            await client.call_tool("add_note", {"text": "milk"})
            await client.call_tool("add_note_then_fail", {"text": "eggs"})
        [served] = list(server._sessions.values())  # pyright: ignore[reportPrivateUsage]
        return served.session.session_id

    session_id = asyncio.run(main())
    messages = Transcript(store, session_id).compile().messages
    tool_messages = [(m.name, m.is_error) for m in messages if m.role == "tool"]
    assert tool_messages == [("add_note", False), ("add_note_then_fail", True)]
    assert {t["name"] for t in Transcript(store, session_id).compile().tools} >= {"add_note"}


def test_weakprompts_own_client_mounts_a_served_prompt() -> None:
    served = PromptServer(example.prompt)

    async def main() -> list[tuple[str, bool]]:
        async with McpToolset(McpServer.in_memory(served.sdk_server), prefix="remote_") as toolset:
            adapter = ScriptedAdapter(
                [
                    tool_call_turn(
                        tool_call("remote_add_note", {"text": "a"}, id="c1"),
                        tool_call("remote_add_note_then_fail", {"text": "b"}, id="c2"),
                    ),
                    "done",
                ]
            )
            prompt = Prompt(
                PromptTemplate(ns="t", key="remote", sections=[toolset.section("Remote", "remote")])
            )
            await run(prompt, adapter=adapter, session=Session())
            return [(m.content, m.is_error) for m in adapter.requests[1].context.messages if m.role == "tool"]

    (added, failed), (broken, broken_failed) = asyncio.run(main())
    assert not failed and json.loads(added) == {"notes": ["a"]}
    assert broken_failed and "could not file 'b'" in broken


def test_summarized_sections_are_served_open_and_open_sections_is_not() -> None:
    hidden = MarkdownSection(
        title="More",
        key="more",
        template="More tools.",
        summary="More tools inside.",
        visibility=Visibility.SUMMARY,
        tools=[example.list_notes],
    )
    prompt = Prompt(PromptTemplate(ns="t", key="s", sections=[hidden]))
    assert [t.name for t in PromptServer(prompt).describe()] == ["list_notes"]


def _served_command() -> list[str]:
    # the CLI from this checkout's sources (the installed console script may be another checkout's)
    entry = "from weakprompt.cli import main; main()"
    return [
        sys.executable,
        "-c",
        entry,
        "mcp",
        "serve",
        f"{ROOT / 'examples' / 'mcp_served_tools.py'}:prompt",
    ]


def test_serve_over_stdio_with_the_cli_and_weakprompts_client() -> None:
    command, *args = _served_command()

    async def main() -> None:
        env = {"PYTHONPATH": str(ROOT / "src")}
        async with McpToolset(McpServer.stdio(command, *args, env=env, name="notes")) as toolset:
            names = [t.name for t in toolset.current_tools()]
            assert names == ["add_note", "list_notes", "add_note_then_fail"]
            adapter = ScriptedAdapter([tool_call_turn(tool_call("add_note", {"text": "x"}, id="c1")), "done"])
            prompt = Prompt(PromptTemplate(ns="t", key="r", sections=[toolset.section("Notes", "n")]))
            await run(prompt, adapter=adapter, session=Session())
            [tool_message] = [m for m in adapter.requests[1].context.messages if m.role == "tool"]
            assert json.loads(tool_message.content) == {"notes": ["x"]}

    asyncio.run(main())


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_serve_over_streamable_http() -> None:
    server = PromptServer(example.prompt)
    port = _free_port()

    async def main() -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(lambda: server.serve_http(port=port))
            url = f"http://127.0.0.1:{port}/mcp"
            for _ in range(100):
                try:
                    with socket.create_connection(("127.0.0.1", port), timeout=0.1):
                        break
                except OSError:
                    await anyio.sleep(0.05)
            async with McpToolset(McpServer.http(url)) as toolset:
                assert [t.name for t in toolset.current_tools()] == [
                    "add_note",
                    "list_notes",
                    "add_note_then_fail",
                ]
            async with Client(url, cache=None) as client:
                result = await client.call_tool("add_note_then_fail", {"text": "z"})
                assert result.is_error
                again = await client.call_tool("add_note", {"text": "y"})
                assert not again.is_error  # the server keeps serving after a failed call
            # handshake-era HTTP sessions: one weakprompt session each, kept across requests
            async with (
                Client(url, cache=None, mode="legacy") as one,
                Client(url, cache=None, mode="legacy") as two,
            ):
                await one.call_tool("add_note", {"text": "one"})
                await two.call_tool("add_note", {"text": "two"})
                assert (await one.call_tool("list_notes", {})).structured_content == {"notes": ["one"]}
                assert (await two.call_tool("list_notes", {})).structured_content == {"notes": ["two"]}
            group.cancel_scope.cancel()

    asyncio.run(main())
