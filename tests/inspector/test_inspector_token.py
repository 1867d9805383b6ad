"""The inspector's token off loopback: who may read the store when the server listens beyond this machine.

Each test is named after the defect it guards against: an inspector bound
off loopback that served every transcript to anyone, a token that could be
skipped, guessed by its length or left in the address bar, and a printed
URL a person could not simply open. The real server runs on real sockets,
on 127.0.0.1 and 127.0.0.2 only (127.0.0.2 counts as off loopback by the
inspector's strict rule, and Linux still keeps it on this machine).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient
from starlette.websockets import WebSocketDisconnect

from inspector_support import build_store
from weakprompt.cli import cli
from weakprompt.cli.app import TOKEN_ENV, inspector_banner
from weakprompt.inspector import InspectorSettings, create_app
from weakprompt.inspector.access import TokenCheck, is_loopback_bind

TOKEN = "s3cret-token-for-tests-0123456789"
NO_ENV = {TOKEN_ENV: None}  # a token in the developer's environment must not change what is tested


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_store(tmp_path_factory.mktemp("token") / "store.db")


@pytest.fixture
def client(db: Path) -> Iterator[TestClient]:
    settings = InspectorSettings(token=TOKEN)
    with TestClient(create_app(str(db), settings=settings), base_url="http://127.0.0.1") as test_client:
        yield test_client


def _refused(page: httpx.Response) -> bool:
    """A 401 in plain text that shows nothing from the store."""
    return (
        page.status_code == 401
        and page.headers["content-type"].startswith("text/plain")
        and page.headers["www-authenticate"].startswith("Bearer")
        and "agent-run" not in page.text
        and "log-doctor" not in page.text
    )


# -- starting off loopback ---------------------------------------------------------------------------


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "127.0.0.2", "192.0.2.10", "inspector.lan"])
def test_an_off_loopback_bind_without_a_token_refuses_to_start(
    db: Path, host: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import uvicorn

    def never(self: uvicorn.Server) -> None:  # pragma: no cover - reached only by the defect
        raise AssertionError("the server started")

    monkeypatch.setattr(uvicorn.Server, "run", never)
    result = CliRunner(env=NO_ENV).invoke(cli, ["inspect", "--db", str(db), "--host", host])
    assert result.exit_code == 2, result.output
    assert "without a token" in result.output
    assert "--token" in result.output and TOKEN_ENV in result.output and "--insecure" in result.output


def test_insecure_off_loopback_starts_and_warns(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``--insecure`` on 127.0.0.2, through the real server: it warns, then serves with no token."""
    import uvicorn

    seen: dict[str, object] = {}

    async def main_loop(self: uvicorn.Server) -> None:
        port = self.servers[0].sockets[0].getsockname()[1]
        async with httpx.AsyncClient() as http:
            seen["page"] = await http.get(f"http://127.0.0.2:{port}/")

    monkeypatch.setattr(uvicorn.Server, "main_loop", main_loop)
    result = CliRunner(env=NO_ENV).invoke(
        cli,
        ["inspect", "--db", str(db), "--host", "127.0.0.2", "--port", "0", "--insecure"],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    assert "warning: --insecure" in result.stderr and "no token" in result.stderr
    assert re.search(r"on http://127\.0\.0\.2:\d+/ \(read-only", result.stdout)
    page = seen["page"]
    assert isinstance(page, httpx.Response) and page.status_code == 200 and "agent-run" in page.text


# -- with a token, through the real server -----------------------------------------------------------


def test_a_token_is_asked_of_every_request_and_the_printed_url_opens(
    db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On 127.0.0.1 with ``--token`` (a token given is required on loopback too), real sockets."""
    import uvicorn

    seen: dict[str, object] = {}

    async def main_loop(self: uvicorn.Server) -> None:
        port = self.servers[0].sockets[0].getsockname()[1]
        base = f"http://127.0.0.1:{port}"
        seen["port"] = port
        async with httpx.AsyncClient(base_url=base) as http:
            seen["none"] = await http.get("/session", params={"id": "agent-run"})
            wrong = "Bearer " + TOKEN[:-1] + "x"
            seen["wrong bearer"] = await http.get("/", headers={"Authorization": wrong})
            seen["wrong query"] = await http.get("/", params={"token": "not-the-token-at-all-0000"})
            seen["bearer"] = await http.get("/", headers={"Authorization": f"Bearer {TOKEN}"})
            seen["query"] = await http.get("/session", params={"id": "agent-run", "token": TOKEN})
            seen["cookie"] = await http.get("/session", params={"id": "agent-run"})  # the jar has it now
        async with httpx.AsyncClient(follow_redirects=True) as browser:  # a person opens the printed URL
            seen["opened"] = await browser.get(f"{base}/?token={TOKEN}")

    monkeypatch.setattr(uvicorn.Server, "main_loop", main_loop)
    result = CliRunner(env=NO_ENV).invoke(
        cli, ["inspect", "--db", str(db), "--port", "0", "--token", TOKEN], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    assert f"on http://127.0.0.1:{seen['port']}/?token={TOKEN} (read-only" in result.output

    responses = {key: value for key, value in seen.items() if isinstance(value, httpx.Response)}
    assert _refused(responses["none"]) and _refused(responses["wrong bearer"])
    assert _refused(responses["wrong query"])
    assert responses["bearer"].status_code == 200 and "agent-run" in responses["bearer"].text
    query = responses["query"]
    assert query.status_code == 303 and query.headers["location"] == "/session?id=agent-run"
    cookie = query.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=strict" in cookie and "path=/" in cookie
    assert TOKEN.lower() not in cookie  # the cookie holds a digest, not the token
    assert responses["cookie"].status_code == 200 and "log-doctor" in responses["cookie"].text
    opened = responses["opened"]
    assert opened.status_code == 200 and "agent-run" in opened.text and "token" not in str(opened.url)


def test_the_token_can_come_from_the_environment(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import uvicorn

    seen: dict[str, object] = {}

    async def main_loop(self: uvicorn.Server) -> None:
        seen["app"] = self.config.app

    monkeypatch.setattr(uvicorn.Server, "main_loop", main_loop)
    result = CliRunner(env={TOKEN_ENV: TOKEN}).invoke(
        cli, ["inspect", "--db", str(db), "--host", "127.0.0.2", "--port", "0"], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    assert "warning" not in result.output and f"?token={TOKEN}" in result.output
    with TestClient(seen["app"], base_url="http://127.0.0.2") as client:  # type: ignore[arg-type]
        assert _refused(client.get("/"))
        assert client.get("/", headers={"Authorization": f"bearer {TOKEN}"}).status_code == 200


def test_every_address_with_a_token_asks_for_it(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``--host 0.0.0.0 --token``: the app built for it (the server is not started: tests bind only 127.x)."""
    import uvicorn

    seen: dict[str, object] = {}

    def run(self: uvicorn.Server) -> None:
        seen["host"], seen["app"] = self.config.host, self.config.app

    monkeypatch.setattr(uvicorn.Server, "run", run)
    result = CliRunner(env=NO_ENV).invoke(
        cli, ["inspect", "--db", str(db), "--host", "0.0.0.0", "--token", TOKEN], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    assert seen["host"] == "0.0.0.0"
    with TestClient(seen["app"], base_url="http://127.0.0.1") as client:  # type: ignore[arg-type]
        assert _refused(client.get("/"))
        assert client.get("/", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200
        assert client.get("/", headers={"Host": "0.0.0.0"}).status_code == 421  # not a name to answer


def test_loopback_binds_without_a_token_are_unchanged(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import uvicorn

    seen: dict[str, object] = {}

    async def main_loop(self: uvicorn.Server) -> None:
        seen["app"] = self.config.app

    monkeypatch.setattr(uvicorn.Server, "main_loop", main_loop)
    result = CliRunner(env=NO_ENV).invoke(
        cli, ["inspect", "--db", str(db), "--host", "localhost", "--port", "0"], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    assert "token" not in result.output and "warning" not in result.output
    with TestClient(seen["app"], base_url="http://localhost") as client:  # type: ignore[arg-type]
        assert client.get("/").status_code == 200


def test_only_127_0_0_1_ipv6_loopback_and_localhost_count_as_loopback() -> None:
    for host in ("127.0.0.1", "::1", "[::1]", "localhost", "LocalHost"):
        assert is_loopback_bind(host), host
    for host in ("127.0.0.2", "127.1", "0.0.0.0", "::", "", "localhost.", "192.0.2.10", "::ffff:127.0.0.1"):
        assert not is_loopback_bind(host), host


# -- the token itself ------------------------------------------------------------------------------


def test_a_short_or_spaced_token_is_refused_where_it_is_given(db: Path) -> None:
    for bad, reason in (("short", "at least 16"), ("sixteen chars ok", "visible ASCII"), ("é" * 20, "ASCII")):
        with pytest.raises(ValueError, match=reason):
            InspectorSettings(token=bad)
    result = CliRunner(env=NO_ENV).invoke(cli, ["inspect", "--db", str(db), "--token", "short"])
    assert result.exit_code == 2 and "--token" in result.output and "at least 16" in result.output
    from_env = CliRunner(env={TOKEN_ENV: "short"}).invoke(cli, ["inspect", "--db", str(db)])
    assert from_env.exit_code == 2 and TOKEN_ENV in from_env.output


def test_the_token_is_not_in_the_settings_repr() -> None:
    assert TOKEN not in repr(InspectorSettings(token=TOKEN))


def test_the_printed_url_carries_the_token_quoted_and_escaped() -> None:
    odd = "tok&en=%/#?+" + "x" * 10
    (line,) = inspector_banner("127.0.0.1", [8765], odd)
    assert "http://127.0.0.1:8765/?token=tok%26en%3D%25%2F%23%3F%2Bxxxxxxxxxx " in line
    every, note = inspector_banner("::", [1, 2], TOKEN)
    assert f"http://[::1]:1/?token={TOKEN}, http://[::1]:2/?token={TOKEN}" in every
    assert "--allow-host" in note
    (hostile,) = inspector_banner("evil\x1b]52;c;x\x07", [1], None)
    assert "\x1b" not in hostile and "\x07" not in hostile and "\\x1b" in hostile


# -- how a request shows the token (the app on its own) ---------------------------------------------


def test_a_token_in_the_address_is_dropped_and_the_rest_of_the_query_kept(client: TestClient) -> None:
    moved = client.get("/session?id=agent-run&page=1&token=" + TOKEN, follow_redirects=False)
    assert moved.status_code == 303 and moved.headers["location"] == "/session?id=agent-run&page=1"
    assert moved.headers["referrer-policy"] == "no-referrer" and moved.headers["cache-control"] == "no-store"
    # a path of two slashes must not turn into a link to another site
    away = client.get("http://127.0.0.1//evil.example/?token=" + TOKEN, follow_redirects=False)
    assert away.status_code == 303 and away.headers["location"] == "/evil.example/"
    empty = client.get("/?token=", follow_redirects=False)
    assert _refused(empty) and "not this inspector's" in empty.text


def test_other_schemes_and_forged_cookies_are_refused(client: TestClient) -> None:
    assert _refused(client.get("/", headers={"Authorization": f"Basic {TOKEN}"}))
    assert _refused(client.get("/", headers={"Authorization": "Bearer"}))
    assert _refused(client.get("/", headers={"Authorization": "Bearer é".encode("latin-1")}))
    client.get("/?token=" + TOKEN)  # the jar now holds the right cookie's name
    (name,) = client.cookies.keys()
    client.cookies.clear()
    client.cookies.set(name, "0" * 64)
    assert _refused(client.get("/"))
    client.cookies.clear()
    client.cookies.set("weakprompt_inspector_000000000000", TOKEN)
    assert _refused(client.get("/"))


def test_the_host_check_comes_before_the_token(client: TestClient) -> None:
    page = client.get("/", headers={"Host": "evil.example", "Authorization": f"Bearer {TOKEN}"})
    assert page.status_code == 421


def test_a_websocket_needs_the_token_too() -> None:
    """The inspector serves no websocket; the check in front of one that does refuses the handshake."""
    from starlette.types import Receive, Scope, Send
    from starlette.websockets import WebSocket

    async def echo(scope: Scope, receive: Receive, send: Send) -> None:
        socket = WebSocket(scope, receive, send)
        await socket.accept()
        await socket.send_text("in")
        await socket.close()

    client = TestClient(TokenCheck(echo, token=TOKEN), base_url="http://127.0.0.1")  # no lifespan
    for path in ("/", "/?token=not-the-token-at-all-0000"):
        with pytest.raises(WebSocketDisconnect) as refused, client.websocket_connect(path):
            pass  # pragma: no cover - the handshake is refused
        assert refused.value.code == 1008
    with client.websocket_connect(f"/?token={TOKEN}") as socket:
        assert socket.receive_text() == "in"
    with client.websocket_connect("/", headers={"Authorization": f"Bearer {TOKEN}"}) as socket:
        assert socket.receive_text() == "in"
