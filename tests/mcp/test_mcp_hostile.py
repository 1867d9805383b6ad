"""Mounted servers that misbehave: list_changed floods, huge or cyclic catalogues, stuck or huge replies."""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import time
from pathlib import Path
from typing import Any

import anyio
import mcp.types as mcp_types
import pytest
from hypothesis import given
from hypothesis import strategies as st
from mcp.server import Server
from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel

from mcp_support import mounted_prompt, node_server_command, raw_server, stdio_server
from weakprompt import run
from weakprompt.adapters.testing import ScriptedAdapter, tool_call, tool_call_turn
from weakprompt.errors import ConfigurationError
from weakprompt.mcp import McpLimits, McpServer, McpToolset
from weakprompt.mcp._stdio import LineSplitter, Oversized, _id_of  # pyright: ignore[reportPrivateUsage]
from weakprompt.mcp._tool import SchemaProblem, check_refs, compile_schema
from weakprompt.messages import ToolCall
from weakprompt.serde import SerdeError
from weakprompt.session import Session

pytestmark = pytest.mark.timeout(120)


def _tool_messages(adapter: ScriptedAdapter, request: int = 1) -> list[tuple[str, bool]]:
    return [(m.content, m.is_error) for m in adapter.requests[request].context.messages if m.role == "tool"]


async def _run(toolset: McpToolset, *calls: ToolCall) -> ScriptedAdapter:
    adapter = ScriptedAdapter([tool_call_turn(*calls), "done"])
    await run(mounted_prompt(toolset), adapter=adapter, session=Session())
    return adapter


def _catalogue_server(tools: list[mcp_types.Tool]) -> Server[Any]:
    async def list_tools(_ctx: Any, _params: Any) -> mcp_types.ListToolsResult:
        return mcp_types.ListToolsResult(tools=tools)

    async def call_tool(_ctx: Any, params: mcp_types.CallToolRequestParams) -> mcp_types.CallToolResult:
        return mcp_types.CallToolResult(
            content=[mcp_types.TextContent(type="text", text=f"called {params.name}")]
        )

    return Server("catalogue", on_list_tools=list_tools, on_call_tool=call_tool)


def _tool(name: str, schema: dict[str, Any], description: str = "A tool.") -> mcp_types.Tool:
    return mcp_types.Tool(name=name, description=description, input_schema=schema)


# -- 10b: list_changed floods -------------------------------------------------------------------


class _CountingServer(MCPServer):
    """Counts the listings it answers and how many ran at once."""

    listings = 0
    running = 0
    most = 0

    async def list_tools(self) -> list[mcp_types.Tool]:
        self.listings += 1
        self.running += 1
        self.most = max(self.most, self.running)
        try:
            await anyio.sleep(0.01)
            return await super().list_tools()
        finally:
            self.running -= 1


def test_a_flood_of_list_changed_runs_one_listing_at_a_time_coalesced() -> None:
    server = _CountingServer("flood")

    @server.tool()
    async def flood(ctx: Context) -> str:
        """Says the tool list changed 2,000 times."""
        for _ in range(2000):
            await ctx.notify_tools_changed()
        return "flooded"

    async def main() -> None:
        async with McpToolset(McpServer.in_memory(server)) as toolset:
            before = server.listings
            adapter = await _run(toolset, tool_call("flood", {}, id="c1"))
            assert _tool_messages(adapter) == [('{"result":"flooded"}', False)]
            await toolset._tools_settled(10)  # pyright: ignore[reportPrivateUsage]
            listings = server.listings - before
            assert server.most == 1  # never two listings at once (the old code ran hundreds together)
            assert 1 <= listings <= 1000  # coalesced: the old code listed 2,001 times
            assert [t.name for t in toolset.current_tools()] == ["flood"]

    asyncio.run(main())


# -- 10c: hostile catalogues ---------------------------------------------------------------------


def test_a_server_listing_ten_thousand_tools_is_offered_only_the_limit() -> None:
    tools = [_tool(f"t{i}", {"type": "object"}) for i in range(10_000)]

    async def main() -> None:
        async with McpToolset(McpServer.in_memory(_catalogue_server(tools))) as toolset:
            assert len(toolset.current_tools()) == McpLimits().max_tools == 256
            [problem] = toolset.problems
            assert "9744 more tool(s) are not offered" in problem and "limit of 256" in problem
        limits = McpLimits(max_tools=3)
        async with McpToolset(McpServer.in_memory(_catalogue_server(tools)), limits=limits) as toolset:
            assert [t.name for t in toolset.current_tools()] == ["t0", "t1", "t2"]

    asyncio.run(main())


def test_a_megabyte_schema_or_description_leaves_that_tool_out_naming_it() -> None:
    huge = {
        "type": "object",
        "properties": {f"p{i}": {"type": "string", "description": "x" * 100} for i in range(10_000)},
    }
    tools = [
        _tool("huge_schema", huge),
        _tool("huge_description", {"type": "object"}, description="d" * 1_000_000),
        _tool("fine", {"type": "object", "properties": {"a": {"type": "string"}}}),
    ]

    async def main() -> None:
        async with McpToolset(McpServer.in_memory(_catalogue_server(tools))) as toolset:
            assert [t.name for t in toolset.current_tools()] == ["fine"]
            schema_problem, description_problem = toolset.problems
            assert "'huge_schema'" in schema_problem and "input schema is" in schema_problem
            assert "over the limit of 65536" in schema_problem
            assert "'huge_description'" in description_problem and "limit of 8192" in description_problem
            adapter = await _run(toolset, tool_call("fine", {"a": "x"}, id="c1"))
            assert _tool_messages(adapter) == [("called fine", False)]

    asyncio.run(main())


def test_a_ref_cycle_or_a_remote_ref_is_refused_at_mount_naming_the_tool() -> None:
    cyclic = {
        "type": "object",
        "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}},
        "properties": {"x": {"$ref": "#/$defs/a"}},
    }
    remote = {"type": "object", "properties": {"x": {"$ref": "https://example.invalid/schema.json"}}}
    tools = [_tool("cyclic", cyclic), _tool("remote", remote), _tool("fine", {"type": "object"})]

    async def main() -> None:
        async with McpToolset(McpServer.in_memory(_catalogue_server(tools))) as toolset:
            assert [t.name for t in toolset.current_tools()] == ["fine"]
            cycle, far = toolset.problems
            assert "'cyclic'" in cycle and "$ref cycle" in cycle
            assert "'remote'" in far and "remote $ref" in far and "#/properties/x" in far

    asyncio.run(main())


@pytest.mark.parametrize(
    ("schema", "problem"),
    [
        ({"$ref": "#"}, "$ref cycle through #"),
        (
            {
                "properties": {"n": {"$ref": "#/$defs/node"}},
                "$defs": {"node": {"items": {"$ref": "#/$defs/node"}}},
            },
            "cycle",
        ),
        ({"properties": {"n": {"$ref": "#/$defs/missing"}}}, "names no place"),
        ({"properties": {"n": {"$ref": "#nowhere"}}}, "names no place"),
        ({"properties": {"n": {"$ref": 5}}}, "remote $ref"),
        ({"properties": {"n": {"$dynamicRef": "other.json#x"}}}, "remote $dynamicRef"),
    ],
)
def test_unsafe_refs_are_named(schema: dict[str, Any], problem: str) -> None:
    with pytest.raises(SchemaProblem, match=problem.replace("$", r"\$")):
        check_refs(schema)


def test_safe_refs_pass() -> None:
    check_refs(
        {
            "$defs": {"s": {"type": "string"}},
            "properties": {"a": {"$ref": "#/$defs/s"}, "b": {"$ref": "#/$defs/s"}},
        }
    )
    check_refs({"$defs": {"s": {"$anchor": "str", "type": "string"}}, "properties": {"a": {"$ref": "#str"}}})
    check_refs(
        {
            "$defs": {"l": {"prefixItems": [{"type": "string"}]}},
            "properties": {
                "a": {"$ref": "#/$defs/l/prefixItems/0"},
                "b/c": {"type": "string"},
                "d": {"$ref": "#/properties/b~1c"},
            },
        }
    )
    check_refs({"type": "object"})
    shared = {"$defs": {"a": {"$ref": "#/$defs/c"}, "b": {"$ref": "#/$defs/c"}, "c": {"type": "string"}}}
    check_refs({**shared, "properties": {"x": {"$ref": "#/$defs/a"}, "y": {"$ref": "#/$defs/b"}}})


def test_media_placeholders_leave_other_objects_alone() -> None:
    from weakprompt.mcp._results import tool_result

    structured = {
        "items": [
            {"type": "image", "data": "AAAA"},
            {"type": "resource", "resource": {"uri": "x://t", "text": "plain"}},
            {"type": "resource", "resource": {"uri": "x://b", "blob": "AAA="}},
        ]
    }
    result = tool_result("t", mcp_types.CallToolResult(content=[], structured_content=structured))
    assert json.loads(result.message) == {
        "items": [
            "[image ?, 3 bytes]",
            {"type": "resource", "resource": {"uri": "x://t", "text": "plain"}},
            "[resource x://b, 2 bytes]",
        ]
    }
    assert result.value == structured  # the server's object stays for events and reducers


def test_a_stdio_server_without_a_reply_limit_uses_the_sdks_transport() -> None:
    from mcp.client.client import Client

    assert isinstance(McpServer.stdio("some-server").client(), Client)


def test_a_deeply_nested_schema_is_a_problem_not_a_crash() -> None:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(5000):
        schema = {"type": "object", "properties": {"a": schema}}
    check_refs(schema)  # walked without recursion
    with pytest.raises(SchemaProblem, match="nested too deeply"):
        compile_schema(schema)


def test_limits_must_be_positive() -> None:
    with pytest.raises(ConfigurationError, match="max_tools must be at least 1"):
        McpLimits(max_tools=0)


# -- 10e: paths in arrays -------------------------------------------------------------------------


class Entity(BaseModel):
    name: str
    entityType: str


def test_an_invalid_array_item_is_named_with_an_index_not_a_key() -> None:
    server = MCPServer("graph")

    @server.tool()
    def create_entities(entities: list[Entity]) -> str:
        """Stores entities."""
        return f"{len(entities)} stored"

    async def main() -> None:
        async with McpToolset(McpServer.in_memory(server)) as toolset:
            [tool] = toolset.current_tools()
            bad = {"entities": [{"name": "a", "entityType": "t"}, {"name": "b", "entityType": 7}]}
            with pytest.raises(SerdeError) as caught:
                tool.parse_arguments(bad)
            [issue] = caught.value.issues
            assert issue.path == "$.entities[1].entityType"
            adapter = await _run(toolset, tool_call("create_entities", bad, id="c1"))
            [(text, failed)] = _tool_messages(adapter)
            assert failed and "$.entities[1].entityType" in text and '["1"]' not in text

    asyncio.run(main())
    with pytest.raises(SchemaProblem, match=r"at \$\.allOf\[1\]\.type"):
        compile_schema({"type": "object", "allOf": [{}, {"type": 5}]})


# -- 10f: servers without prompts or resources ---------------------------------------------------


def test_list_prompts_and_resources_are_empty_on_a_server_without_them() -> None:
    server = _catalogue_server([_tool("only", {"type": "object"})])

    async def main() -> None:
        async with McpToolset(McpServer.in_memory(server)) as toolset:
            assert await toolset.list_prompts() == ()
            assert await toolset.list_resources() == ()
        async with McpToolset(McpServer.in_memory(server, mode="legacy")) as toolset:
            assert await toolset.list_prompts() == ()
            assert await toolset.list_resources() == ()

    asyncio.run(main())


# -- 10g: media in structured content --------------------------------------------------------------

_PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)


def test_an_image_from_server_filesystem_reaches_the_model_as_a_placeholder(tmp_path: Path) -> None:
    command = node_server_command("mcp-server-filesystem")
    (tmp_path / "dot.png").write_bytes(_PNG)
    (tmp_path / "blob.bin").write_bytes(b"\x00\x01\x02")

    async def main() -> None:
        server = McpServer.stdio(command, str(tmp_path), name="files")
        async with McpToolset(server) as toolset:
            adapter = await _run(
                toolset,
                tool_call("read_media_file", {"path": str(tmp_path / "dot.png")}, id="c1"),
                tool_call("read_media_file", {"path": str(tmp_path / "blob.bin")}, id="c2"),
            )
            (image, image_failed), (blob, blob_failed) = _tool_messages(adapter)
            assert not image_failed and not blob_failed
            assert json.loads(image) == {"content": [f"[image image/png, {len(_PNG)} bytes]"]}
            assert base64.b64encode(_PNG).decode()[:20] not in image
            [shown] = json.loads(blob)["content"]
            assert shown.startswith("[resource file://") and shown.endswith(
                "application/octet-stream, 3 bytes]"
            )

    asyncio.run(main())


# -- 10d: stuck servers and huge replies -----------------------------------------------------------


def test_a_call_abandoned_at_its_timeout_restarts_the_stuck_connection(tmp_path: Path) -> None:
    async def main() -> None:
        # the restart closes the stuck server's stdin, waits 2 s for it, then ends it: 6 s covers that
        async with McpToolset(stdio_server(tmp_path), call_timeout=6.0) as toolset:
            adapter = await _run(toolset, tool_call("stuck", {}, id="c1"))
            [(text, failed)] = _tool_messages(adapter)
            assert failed and "did not answer within 6 s" in text
            assert "is being restarted for the next call" in text
            adapter = await _run(toolset, tool_call("ping", {}, id="c2"))
            assert _tool_messages(adapter) == [
                ('{"result":"pong"}', False)
            ]  # the old code timed out here too

    asyncio.run(main())


def test_a_reply_over_the_limit_fails_that_call_clearly_and_the_connection_goes_on(tmp_path: Path) -> None:
    limits = McpLimits(max_reply_bytes=20_000)

    async def main() -> None:
        async with McpToolset(stdio_server(tmp_path), limits=limits) as toolset:
            for size in (30_000, 2_000_000):  # one read in a chunk, one spanning many
                adapter = await _run(toolset, tool_call("big", {"size": size}, id="c1"))
                [(text, failed)] = _tool_messages(adapter)
                assert failed and "was larger than the limit of 20000 bytes" in text
            adapter = await _run(toolset, tool_call("big", {"size": 10}, id="c2"))
            assert _tool_messages(adapter) == [
                (json.dumps({"result": "x" * 10}, separators=(",", ":")), False)
            ]

    asyncio.run(main())


def test_a_ten_megabyte_reply_under_the_limit_arrives_whole(tmp_path: Path) -> None:
    async def main() -> float:
        async with McpToolset(stdio_server(tmp_path)) as toolset:
            [tool] = [t for t in toolset.current_tools() if t.name == "big"]
            started = time.perf_counter()
            result = await toolset.call("big", tool.info, {"size": 10_000_000}, _context())
            elapsed = time.perf_counter() - started
            assert result.success and len(result.message) == len('{"result":""}') + 10_000_000
            return elapsed

    elapsed = asyncio.run(main())
    print(f"10 MB over stdio: {elapsed:.2f} s")  # measured, never asserted


def _context() -> Any:
    from weakprompt.tools import ToolContext

    return ToolContext(session=Session())


def test_the_id_of_an_over_limit_reply_is_found_before_or_after_its_result() -> None:
    assert _id_of(b'{"jsonrpc":"2.0","id":7,"result":{"content":[{"id":1', b"") == 7
    assert _id_of(b'{"result":{"content":[{"id":"inner"', b'x"}]},"jsonrpc":"2.0","id":"r-9"}') == "r-9"
    assert _id_of(b'{"jsonrpc":"2.0","method":"notifications/message","params":{', b"}}") is None
    assert _id_of(b'{"result":{', b"}}") is None
    assert _id_of(b'{"result":{', b'"id":[1]}') is None


# -- 10a: concurrent writes to a server that cannot take them ----------------------------------------


def _memory(tmp_path: Path) -> McpServer:
    command = node_server_command("mcp-server-memory")
    return McpServer.stdio(command, env={"MEMORY_FILE_PATH": str(tmp_path / "memory.jsonl")}, name="memory")


def test_concurrent_create_entities_in_one_turn_all_survive_on_server_memory(tmp_path: Path) -> None:
    count = 8
    calls = [
        tool_call(
            "create_entities",
            {"entities": [{"name": f"e{i}", "entityType": "thing", "observations": [f"note {i}"]}]},
            id=f"c{i}",
        )
        for i in range(count)
    ]

    async def main() -> None:
        async with McpToolset(_memory(tmp_path)) as toolset:
            adapter = await _run(toolset, *calls)
            assert all(not failed for _, failed in _tool_messages(adapter))
            adapter = await _run(toolset, tool_call("read_graph", {}, id="r1"))
            [(graph, failed)] = _tool_messages(adapter)
            assert not failed
            names = sorted(entity["name"] for entity in json.loads(graph)["entities"])
            assert names == sorted(f"e{i}" for i in range(count))  # the old code kept only the last

    asyncio.run(main())


def test_read_only_calls_still_overlap_and_all_overlaps_everything() -> None:
    server = MCPServer("overlap")
    running: list[int] = [0, 0]  # now, most

    async def enter() -> str:
        running[0] += 1
        running[1] = max(running[1], running[0])
        await anyio.sleep(0.05)
        running[0] -= 1
        return "done"

    @server.tool(annotations=mcp_types.ToolAnnotations(read_only_hint=True))
    async def look() -> str:
        """Reads."""
        return await enter()

    @server.tool()
    async def write() -> str:
        """Writes."""
        return await enter()

    async def most(concurrency: Any, name: str) -> int:
        running[1] = 0
        async with McpToolset(McpServer.in_memory(server), concurrency=concurrency) as toolset:
            await _run(toolset, *(tool_call(name, {}, id=f"c{i}") for i in range(4)))
        return running[1]

    async def main() -> None:
        assert await most("read_only", "look") == 4
        assert await most("read_only", "write") == 1
        assert await most("none", "look") == 1
        assert await most("all", "write") == 4

    asyncio.run(main())
    with pytest.raises(ConfigurationError, match="concurrency must be"):
        McpToolset(McpServer.in_memory(server), concurrency="some")  # type: ignore[arg-type]


def test_a_line_that_is_not_json_rpc_is_skipped_and_the_call_answers(tmp_path: Path) -> None:
    async def main() -> None:
        async with McpToolset(raw_server(tmp_path)) as toolset:
            adapter = await _run(toolset, tool_call("garbage", {}, id="c1"))
            assert _tool_messages(adapter) == [("garbage", False)]
            limits = McpLimits(max_reply_bytes=20_000)
        async with McpToolset(raw_server(tmp_path), limits=limits) as toolset:
            adapter = await _run(toolset, tool_call("late", {"size": 50_000}, id="c1"))
            [(text, failed)] = _tool_messages(adapter)  # its id is found after the result
            assert failed and "was larger than the limit of 20000 bytes" in text

    asyncio.run(main())


@pytest.mark.parametrize("size", [30_000, 2_000_000])
def test_an_over_limit_message_that_answers_nothing_ends_the_connection(tmp_path: Path, size: int) -> None:
    limits = McpLimits(max_reply_bytes=20_000)

    async def main() -> None:
        async with McpToolset(raw_server(tmp_path), limits=limits) as toolset:
            adapter = await _run(toolset, tool_call("shout", {"size": size}, id="c1"))
            [(text, failed)] = _tool_messages(adapter)
            assert failed and "stopped during the call to 'shout'" in text, text
            adapter = await _run(toolset, tool_call("garbage", {}, id="c2"))  # restarted by the policy
            assert _tool_messages(adapter) == [("garbage", False)]

    asyncio.run(main())


@given(
    messages=st.lists(st.binary(max_size=1200).map(lambda b: b.replace(b"\n", b"")), max_size=8),
    cuts=st.lists(st.integers(min_value=0, max_value=10_000), max_size=12),
    limit=st.integers(min_value=1, max_value=1000),
)
def test_the_line_splitter_gives_each_line_whatever_the_chunks(
    messages: list[bytes], cuts: list[int], limit: int
) -> None:
    stream = b"".join(message + b"\n" for message in messages)
    points = sorted({min(cut, len(stream)) for cut in cuts} | {0, len(stream)})
    splitter = LineSplitter(limit)
    out: list[bytes | Oversized] = []
    for begin, end in itertools.pairwise(points):
        out.extend(splitter.feed(stream[begin:end]))
    assert len(out) == len(messages)
    for message, line in zip(messages, out, strict=True):
        if len(message) <= limit:
            assert line == message
        else:
            assert line == Oversized(message[:512], message[-512:], len(message))


def test_writes_to_one_server_run_in_call_order() -> None:
    server = MCPServer("ordered")
    order: list[int] = []

    @server.tool()
    async def write(n: int) -> str:
        """Writes n after a pause that shrinks with n (overlapping calls would finish backwards)."""
        await anyio.sleep(0.01 * (5 - n))
        order.append(n)
        return "written"

    async def main() -> None:
        async with McpToolset(McpServer.in_memory(server)) as toolset:
            await _run(toolset, *(tool_call("write", {"n": n}, id=f"c{n}") for n in range(5)))

    asyncio.run(main())
    assert order == [0, 1, 2, 3, 4]


def test_a_call_made_while_the_stuck_server_restarts_waits_only_its_own_timeout(tmp_path: Path) -> None:
    async def main() -> None:
        # the stuck server takes 2 s to stop (its grace period): a 1 s call meanwhile gives up waiting
        async with McpToolset(stdio_server(tmp_path), call_timeout=1.0) as toolset:
            adapter = await _run(toolset, tool_call("stuck", {}, id="c1"))
            [(text, failed)] = _tool_messages(adapter)
            assert failed and "is being restarted" in text
            adapter = await _run(toolset, tool_call("ping", {}, id="c2"))
            [(text, failed)] = _tool_messages(adapter)
            assert failed and text == "MCP tool 'ping' did not answer within 1 s; the call was abandoned"

    asyncio.run(main())


def test_a_json_rpc_error_from_the_server_is_a_refusal() -> None:
    from mcp.shared.exceptions import MCPError

    async def list_tools(_ctx: Any, _params: Any) -> mcp_types.ListToolsResult:
        return mcp_types.ListToolsResult(tools=[_tool("picky", {"type": "object"})])

    async def call_tool(_ctx: Any, _params: mcp_types.CallToolRequestParams) -> mcp_types.CallToolResult:
        raise MCPError(code=-32602, message="no, not like that")

    server = Server("picky", on_list_tools=list_tools, on_call_tool=call_tool)

    async def main() -> None:
        async with McpToolset(McpServer.in_memory(server)) as toolset:
            adapter = await _run(toolset, tool_call("picky", {}, id="c1"))
            [(text, failed)] = _tool_messages(adapter)
            assert failed and "refused the call to 'picky': no, not like that" in text

    asyncio.run(main())
