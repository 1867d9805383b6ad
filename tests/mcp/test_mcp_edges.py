"""Edges of mounting: limits, callbacks that misbehave, servers that never answer, refused states."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel

from mcp_support import child_pids, in_memory, mounted_prompt
from weakprompt import run
from weakprompt.adapters.testing import FunctionAdapter, ScriptedAdapter, tool_call, tool_call_turn
from weakprompt.clock import SYSTEM_CLOCK
from weakprompt.deadlines import Deadline
from weakprompt.errors import ConfigurationError
from weakprompt.mcp import (
    ElicitationRequest,
    McpConnectionError,
    McpProgress,
    McpServer,
    McpToolset,
    PromptServer,
    mounted,
    with_toolsets,
)
from weakprompt.mcp._toolset import _connection_error, _describe  # pyright: ignore[reportPrivateUsage]
from weakprompt.prompt import MarkdownSection, Prompt, PromptTemplate
from weakprompt.session import Session
from weakprompt.tools import ToolResult, tool

pytestmark = pytest.mark.timeout(60)


def _texts(adapter: ScriptedAdapter) -> list[tuple[str, bool]]:
    return [(m.content, m.is_error) for m in adapter.requests[1].context.messages if m.role == "tool"]


def test_a_server_that_never_answers_the_handshake_times_out_and_is_reaped() -> None:
    before = child_pids()

    async def main() -> None:
        async with McpToolset(McpServer.stdio("sleep", "30"), connect_timeout=0.5):
            pass

    with pytest.raises(McpConnectionError, match=r"no answer within 0\.5 s"):
        asyncio.run(main())
    assert child_pids() <= before


def test_settings_are_checked() -> None:
    with pytest.raises(ConfigurationError, match="positive"):
        in_memory(call_timeout=0)

    async def main() -> None:
        toolset = in_memory()
        async with toolset:
            with pytest.raises(ConfigurationError, match="already open"):
                await toolset.__aenter__()

    asyncio.run(main())


def test_a_deadline_shortens_the_call_timeout() -> None:
    async def main() -> None:
        async with in_memory() as toolset:
            adapter = ScriptedAdapter([tool_call_turn(tool_call("echo", {"text": "a"}, id="c1")), "done"])
            deadline = Deadline(SYSTEM_CLOCK.now() + timedelta(seconds=30))
            await run(mounted_prompt(toolset), adapter=adapter, session=Session(), deadline=deadline)
            assert _texts(adapter) == [('{"result":"a"}', False)]

    asyncio.run(main())


def test_an_async_or_raising_progress_callback_does_not_break_the_call() -> None:
    seen: list[float] = []

    async def record(progress: McpProgress) -> None:
        seen.append(progress.progress)

    def broken(_progress: McpProgress) -> None:
        raise RuntimeError("callback bug")

    async def main() -> None:
        for callback in (record, broken):
            async with in_memory(on_progress=callback) as toolset:
                adapter = ScriptedAdapter([tool_call_turn(tool_call("slow", {}, id="c1")), "done"])
                await run(mounted_prompt(toolset), adapter=adapter, session=Session())
                assert _texts(adapter) == [('{"result":"finished"}', False)]

    asyncio.run(main())
    assert seen == [1, 2]


def _asking() -> MCPServer:
    server = MCPServer("asking")

    class Name(BaseModel):
        name: str

    @server.tool()
    async def ask_user(ctx: Context) -> str:
        """Asks the user."""
        try:
            answer = await ctx.elicit("Your name?", schema=Name)
        except Exception as exc:
            return f"failed: {exc}"
        return str(answer.action)

    @server.tool()
    async def ask_model(ctx: Context) -> str:
        """Asks the model."""
        import mcp.types as mcp_types

        try:
            await ctx.request_context.session.create_message(  # pyright: ignore[reportDeprecated]
                [
                    mcp_types.SamplingMessage(
                        role="user", content=mcp_types.TextContent(type="text", text="q")
                    )
                ],
                max_tokens=5,
            )
        except Exception as exc:
            return f"failed: {exc}"
        return "answered"

    return server


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.filterwarnings("ignore:The sampling capability is deprecated")  # the test server's call
@pytest.mark.parametrize(
    ("options", "tool", "expected"),
    [
        ({"elicitation": lambda _r: "not an answer"}, "ask_user", "gave no ElicitationAnswer"),
        ({"elicitation": lambda _r: 1 / 0}, "ask_user", "elicitation failed: ZeroDivisionError"),
        (
            {"sampling": FunctionAdapter(lambda _request: (_ for _ in ()).throw(RuntimeError("model down")))},
            "ask_model",
            "sampling failed",
        ),
    ],
)
def test_callbacks_that_fail_answer_the_server_with_an_error(
    options: dict[str, Any], tool: str, expected: str
) -> None:
    async def main() -> str:
        async with McpToolset(McpServer.in_memory(_asking(), mode="legacy"), **options) as toolset:
            adapter = ScriptedAdapter([tool_call_turn(tool_call(tool, {}, id="c1")), "done"])
            await run(mounted_prompt(toolset), adapter=adapter, session=Session())
            return _texts(adapter)[0][0]

    assert expected in asyncio.run(main())


def test_elicitation_request_carries_the_server_name() -> None:
    request = ElicitationRequest(server="s", message="m", schema={})
    assert request.server == "s"


def test_mounted_and_with_toolsets_add_a_section_for_the_run() -> None:
    base = Prompt(
        PromptTemplate(ns="t", key="base", sections=[MarkdownSection(title="A", key="a", template="A.")])
    )

    async def main() -> tuple[str, ...]:
        async with mounted(in_memory(prefix="x_"), in_memory(prefix="y_")) as (one, two):
            rendered = with_toolsets(base, one, two).render()
            assert "Tools from the MCP server(s): demo, demo." in rendered.text
            return rendered.tool_names

    names = asyncio.run(main())
    assert names[:2] == ("x_weather", "x_echo") and "y_grow" in names


@dataclass(frozen=True)
class Loose:
    value: Any


@tool
def loose(params: Loose) -> ToolResult[None]:
    """Takes anything."""
    return ToolResult.ok(None, message=f"got {params.value!r}")


@tool
def limit() -> ToolResult[None]:
    """Raises an evaluation limit."""
    from weakprompt.errors import PromptEvaluationError

    raise PromptEvaluationError("out of budget")


@dataclass(frozen=True)
class Opaque:
    def render(self) -> str:
        return "opaque"


@tool
def opaque() -> ToolResult[Opaque]:
    """Returns a value serde cannot dump as an object."""
    return ToolResult.ok(Opaque())


class _Connection:
    """Stands for an SDK connection object (the server keys sessions weakly by it)."""


def test_serving_falls_back_for_schemas_without_a_strict_form_and_reports_limits() -> None:
    section = MarkdownSection(title="T", key="t", template="T.", tools=[loose, limit, opaque])
    server = PromptServer(Prompt(PromptTemplate(ns="t", key="serve", sections=[section])))
    [loose_schema, *_] = server.describe()
    assert "additionalProperties" not in loose_schema.input_schema or loose_schema.input_schema.get(
        "required"
    ) == ["value"]

    async def main() -> None:
        served = server.served(_Connection())
        ok = await server.call(served, "loose", {"value": [1]})
        assert not ok.is_error and "got [1]" in ok.content[0].text  # type: ignore[union-attr]
        stopped = await server.call(served, "limit", {})
        assert stopped.is_error and "out of budget" in stopped.content[0].text  # type: ignore[union-attr]
        shown = await server.call(served, "opaque", {})
        assert not shown.is_error and shown.structured_content is None

    asyncio.run(main())


def test_a_transcript_that_cannot_be_written_does_not_fail_the_call() -> None:
    from weakprompt.store import Store

    store = Store.open("sqlite://")
    server = PromptServer(
        Prompt(
            PromptTemplate(
                ns="t", key="s", sections=[MarkdownSection(title="T", key="t", template="T.", tools=[loose])]
            )
        ),
        store=store,
    )

    async def main() -> bool:
        served = server.served(_Connection())
        store.close()  # writes now fail
        result = await server.call(served, "loose", {"value": 1})
        return bool(result.is_error)

    assert asyncio.run(main()) is False


def test_connection_errors_are_recognised_inside_groups() -> None:
    import anyio

    assert _connection_error(anyio.ClosedResourceError())
    assert _connection_error(ExceptionGroup("g", [ValueError(), anyio.BrokenResourceError()]))
    assert not _connection_error(ExceptionGroup("g", [ValueError()]))
    assert _describe(ExceptionGroup("g", [ValueError("inner")])) == "ValueError: inner"
    assert "g" in _describe(ExceptionGroup("g", [ValueError("a"), KeyError("b")]))


def test_refresh_reads_the_list_again() -> None:
    async def main() -> list[str]:
        async with in_memory(prefix="a_") as toolset:
            toolset.prefix = "b_"
            return [t.name for t in await toolset.refresh()]

    assert asyncio.run(main())[0] == "b_weather"


def test_json_of_values_is_compact() -> None:
    assert json.dumps({"a": 1}, separators=(",", ":")) == '{"a":1}'


def test_a_single_client_server_keeps_one_session_for_every_request() -> None:
    from mcp_served_tools_import import example_prompt

    server = PromptServer(example_prompt())
    server.single_client()

    class Ctx:
        session = object()

    assert server.connection_state(Ctx()) is server.connection_state(Ctx())


def test_quick_check_and_strict_schema_of_a_mounted_tool() -> None:
    from weakprompt.mcp._tool import quick_check
    from weakprompt.serde import StrictSchemaError

    check = quick_check({"type": "object", "properties": {"a": {}}, "required": ["a"]})
    assert check is not None and check({"a": [1, {"b": None}]}) and not check({})

    async def main() -> None:
        async with in_memory() as toolset:
            with pytest.raises(StrictSchemaError):
                toolset.current_tools()[0].parameters_schema(strict=True)

    asyncio.run(main())


def test_odd_failures_of_a_call_become_failed_results() -> None:
    import anyio

    async def main() -> list[tuple[str, bool]]:
        async with in_memory(reconnect=None) as toolset:
            connection = toolset._connection  # pyright: ignore[reportPrivateUsage]
            assert connection is not None
            client: Any = connection.client
            original = client.call_tool
            outcomes: list[tuple[str, bool]] = []
            for failure in (RuntimeError("weird reply"), anyio.ClosedResourceError()):

                async def broken(
                    *_args: object, failure: BaseException = failure, **_kwargs: object
                ) -> object:
                    raise failure

                client.call_tool = broken
                adapter = ScriptedAdapter([tool_call_turn(tool_call("echo", {"text": "a"}, id="c1")), "done"])
                await run(mounted_prompt(toolset), adapter=adapter, session=Session())
                outcomes += _texts(adapter)
            client.call_tool = original
            return outcomes

    (weird, failed), (closed, closed_failed) = asyncio.run(main())
    assert failed and "failed: RuntimeError: weird reply" in weird
    assert closed_failed and "stopped during the call" in closed


def test_a_tool_the_server_no_longer_has_is_refused_by_the_server() -> None:
    from mcp_support import demo_server

    server = demo_server()

    async def main() -> list[tuple[str, bool]]:
        async with McpToolset(McpServer.in_memory(server)) as toolset:
            server.remove_tool("echo")
            adapter = ScriptedAdapter([tool_call_turn(tool_call("echo", {"text": "a"}, id="c1")), "done"])
            await run(mounted_prompt(toolset), adapter=adapter, session=Session())
            return _texts(adapter)

    [(text, failed)] = asyncio.run(main())
    assert failed and "echo" in text


def test_a_failed_relisting_keeps_the_last_list() -> None:
    async def main() -> int:
        async with in_memory() as toolset:
            connection = toolset._connection  # pyright: ignore[reportPrivateUsage]
            assert connection is not None
            client: Any = connection.client

            async def broken(*_args: object, **_kwargs: object) -> object:
                raise RuntimeError("listing failed")

            client.list_tools = broken
            await toolset._changed_tools()  # pyright: ignore[reportPrivateUsage]
            return len(toolset.current_tools())

    assert asyncio.run(main()) == 5


def test_cancelling_while_connecting_leaves_no_process() -> None:
    before = child_pids()

    async def main() -> None:
        async def connect() -> None:
            async with McpToolset(McpServer.stdio("sleep", "30"), connect_timeout=30):
                pass

        task = asyncio.ensure_future(connect())
        for _ in range(200):
            if child_pids() - before:
                break
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert child_pids() <= before


def test_name_digests_never_collide_and_unknown_blocks_are_named() -> None:
    from weakprompt.mcp._names import tool_name
    from weakprompt.mcp._results import content_text

    taken: set[str] = set()
    first = tool_name("", "X", taken)
    taken.add(first.replace(first[-8:], "0" * 8))
    second = tool_name("", "X", {first})
    assert second != first

    class Odd:
        type = "hologram"

    assert content_text([Odd()]) == "[hologram content]"
