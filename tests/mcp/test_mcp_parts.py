"""MCP image, audio and embedded-resource content reaches the model as real parts (mcp/_results.py)."""

from __future__ import annotations

import asyncio
import base64
from typing import Any

import mcp.types as mcp_types
import pytest
from mcp.server import Server

from mcp_support import everything_command, mounted_prompt
from weakprompt import run
from weakprompt.adapters.testing import ScriptedAdapter, tool_call, tool_call_turn
from weakprompt.mcp import McpServer, McpToolset
from weakprompt.mcp._results import content_parts, tool_result
from weakprompt.messages import Message
from weakprompt.parts import DocumentPart, ImagePart, TextPart
from weakprompt.session import Session

pytestmark = pytest.mark.timeout(120)

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)
WAV = b"RIFF\x24\x00\x00\x00WAVEfmt "


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _media_server() -> Server[Any]:
    async def list_tools(_ctx: Any, _params: Any) -> mcp_types.ListToolsResult:
        schema = {"type": "object", "properties": {}}
        return mcp_types.ListToolsResult(tools=[mcp_types.Tool(name="screenshot", input_schema=schema)])

    async def call_tool(_ctx: Any, params: mcp_types.CallToolRequestParams) -> mcp_types.CallToolResult:
        return mcp_types.CallToolResult(
            content=[
                mcp_types.TextContent(type="text", text="the screen"),
                mcp_types.ImageContent(type="image", data=_b64(PNG), mime_type="image/png"),
                mcp_types.AudioContent(type="audio", data=_b64(WAV), mime_type="audio/wav"),
                mcp_types.EmbeddedResource(
                    type="resource",
                    resource=mcp_types.BlobResourceContents(
                        uri="file:///r.pdf", blob=_b64(b"%PDF-1.4"), mime_type="application/pdf"
                    ),
                ),
                mcp_types.EmbeddedResource(
                    type="resource", resource=mcp_types.TextResourceContents(uri="demo://t", text="inline")
                ),
            ]
        )

    return Server("media", on_list_tools=list_tools, on_call_tool=call_tool)


def _tool_messages(adapter: ScriptedAdapter) -> list[Message]:
    return [m for m in adapter.requests[1].context.messages if m.role == "tool"]


def test_mcp_image_audio_and_resource_content_become_parts_over_the_in_memory_server() -> None:
    async def main() -> ScriptedAdapter:
        async with McpToolset(McpServer.in_memory(_media_server())) as toolset:
            adapter = ScriptedAdapter([tool_call_turn(tool_call("screenshot", {}, id="c1")), "done"])
            await run(mounted_prompt(toolset), adapter=adapter, session=Session())
            return adapter

    [message] = _tool_messages(asyncio.run(main()))
    image, audio, pdf = message.parts[1:]
    assert message.parts[0] == TextPart(message.content)
    assert "the screen" in message.content and "inline" in message.content
    assert "[image image/png" in message.content  # the text names what follows
    assert image == ImagePart(media_type="image/png", data=PNG)
    assert audio == DocumentPart(media_type="audio/wav", data=WAV)
    assert pdf == DocumentPart(media_type="application/pdf", data=b"%PDF-1.4", name="file:///r.pdf")
    assert _b64(PNG)[:20] not in message.content


def test_media_in_structured_content_becomes_parts_and_bad_base64_stays_a_placeholder() -> None:
    structured = {
        "content": [
            {"type": "image", "data": _b64(PNG), "mimeType": "image/png"},
            {"type": "resource", "resource": {"uri": "x://b", "blob": _b64(b"\x00\x01")}},
            {"type": "audio", "data": "not base64!"},
        ]
    }
    result = tool_result("t", mcp_types.CallToolResult(content=[], structured_content=structured))
    assert result.parts == (
        ImagePart(media_type="image/png", data=PNG),
        DocumentPart(media_type="application/octet-stream", data=b"\x00\x01", name="x://b"),
    )
    assert "[image image/png" in result.message and "not base64" not in result.message
    assert content_parts([mcp_types.TextContent(type="text", text="x")]) == ()


def test_server_everything_get_tiny_image_reaches_the_model_as_an_image_part() -> None:
    async def main() -> ScriptedAdapter:
        server = McpServer.stdio(everything_command(), "stdio", name="everything")
        async with McpToolset(server) as toolset:
            adapter = ScriptedAdapter([tool_call_turn(tool_call("get-tiny-image", {}, id="c1")), "done"])
            await run(mounted_prompt(toolset), adapter=adapter, session=Session())
            return adapter

    [message] = _tool_messages(asyncio.run(main()))
    images = [part for part in message.parts if isinstance(part, ImagePart)]
    assert len(images) == 1 and images[0].media_type == "image/png"
    assert images[0].data is not None and images[0].data.startswith(b"\x89PNG")


def test_media_in_both_content_and_structured_content_is_taken_once_from_the_content() -> None:
    image = mcp_types.ImageContent(type="image", data=_b64(PNG), mime_type="image/png")
    structured = {"content": [{"type": "image", "data": _b64(PNG), "mimeType": "image/png"}]}
    result = tool_result("t", mcp_types.CallToolResult(content=[image], structured_content=structured))
    assert result.parts == (ImagePart(media_type="image/png", data=PNG),)
