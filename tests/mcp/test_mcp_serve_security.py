"""``weakprompt mcp serve --http``: Host and Origin checked on every bind, a token off loopback, approvals."""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from mcp import Client
from weakprompt.errors import ConfigurationError
from weakprompt.mcp import HttpGuard, PromptServer, is_loopback
from weakprompt.prompt import MarkdownSection, Prompt, PromptTemplate
from weakprompt.store import Store
from weakprompt.tools import ToolContext, ToolResult, tool
from weakprompt.transcript import Transcript

pytestmark = pytest.mark.timeout(120)

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = f"{ROOT / 'examples' / 'mcp_served_tools.py'}:prompt"
_INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "probe", "version": "1"},
    },
}
_ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def _free_port(host: str) -> int:
    with socket.socket() as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


def _serve(host: str, *extra: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    command = [
        sys.executable,
        "-c",
        "from weakprompt.cli import main; main()",
        "mcp",
        "serve",
        EXAMPLE,
        "--http",
    ]
    environment = {k: v for k, v in os.environ.items() if k != "WEAKPROMPT_MCP_TOKEN"}
    environment.update({"PYTHONPATH": str(ROOT / "src"), **(env or {})})
    return subprocess.Popen(
        [*command, "--host", host, *extra],
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.fixture
def served() -> Iterator[object]:
    started: list[subprocess.Popen[str]] = []

    def start(host: str, *extra: str, env: dict[str, str] | None = None) -> str:
        port = _free_port(host)
        process = _serve(host, "--port", str(port), *extra, env=env)
        started.append(process)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise AssertionError(f"the server exited: {process.communicate()[1]}")
            try:
                with socket.create_connection((host, port), timeout=0.1):
                    return f"http://{host}:{port}/mcp"
            except OSError:
                time.sleep(0.1)
        raise AssertionError("the server did not start")

    yield start
    for process in started:
        process.terminate()
        process.communicate(timeout=10)


def _post(url: str, **headers: str) -> httpx.Response:
    return httpx.post(url, json=_INITIALIZE, headers={**_ACCEPT, **headers}, timeout=10)


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2"])
def test_serve_refuses_a_foreign_host_or_origin_on_every_bind(served: object, host: str) -> None:
    url = served(host)  # type: ignore[operator]
    port = url.split(":")[2].split("/")[0]
    assert _post(url).status_code == 200
    assert _post(url, Origin=f"http://{host}:{port}").status_code == 200
    foreign_host = _post(url, Host="evil.example")
    assert foreign_host.status_code == 421 and "Host" in foreign_host.text
    rebound = _post(url, Host=f"evil.example:{port}")  # DNS rebinding: the name is the attacker's
    assert rebound.status_code == 421
    foreign_origin = _post(url, Origin="http://evil.example")
    assert foreign_origin.status_code == 403 and "Origin" in foreign_origin.text


def test_serve_accepts_configured_hosts_and_origins(served: object) -> None:
    url = served("127.0.0.2", "--allow-host", "tools.internal", "--allow-origin", "https://app.example")  # type: ignore[operator]
    assert _post(url, Host="tools.internal").status_code == 200
    assert _post(url, Origin="https://app.example").status_code == 200
    assert _post(url, Origin="http://tools.internal:9").status_code == 200
    assert _post(url, Origin="https://other.example").status_code == 403


def test_serve_with_a_token_refuses_requests_without_it(served: object) -> None:
    url = served("127.0.0.2", env={"WEAKPROMPT_MCP_TOKEN": "s3cret-token"})  # type: ignore[operator]
    missing = _post(url)
    assert missing.status_code == 401 and missing.headers["www-authenticate"] == "Bearer"
    assert _post(url, Authorization="Bearer wrong").status_code == 401
    assert _post(url, Authorization="Basic s3cret-token").status_code == 401
    assert _post(url, Authorization="Bearer s3cret-token").status_code == 200

    async def main() -> None:
        headers = {"Authorization": "Bearer s3cret-token"}
        async with _client(url, headers) as client:
            result = await client.call_tool("add_note", {"text": "x"})
            assert not result.is_error

    asyncio.run(main())


def _client(url: str, headers: dict[str, str]) -> Client:
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    return Client(streamable_http_client(url, http_client=httpx2.AsyncClient(headers=headers)), cache=None)


def test_serve_off_loopback_without_a_token_refuses_to_start() -> None:
    process = _serve("0.0.0.0", "--port", str(_free_port("127.0.0.1")))
    _, err = process.communicate(timeout=60)
    assert process.returncode != 0
    assert "not a loopback address" in err and "--token" in err and "--insecure" in err


def test_serve_off_loopback_with_insecure_warns(served: object) -> None:
    port = _free_port("127.0.0.1")
    process = _serve("0.0.0.0", "--port", str(port), "--insecure")
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.1):
                    break
            except OSError:
                time.sleep(0.1)
        assert _post(f"http://127.0.0.1:{port}/mcp").status_code == 200
        assert _post(f"http://127.0.0.1:{port}/mcp", Host="evil.example").status_code == 421
    finally:
        process.terminate()
        _, err = process.communicate(timeout=10)
    assert "without a token" in err


def test_the_guard_in_process() -> None:
    assert is_loopback("127.0.0.2") and is_loopback("[::1]") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.5") and not is_loopback("example")
    with pytest.raises(ConfigurationError, match="must not be empty"):
        HttpGuard.for_bind("127.0.0.1", token=" ")
    with pytest.raises(ConfigurationError, match="not a loopback address"):
        HttpGuard.for_bind("192.168.1.5")
    guard = HttpGuard.for_bind("::1")
    assert guard.refusal({"host": "[::1]:8000"}) is None
    assert guard.refusal({"host": "localhost"}) is None
    assert guard.refusal({}) == (421, "this server does not answer to that Host")
    assert guard.refusal({"host": "[::1"}) is not None
    assert guard.refusal({"host": "localhost", "origin": "http://[::1]:80"}) is None
    assert guard.refusal({"host": "localhost", "origin": "null"}) is not None
    assert guard.refusal({"host": "localhost", "origin": "http://[bad"}) is not None
    assert guard.refusal({"host": "localhost", "origin": "file://localhost"}) is not None
    lan = HttpGuard.for_bind("192.168.1.5", token="t", allowed_origins=["https://App.example/"])
    assert lan.hosts == {"192.168.1.5"}
    allowed = {"host": "192.168.1.5:80", "origin": "https://app.example", "authorization": "Bearer t"}
    assert lan.refusal(allowed) is None
    wide = HttpGuard.for_bind("0.0.0.0", token="t")
    assert socket.gethostname().lower() in wide.hosts and "127.0.0.1" in wide.hosts
    assert wide.refusal({"host": "127.0.0.1", "authorization": "Bearer t"}) is None


def test_the_guard_refuses_websockets_and_passes_lifespan() -> None:
    seen: list[str] = []
    sent: list[dict[str, object]] = []

    async def app(scope: dict[str, object], _receive: object, _send: object) -> None:
        seen.append(str(scope["type"]))

    async def receive() -> dict[str, object]:
        return {}

    async def send(message: dict[str, object]) -> None:
        sent.append(message)

    guarded = HttpGuard.for_bind("127.0.0.1").wrap(app)  # type: ignore[arg-type]

    async def main() -> None:
        await guarded({"type": "lifespan"}, receive, send)
        await guarded({"type": "websocket", "headers": [(b"host", b"127.0.0.1")]}, receive, send)

    asyncio.run(main())
    assert seen == ["lifespan"] and sent == [{"type": "websocket.close", "code": 1008}]


def test_the_insecure_guard_logs_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="weakprompt.mcp._http_guard"):
        HttpGuard.for_bind("0.0.0.0", insecure=True)
    assert "without a token" in caplog.text


# -- approval-gated tools over serve ----------------------------------------------------------------


@tool(name="wipe", description="Wipes everything.", requires_approval=True)
def _wipe(*, context: ToolContext) -> ToolResult[None]:
    return ToolResult(message="wiped")


def _gated_prompt() -> Prompt[None]:
    section = MarkdownSection(title="Gated", key="gated", template="Gated tools.", tools=[_wipe])
    return Prompt(PromptTemplate(ns="t", key="gated", sections=[section]))


def test_an_approval_gated_tool_over_serve_is_a_clear_error_and_is_recorded() -> None:
    store = Store.open("sqlite://")
    server = PromptServer(_gated_prompt(), store=store)

    async def main() -> str:
        async with Client(server.sdk_server, cache=None, mode="legacy") as client:
            result = await client.call_tool("wipe", {})
            assert result.is_error  # the old code answered JSON-RPC error code 0
            text = result.content[0].text  # type: ignore[union-attr]
            assert "needs a person's approval" in text and "was not run" in text
        [state] = list(server._sessions.values())  # pyright: ignore[reportPrivateUsage]
        return state.session.session_id

    session_id = asyncio.run(main())
    messages = Transcript(store, session_id).compile().messages
    assert [(m.name, m.is_error) for m in messages if m.role == "tool"] == [("wipe", True)]


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ([(b"host", b"evil.example")], 421),
        ([(b"host", b"127.0.0.1"), (b"origin", b"http://evil.example")], 403),
        ([(b"host", b"127.0.0.1")], 401),
        ([(b"host", b"127.0.0.1"), (b"authorization", b"Bearer t0ken")], 200),
    ],
)
def test_the_guard_answers_refused_requests_itself(headers: list[tuple[bytes, bytes]], status: int) -> None:
    sent: list[dict[str, object]] = []

    async def app(_scope: object, _receive: object, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})

    async def receive() -> dict[str, object]:
        return {}

    async def send(message: dict[str, object]) -> None:
        sent.append(message)

    guarded = HttpGuard.for_bind("127.0.0.1", token="t0ken").wrap(app)  # type: ignore[arg-type]
    asyncio.run(guarded({"type": "http", "headers": headers}, receive, send))  # type: ignore[arg-type]
    assert sent[0]["status"] == status
    if status == 401:
        assert (b"www-authenticate", b"Bearer") in sent[0]["headers"]  # type: ignore[operator]
