"""Mounting an MCP server written with the SDK in this test, through the SDK's in-process client."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import anyio
import mcp.types as mcp_types
import pytest
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel

from mcp_support import in_memory, mounted_prompt
from weakprompt import run
from weakprompt.adapters.testing import ScriptedAdapter, tool_call, tool_call_turn
from weakprompt.errors import ConfigurationError
from weakprompt.events import ToolInvoked
from weakprompt.mcp import (
    ElicitationAnswer,
    ElicitationRequest,
    McpCallRequest,
    McpProgress,
    McpServer,
    McpTool,
    McpToolset,
    ToolFilter,
)
from weakprompt.messages import ToolCall
from weakprompt.prompt import MarkdownSection, Prompt, PromptTemplate
from weakprompt.runtime import evaluate
from weakprompt.session import Session
from weakprompt.store import Store
from weakprompt.transcript import Transcript

pytestmark = pytest.mark.timeout(60)


def _tool_messages(adapter: ScriptedAdapter, request: int = 1) -> list[tuple[str, bool]]:
    return [(m.content, m.is_error) for m in adapter.requests[request].context.messages if m.role == "tool"]


async def _run(toolset: McpToolset, *calls: ToolCall, session: Session | None = None) -> ScriptedAdapter:
    adapter = ScriptedAdapter([tool_call_turn(*calls), "done"])
    await run(mounted_prompt(toolset), adapter=adapter, session=session or Session())
    return adapter


def test_the_servers_tools_are_offered_with_its_schemas() -> None:
    async def main() -> None:
        async with in_memory() as toolset:
            rendered = mounted_prompt(toolset).render()
            assert rendered.tool_names == ("weather", "echo", "boom", "slow", "grow")
            weather = rendered.tool_by_name("weather")
            assert isinstance(weather, McpTool)
            assert weather.description == "Weather for a city."
            params = rendered.tool_schema("weather")
            assert params is not None
            assert params["parameters"]["required"] == ["city"]  # type: ignore[index]
            assert "$schema" not in params["parameters"]  # type: ignore[operator]
            assert len(set(rendered.tool_hashes)) == 5

    asyncio.run(main())


def test_a_call_goes_through_the_dispatcher_and_prefers_structured_content() -> None:
    async def main() -> None:
        async with in_memory() as toolset:
            session = Session()
            seen: list[ToolInvoked] = []
            session.bus.subscribe(ToolInvoked, seen.append)
            adapter = await _run(
                toolset,
                tool_call("weather", {"city": "Oslo"}, id="c1"),
                tool_call("echo", {"text": "hi"}, id="c2"),
                session=session,
            )
            results = _tool_messages(adapter)
            assert json.loads(results[0][0]) == {"city": "Oslo", "celsius": 21.5}
            assert results[0][1] is False
            assert [event.name for event in seen] == ["weather", "echo"]  # one event per call
            assert seen[0].result.value == {"city": "Oslo", "celsius": 21.5}

    asyncio.run(main())


def test_is_error_becomes_a_failed_result_and_the_run_goes_on() -> None:
    async def main() -> None:
        async with in_memory() as toolset:
            adapter = await _run(toolset, tool_call("boom", {"x": 3}, id="c1"))
            [(text, failed)] = _tool_messages(adapter)
            assert failed
            assert "MCP tool 'boom' reported an error" in text
            assert adapter.remaining == 0

    asyncio.run(main())


def test_arguments_are_validated_against_the_servers_schema_before_the_call() -> None:
    calls: list[int] = []
    server = MCPServer("strict")

    @server.tool()
    def count(n: int) -> int:
        """Counts."""
        calls.append(n)
        return n

    async def main() -> None:
        async with McpToolset(McpServer.in_memory(server)) as toolset:
            adapter = await _run(
                toolset, tool_call("count", {"n": "seven"}, id="c1"), tool_call("count", {}, id="c2")
            )
            (wrong, failed), (missing, failed_too) = _tool_messages(adapter)
            assert failed and failed_too
            assert "$.n" in wrong and "'seven' is not of type 'integer'" in wrong
            assert "'n' is a required property" in missing
            assert calls == []  # the server never saw either call

    asyncio.run(main())


def test_the_schema_is_compiled_once_per_tool() -> None:
    async def main() -> None:
        async with in_memory() as toolset:
            tool = toolset.current_tools()[0]
            validator = tool.validator
            tool.parse_arguments({"city": "a"})
            tool.parse_arguments({"city": "b"})
            assert tool.validator is validator
            assert mounted_prompt(toolset).render().tools[0] is tool  # rendering builds nothing new

    asyncio.run(main())


def test_disabling_the_section_removes_the_tools() -> None:
    async def main() -> None:
        async with in_memory() as toolset:
            rendered = mounted_prompt(toolset, enabled=False).render()
            assert rendered.tool_names == ()
            assert rendered.toolset_versions == ()

    asyncio.run(main())


def test_prefix_and_filters() -> None:
    async def main() -> None:
        async with in_memory(
            prefix="demo_", filter=ToolFilter(include=["weather", "echo", "boom"])
        ) as toolset:
            assert [t.name for t in toolset.current_tools()] == ["demo_weather", "demo_echo", "demo_boom"]
            adapter = await _run(toolset, tool_call("demo_echo", {"text": "x"}, id="c1"))
            assert _tool_messages(adapter)[0][1] is False
        async with in_memory(
            filter=ToolFilter(exclude=["boom"], where=lambda info: "e" in info.name)
        ) as toolset:
            assert [t.name for t in toolset.current_tools()] == ["weather", "echo"]

    asyncio.run(main())


def _hinted_server() -> MCPServer:
    server = MCPServer("hints")

    @server.tool(annotations=mcp_types.ToolAnnotations(read_only_hint=True))
    def look() -> str:
        """Reads."""
        return "seen"

    @server.tool(annotations=mcp_types.ToolAnnotations(destructive_hint=True))
    def wipe() -> str:
        """Destroys."""
        return "gone"

    @server.tool(annotations=mcp_types.ToolAnnotations(destructive_hint=False), meta={"team": "ops"})
    def add() -> str:
        """Adds."""
        return "added"

    @server.tool()
    def unknown() -> str:
        """No hints."""
        return "?"

    return server


@pytest.mark.parametrize(
    ("chosen", "expected"),
    [
        (ToolFilter(read_only=True), ["look"]),
        (ToolFilter(read_only=False), ["wipe", "add", "unknown"]),
        (ToolFilter(destructive=False), ["look", "add"]),
        (ToolFilter(destructive=True), ["wipe", "unknown"]),
        (ToolFilter(meta={"team": "ops"}), ["add"]),
    ],
)
def test_filters_by_annotations_and_meta(chosen: ToolFilter, expected: list[str]) -> None:
    async def main() -> list[str]:
        async with McpToolset(McpServer.in_memory(_hinted_server()), filter=chosen) as toolset:
            return [t.name for t in toolset.current_tools()]

    assert asyncio.run(main()) == expected


def test_list_changed_updates_the_offer_within_the_run_and_the_transcript_records_it() -> None:
    async def main() -> None:
        async with in_memory() as toolset:
            store = Store.open("sqlite://")
            session = Session()
            version = toolset.version
            adapter = ScriptedAdapter(
                [
                    tool_call_turn(tool_call("grow", {}, id="c1")),
                    tool_call_turn(tool_call("newer", {"y": 4}, id="c2")),
                    "done",
                ]
            )

            async def wait_for_change() -> None:
                with anyio.fail_after(10):
                    while toolset.version == version:
                        await asyncio.sleep(0.01)

            prompt = mounted_prompt(toolset)
            before = prompt.render()
            task = asyncio.ensure_future(wait_for_change())
            original_complete = adapter.complete_async

            async def complete_async(request: Any) -> Any:  # the second model call waits for the re-listing
                if len(adapter.requests) == 1:
                    await task
                return await original_complete(request)

            adapter.complete_async = complete_async  # type: ignore[method-assign]
            await run(prompt, adapter=adapter, session=session, store=store)
            offered = [tuple(t.name for t in request.tools) for request in adapter.requests]
            assert "newer" not in offered[0]
            assert "newer" in offered[1]
            assert json.loads(_tool_messages(adapter, 2)[-1][0]) == {"result": 8}
            after = prompt.render()
            new_hash = after.tool_hashes[after.tool_names.index("newer")]
            assert new_hash not in before.tool_hashes
            transcript = Transcript(store, session.session_id)
            linked = transcript.compile().tools
            assert any(schema.get("name") == "newer" for schema in linked)
            changes = [change for change in transcript.tool_set_changes() if change.added == ("newer",)]
            assert len(changes) == 1  # the per-turn tool tracking saw the new tool arrive mid-run
            [version] = transcript.tool_versions("newer")
            assert version.content_hash == new_hash

    asyncio.run(main())


def test_progress_notifications_reach_the_callback() -> None:
    seen: list[McpProgress] = []

    async def main() -> None:
        async with in_memory(on_progress=seen.append) as toolset:
            adapter = await _run(toolset, tool_call("slow", {}, id="c1"))
            assert json.loads(_tool_messages(adapter)[0][0]) == {"result": "finished"}

    asyncio.run(main())
    assert [(p.tool, p.progress, p.total, p.message) for p in seen] == [
        ("slow", 1, 2, "half"),
        ("slow", 2, 2, "done"),
    ]


def _asking_server() -> MCPServer:
    server = MCPServer("asking")

    class Name(BaseModel):
        name: str

    @server.tool()
    async def ask_model(question: str, ctx: Context) -> str:
        """Asks the client's model."""
        reply = await ctx.request_context.session.create_message(  # pyright: ignore[reportDeprecated]
            [
                mcp_types.SamplingMessage(
                    role="user", content=mcp_types.TextContent(type="text", text=question)
                )
            ],
            max_tokens=50,
            system_prompt="Be brief.",
        )
        content = reply.content
        assert isinstance(content, mcp_types.TextContent)
        return content.text

    @server.tool()
    async def ask_user(ctx: Context) -> str:
        """Asks the user."""
        answer = await ctx.elicit("Your name?", schema=Name)
        return f"{answer.action}:{getattr(getattr(answer, 'data', None), 'name', None)}"

    return server


@pytest.mark.filterwarnings("ignore:The sampling capability is deprecated")  # the test server's call
def test_sampling_is_answered_by_a_weakprompt_adapter() -> None:
    sampler = ScriptedAdapter(["forty-two"])

    async def main() -> None:
        server = McpServer.in_memory(_asking_server(), mode="legacy")
        async with McpToolset(server, sampling=sampler) as toolset:
            adapter = await _run(toolset, tool_call("ask_model", {"question": "meaning?"}, id="c1"))
            assert json.loads(_tool_messages(adapter)[0][0]) == {"result": "forty-two"}

    asyncio.run(main())
    [request] = sampler.requests
    assert [(m.role, m.content) for m in request.context.messages] == [
        ("system", "Be brief."),
        ("user", "meaning?"),
    ]
    assert request.max_output_tokens == 50


def test_elicitation_goes_to_the_callback() -> None:
    asked: list[ElicitationRequest] = []

    async def answer(request: ElicitationRequest) -> ElicitationAnswer:
        asked.append(request)
        return ElicitationAnswer("accept", {"name": "Ada"})

    async def main() -> None:
        server = McpServer.in_memory(_asking_server(), mode="legacy")
        async with McpToolset(server, elicitation=answer) as toolset:
            adapter = await _run(toolset, tool_call("ask_user", {}, id="c1"))
            assert json.loads(_tool_messages(adapter)[0][0]) == {"result": "accept:Ada"}

    asyncio.run(main())
    assert asked[0].message == "Your name?"
    assert asked[0].schema["required"] == ["name"]


def test_the_call_filter_allows_or_refuses_each_call() -> None:
    asked: list[McpCallRequest] = []

    def policy(request: McpCallRequest) -> bool | str:
        asked.append(request)
        return True if request.info.name == "echo" else "echo only"

    async def main() -> None:
        async with in_memory(call_filter=policy) as toolset:
            adapter = await _run(
                toolset,
                tool_call("echo", {"text": "a"}, id="c1"),
                tool_call("weather", {"city": "b"}, id="c2"),
            )
            (allowed, failed), (refused, refused_failed) = _tool_messages(adapter)
            assert not failed and json.loads(allowed) == {"result": "a"}
            assert refused_failed and "refused by the call filter: echo only" in refused

    asyncio.run(main())
    assert [(r.tool, dict(r.arguments)) for r in asked] == [
        ("echo", {"text": "a"}),
        ("weather", {"city": "b"}),
    ]


def test_a_raising_or_async_call_filter() -> None:
    async def deny(_request: McpCallRequest) -> bool:
        return False

    def broken(_request: McpCallRequest) -> bool:
        raise RuntimeError("policy bug")

    async def main() -> None:
        for policy, expected in ((deny, "not allowed"), (broken, "the call filter failed")):
            async with in_memory(call_filter=policy) as toolset:
                adapter = await _run(toolset, tool_call("echo", {"text": "a"}, id="c1"))
                [(text, failed)] = _tool_messages(adapter)
                assert failed and expected in text

    asyncio.run(main())


def test_the_old_mcp_approval_policy_names_warn_and_still_work() -> None:
    """``mcp.ApprovalPolicy`` and ``approve=`` were renamed (``McpCallFilter``, ``call_filter=``)."""
    import weakprompt.mcp as wp_mcp

    with pytest.warns(DeprecationWarning, match=r"mcp\.ApprovalPolicy is deprecated.*McpCallFilter"):
        old = wp_mcp.ApprovalPolicy  # pyright: ignore[reportAttributeAccessIssue]
    assert old is wp_mcp.McpCallFilter
    assert "ApprovalPolicy" not in dir(wp_mcp)
    with pytest.raises(AttributeError, match="NoSuchName"):
        _ = wp_mcp.NoSuchName  # pyright: ignore[reportAttributeAccessIssue]

    def policy(request: McpCallRequest) -> bool | str:
        return "no" if request.info.name == "echo" else True

    async def main() -> None:
        with pytest.warns(DeprecationWarning, match="use call_filter="):
            toolset = in_memory(approve=policy)
        assert toolset.call_filter is policy
        with pytest.warns(DeprecationWarning, match="use call_filter"):
            assert toolset.approve is policy
        async with toolset:
            adapter = await _run(toolset, tool_call("echo", {"text": "a"}, id="c1"))
            [(text, failed)] = _tool_messages(adapter)
            assert failed and "refused by the call filter: no" in text

    asyncio.run(main())
    with pytest.raises(ConfigurationError, match="call_filter= only"):
        in_memory(approve=policy, call_filter=policy)


def test_a_server_that_never_answers_times_out_as_a_failed_result() -> None:
    server = MCPServer("stuck")

    @server.tool()
    async def hang() -> str:
        """Never returns."""
        await anyio.sleep_forever()
        return "never"

    @server.tool()
    def ping() -> str:
        """Answers."""
        return "pong"

    async def main() -> None:
        async with McpToolset(McpServer.in_memory(server), call_timeout=0.3) as toolset:
            adapter = await _run(toolset, tool_call("hang", {}, id="c1"), tool_call("ping", {}, id="c2"))
            (stuck, failed), (pong, ok_failed) = _tool_messages(adapter)
            assert failed and "did not answer within 0.3 s" in stuck
            assert not ok_failed and "pong" in pong

    asyncio.run(main())


def test_an_invalid_schema_leaves_that_tool_out_with_a_clear_problem() -> None:
    from mcp.server import Server

    async def list_tools(_ctx: Any, _params: Any) -> mcp_types.ListToolsResult:
        return mcp_types.ListToolsResult(
            tools=[
                mcp_types.Tool(
                    name="bad",
                    description="Bad.",
                    input_schema={"type": "object", "properties": {"a": {"type": "nope"}}},
                ),
                mcp_types.Tool(name="Good.Tool Name!", description="Fine.", input_schema={"type": "object"}),
            ]
        )

    async def call_tool(_ctx: Any, params: mcp_types.CallToolRequestParams) -> mcp_types.CallToolResult:
        return mcp_types.CallToolResult(
            content=[mcp_types.TextContent(type="text", text=f"called {params.name}")]
        )

    server = Server("odd", on_list_tools=list_tools, on_call_tool=call_tool)

    async def main() -> None:
        async with McpToolset(McpServer.in_memory(server)) as toolset:
            [tool] = toolset.current_tools()
            assert tool.name.startswith("good_tool_name_") and len(tool.name) <= 64
            [problem] = toolset.problems
            assert (
                "'bad'" in problem and "$.properties.a.type" in problem and "not valid JSON Schema" in problem
            )
            adapter = await _run(toolset, tool_call(tool.name, {}, id="c1"))
            assert _tool_messages(adapter)[0] == ("called Good.Tool Name!", False)

    asyncio.run(main())


def test_a_ten_megabyte_result_reaches_the_model_as_a_handle() -> None:
    server = MCPServer("big")

    @server.tool()
    def dump() -> str:
        """Returns a lot."""
        return "x" * (10 * 1024 * 1024)

    async def main() -> None:
        async with McpToolset(McpServer.in_memory(server)) as toolset:
            adapter = await _run(toolset, tool_call("dump", {}, id="c1"))
            [(text, failed)] = _tool_messages(adapter)
            assert not failed
            assert len(text) < 20_000
            assert "tool_output" in text

    asyncio.run(main())


def test_tool_errors_raised_by_the_server_read_as_its_message() -> None:
    server = MCPServer("errs")

    @server.tool()
    def refuse() -> str:
        """Refuses."""
        raise ToolError("no such order: A-1")

    async def main() -> None:
        async with McpToolset(McpServer.in_memory(server)) as toolset:
            adapter = await _run(toolset, tool_call("refuse", {}, id="c1"))
            [(text, failed)] = _tool_messages(adapter)
            assert failed and "no such order: A-1" in text

    asyncio.run(main())


def test_sync_evaluate_with_a_blocking_toolset() -> None:
    toolset = in_memory()
    with toolset.open_sync():
        adapter = ScriptedAdapter([tool_call_turn(tool_call("echo", {"text": "sync"}, id="c1")), "done"])
        response = evaluate(mounted_prompt(toolset), adapter=adapter, session=Session())
        assert response.text == "done"
        assert json.loads(_tool_messages(adapter)[0][0]) == {"result": "sync"}
    assert not toolset.connected


def test_open_is_the_async_twin_of_open_sync() -> None:
    async def main() -> list[str]:
        toolset = in_memory()
        async with toolset.open() as opened:
            assert opened is toolset and toolset.connected
            names = [t.name for t in toolset.current_tools()]
        assert not toolset.connected
        return names

    assert "echo" in asyncio.run(main())


def test_open_blocking_still_opens_and_warns() -> None:
    toolset = in_memory()
    with pytest.warns(DeprecationWarning, match="use open_sync"), toolset.open_blocking():
        assert toolset.connected
    assert not toolset.connected


def test_a_closed_toolset_fails_calls_clearly() -> None:
    async def main() -> None:
        toolset = in_memory()
        async with toolset:
            prompt = mounted_prompt(toolset)
            prompt.render()
        adapter = ScriptedAdapter([tool_call_turn(tool_call("echo", {"text": "a"}, id="c1")), "done"])
        await run(prompt, adapter=adapter, session=Session())
        assert adapter.requests[0].tools[1].name == "echo"  # the last listing is still offered
        [(text, failed)] = _tool_messages(adapter)
        assert failed and "is not open" in text

    asyncio.run(main())


def test_two_toolsets_with_the_same_tool_names_need_a_prefix() -> None:
    async def main() -> None:
        async with in_memory() as first, in_memory() as second:
            sections = [
                MarkdownSection(title="A", key="a", template="A.", toolsets=[first]),
                MarkdownSection(title="B", key="b", template="B.", toolsets=[second]),
            ]
            prompt = Prompt(PromptTemplate(ns="tests", key="two", sections=sections))
            from weakprompt.errors import PromptRenderError

            with pytest.raises(PromptRenderError, match="give the toolset a prefix"):
                prompt.render()
            second.prefix = "b_"
            await second.refresh()
            assert "b_echo" in prompt.render().tool_names

    asyncio.run(main())


def test_a_section_refuses_a_toolset_that_is_not_one() -> None:
    from weakprompt.errors import PromptValidationError

    with pytest.raises(PromptValidationError, match="has no version and current_tools"):
        MarkdownSection(title="A", key="a", template="A.", toolsets=[object()])  # type: ignore[list-item]


def test_a_tool_that_requires_approval_pauses_the_run_and_runs_once_approved(tmp_path: Any) -> None:
    from weakprompt.runtime import Approve, paused_run
    from weakprompt.runtime.resume import resume_with
    from weakprompt.runtime.run_settings import RunSettings

    async def main() -> None:
        async with in_memory(requires_approval=lambda info: info.name == "echo") as toolset:
            prompt = mounted_prompt(toolset)
            calls = tool_call_turn(
                tool_call("echo", {"text": "a"}, id="c1"), tool_call("weather", {"city": "b"}, id="c2")
            )
            adapter = ScriptedAdapter([calls, "done"])
            with Store.open(tmp_path / "s.db") as store:
                first = await run(prompt, adapter=adapter, session=Session(session_id="m"), store=store)
                assert first.paused is not None and first.output is None
                waiting = paused_run(store, "m")
                assert waiting is not None
                (pending,) = waiting.pending
                assert (pending.call_id, pending.tool) == ("c1", "echo")  # weather ran; echo waits
                settings = RunSettings(adapter=adapter, session=Session(session_id="m"), store=store)
                done = await resume_with(
                    "m", [Approve(pending.call_id, pending.token)], prompt=prompt, settings=settings
                )
                assert done.text == "done"
                results = {
                    c.content.tool_call_id: c.content.content
                    for c in Transcript(store, "m").log()
                    if c.role == "tool"
                }
                assert json.loads(results["c1"]) == {"result": "a"}

    asyncio.run(main())
