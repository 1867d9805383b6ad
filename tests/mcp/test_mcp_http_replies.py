"""Replies from a streamable HTTP server are bounded by McpLimits.max_reply_bytes, as over stdio."""

from __future__ import annotations

import asyncio
import itertools
import json
import socket
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2
import pytest
import uvicorn
from hypothesis import given
from hypothesis import strategies as st
from mcp.server.mcpserver import Context, MCPServer

from weakprompt.mcp import McpLimits, McpProgress, McpServer, McpToolset
from weakprompt.mcp._http import EventSplitter, reply_cap
from weakprompt.mcp._server import Mode
from weakprompt.session import Session
from weakprompt.tools import ToolContext

pytestmark = pytest.mark.timeout(120)

LIMIT = 64 * 1024


def _big_server() -> MCPServer:
    server = MCPServer("http-replies")

    @server.tool()
    async def big(size: int, ctx: Context) -> str:
        """A reply of about size characters; asked for progress, it streams the reply as SSE."""
        await ctx.report_progress(1, 2)
        return "x" * size

    @server.tool()
    async def noisy(size: int, ctx: Context) -> str:
        """A progress notification of about size characters, then a short reply."""
        await ctx.report_progress(1, 2, "y" * size)
        return "done"

    @server.tool()
    async def stuck() -> str:
        """Never answers."""
        await anyio.sleep(600)
        return "never"

    return server


@asynccontextmanager
async def _serving() -> AsyncGenerator[str]:
    """The SDK's streamable HTTP app under uvicorn on a free loopback port; yields its URL."""
    app = _big_server().streamable_http_app()
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    port = int(listener.getsockname()[1])
    server = uvicorn.Server(
        uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=1)
    )
    async with anyio.create_task_group() as group:
        group.start_soon(lambda: server.serve(sockets=[listener]))
        while not server.started:
            await anyio.sleep(0.02)
        try:
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            server.should_exit = True
    listener.close()


async def _call(toolset: McpToolset, name: str, arguments: dict[str, Any]) -> tuple[str, bool]:
    [tool] = [t for t in toolset.current_tools() if t.name == name]
    result = await toolset.call(name, tool.info, arguments, ToolContext(session=Session()))
    return result.message, not result.success


@pytest.mark.parametrize(
    ("mode", "progress"),
    [("auto", False), ("auto", True), ("legacy", False)],
    ids=["json", "sse", "legacy-sse"],
)
def test_an_http_reply_over_the_limit_fails_that_call_clearly_and_the_connection_goes_on(
    mode: Mode, progress: bool
) -> None:
    limits = McpLimits(max_reply_bytes=LIMIT)
    seen: list[McpProgress] = []

    async def main() -> None:
        async with (
            _serving() as url,
            McpToolset(
                McpServer.http(url, mode=mode), limits=limits, on_progress=seen.append if progress else None
            ) as toolset,
        ):
            assert await _call(toolset, "big", {"size": 20_000}) == (
                json.dumps({"result": "x" * 20_000}, separators=(",", ":")),
                False,
            )
            for size in (40_000, 3_000_000):  # just over, and many times over (many chunks)
                text, failed = await _call(toolset, "big", {"size": size})
                assert failed
                assert text == (
                    f"the reply of MCP tool 'big' was larger than the limit of {LIMIT} bytes "
                    "(McpLimits.max_reply_bytes); the call failed"
                )
            assert await _call(toolset, "big", {"size": 10}) == ('{"result":"xxxxxxxxxx"}', False)
            assert len(seen) == (4 if progress else 0)  # the streamed replies were streamed

    asyncio.run(main())


def test_an_http_call_abandoned_at_its_timeout_restarts_the_connection_and_the_next_call_works() -> None:
    async def main() -> None:
        async with _serving() as url, McpToolset(McpServer.http(url), call_timeout=1.0) as toolset:
            text, failed = await _call(toolset, "stuck", {})
            assert failed and "did not answer within 1 s" in text
            assert "is being restarted for the next call" in text
            assert await _call(toolset, "big", {"size": 3}) == ('{"result":"xxx"}', False)

    asyncio.run(main())


def test_an_sse_event_over_the_limit_before_the_reply_fails_that_call_and_the_next_one_works() -> None:
    limits = McpLimits(max_reply_bytes=LIMIT)

    async def main() -> None:
        seen: list[McpProgress] = []
        async with (
            _serving() as url,
            McpToolset(McpServer.http(url), limits=limits, on_progress=seen.append) as toolset,
        ):
            text, failed = await _call(toolset, "noisy", {"size": 200_000})
            assert failed and f"was larger than the limit of {LIMIT} bytes" in text
            assert seen == []
            assert await _call(toolset, "noisy", {"size": 10}) == ('{"result":"done"}', False)
            assert [p.message for p in seen] == ["y" * 10]

    asyncio.run(main())


def test_a_reply_over_the_sdks_own_one_mebibyte_event_limit_arrives_under_ours() -> None:
    async def main() -> None:
        async with _serving() as url, McpToolset(McpServer.http(url), on_progress=lambda _: None) as toolset:
            text, failed = await _call(toolset, "big", {"size": 2_000_000})  # streamed as SSE
            assert not failed and len(text) == len('{"result":""}') + 2_000_000

    asyncio.run(main())


@pytest.mark.parametrize("kind", ["application/json", "text/event-stream"])
def test_a_compressed_reply_though_none_was_asked_for_fails_its_call_unread(kind: str) -> None:
    import gzip

    bomb = gzip.compress(b"data: " + b"z" * 10_000_000 + b"\n\n")
    asked: list[str | None] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        asked.append(request.headers.get("accept-encoding"))
        headers = {"content-type": kind, "content-encoding": "gzip"}
        return httpx2.Response(200, headers=headers, stream=httpx2.ByteStream(bomb))

    async def main() -> httpx2.Response:
        async with httpx2.AsyncClient(
            transport=httpx2.MockTransport(handler),
            headers={"accept-encoding": "identity"},
            event_hooks={"response": [reply_cap(100)]},
        ) as client:
            response = await client.post(
                "http://127.0.0.1/mcp", content=b'{"jsonrpc":"2.0","id":3,"method":"x"}'
            )
            await response.aread()
            return response

    response = asyncio.run(main())
    assert asked == ["identity"]
    assert response.headers["content-type"] == "application/json"
    assert response.json() == {
        "jsonrpc": "2.0",
        "id": 3,
        "error": {
            "code": -32603,
            "message": "the server compressed its reply (Content-Encoding: gzip) though asked not to",
        },
    }


def test_an_http_server_without_a_reply_limit_uses_the_sdks_transport() -> None:
    client = McpServer.http("http://127.0.0.1:9/mcp").client()
    assert client.server == "http://127.0.0.1:9/mcp"


def _events(stream: bytes, cuts: list[int], limit: int) -> list[bytes | int]:
    points = sorted({min(cut, len(stream)) for cut in cuts} | {0, len(stream)})
    splitter = EventSplitter(limit)
    out: list[bytes | int] = []
    for begin, end in itertools.pairwise(points):
        out.extend(splitter.feed(stream[begin:end]))
    return out


@given(
    events=st.lists(
        st.lists(st.text(alphabet="ab:", min_size=1, max_size=300), min_size=1, max_size=4), max_size=6
    ),
    newline=st.sampled_from(["\n", "\r\n", "\r"]),
    cuts=st.lists(st.integers(min_value=0, max_value=8_000), max_size=12),
    limit=st.integers(min_value=1, max_value=700),
)
def test_the_event_splitter_gives_each_event_whatever_the_chunks_and_line_ends(
    events: list[list[str]], newline: str, cuts: list[int], limit: int
) -> None:
    wire = "".join(newline.join(lines) + newline + newline for lines in events).encode()
    expected = ["\n".join(lines).encode() + b"\n\n" for lines in events]
    out = _events(wire, cuts, limit)
    assert len(out) == len(expected)
    for want, got in zip(expected, out, strict=True):
        assert got == (want if len(want) <= limit else len(want))


def test_an_unfinished_event_is_never_given() -> None:
    assert _events(b"data: 1\n\ndata: 2\n", [3, 12], 100) == [b"data: 1\n\n"]
    assert _events(b"data: " + b"z" * 300, [50, 100], 100) == []


def test_a_crlf_split_between_chunks_is_one_line_end() -> None:
    wire = b"data: 1\r\n\r\ndata: 2\r\n\r\n"
    assert _events(wire, [8, 9, 10, 11], 100) == [b"data: 1\n\n", b"data: 2\n\n"]
    splitter = EventSplitter(100)
    assert splitter.feed(b"data: 3\r") == []
    assert splitter.feed(b"") == []  # an empty chunk does not forget the CR before it
    assert splitter.feed(b"\n\n") == [b"data: 3\n\n"]


def test_an_over_limit_event_in_a_reply_stops_the_stream_with_the_calls_error() -> None:
    wire = b"data: " + b"z" * 300 + b"\n\ndata: {}\n\n"
    read: list[bytes] = []

    async def body() -> AsyncGenerator[bytes]:
        for part in (wire[:100], wire[100:], b"data: never read\n\n"):
            read.append(part)
            yield part

    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, stream=_Stream(body()))

    async def main() -> bytes:
        async with httpx2.AsyncClient(
            transport=httpx2.MockTransport(handler), event_hooks={"response": [reply_cap(100)]}
        ) as client:
            response = await client.post(
                "http://127.0.0.1/mcp", content=b'{"jsonrpc":"2.0","id":"r7","method":"x"}'
            )
            return response.content

    error = {"code": -32099, "message": "the reply was larger than the limit of 100 bytes"}
    assert asyncio.run(main()) == (
        b"event: message\ndata: "
        + json.dumps({"jsonrpc": "2.0", "id": "r7", "error": error}).encode()
        + b"\n\n"
    )
    assert len(read) == 2  # the rest of the stream is not read


class _Stream(httpx2.AsyncByteStream):
    def __init__(self, parts: AsyncGenerator[bytes]) -> None:
        self.parts = parts

    async def __aiter__(self) -> AsyncGenerator[bytes]:
        async for part in self.parts:
            yield part


def test_an_over_limit_event_on_a_stream_that_answers_no_request_is_dropped() -> None:
    wire = b"data: " + b"z" * 300 + b"\n\ndata: {}\n\n"

    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(
            200, headers={"content-type": "text/event-stream"}, stream=httpx2.ByteStream(wire)
        )

    async def main() -> bytes:
        async with httpx2.AsyncClient(
            transport=httpx2.MockTransport(handler), event_hooks={"response": [reply_cap(100)]}
        ) as client:
            response = await client.get("http://127.0.0.1/mcp")
            return response.content

    assert asyncio.run(main()) == b"data: {}\n\n"


@pytest.mark.parametrize(
    ("method", "body", "headers"),
    [
        ("POST", b'{"jsonrpc":"2.0","method":"notifications/initialized"}', {}),  # answers no request
        ("POST", b"not json", {}),
        ("POST", b'[{"jsonrpc":"2.0","id":1,"method":"x"}]', {}),  # a batch: not in this protocol
        ("POST", b'{"jsonrpc":"2.0","id":1,"result":{}}', {}),  # the client's own reply
        ("GET", b"", {}),
        ("POST", b'{"jsonrpc":"2.0","id":true,"method":"x"}', {}),
        ("GET", b"", {"content-encoding": "gzip"}),  # the server's own stream: the SDK bounds it
        ("POST", b'{"jsonrpc":"2.0","id":1,"method":"x"}', {"content-type": "text/plain"}),
    ],
    ids=[
        "notification",
        "not-json",
        "batch",
        "client-reply",
        "get",
        "bool-id",
        "compressed-stream",
        "other-type",
    ],
)
def test_a_reply_the_cap_cannot_answer_for_is_left_as_it_came(
    method: str, body: bytes, headers: dict[str, str]
) -> None:
    import gzip

    reply = b'{"jsonrpc":"2.0","id":1,"result":{"text":"' + b"z" * 300 + b'"}}'
    encoded = gzip.compress(reply) if "content-encoding" in headers else reply

    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(
            200, headers={"content-type": "application/json", **headers}, stream=httpx2.ByteStream(encoded)
        )

    async def main() -> bytes:
        async with httpx2.AsyncClient(
            transport=httpx2.MockTransport(handler), event_hooks={"response": [reply_cap(100)]}
        ) as client:
            response = await client.request(method, "http://127.0.0.1/mcp", content=body)
            return response.content

    assert asyncio.run(main()) == reply


@pytest.mark.parametrize("extra", ["", "id: 7\r\n", "event: message\r\n", "retry: 5\n"])
def test_an_event_at_the_limit_passes_the_sdks_own_event_limit_too(extra: str) -> None:
    limit = 200
    head = (extra + "data: ").encode()
    wire = head + b"z" * (limit - len(head) - 2 + extra.count("\r")) + b"\r\n\r\n"
    [event] = EventSplitter(limit).feed(wire)
    assert isinstance(event, bytes) and len(event) == limit

    async def main() -> int:
        request = httpx2.Request("GET", "http://127.0.0.1/mcp")
        response = httpx2.Response(
            200,
            headers={"content-type": "text/event-stream"},
            stream=httpx2.ByteStream(event),
            request=request,
        )
        return len([sse async for sse in httpx2.EventSource(response, max_event_size=limit)])

    assert asyncio.run(main()) == 1
