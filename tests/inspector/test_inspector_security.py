"""The inspector's hardening: whom it answers, what it says it listens on, and pages that stay whole.

Each test is named after the defect it guards against: a Host check that
lets a rebinding domain read the store, ``--port 0`` printing port 0,
``/outputs`` of an unknown session answering 200, one damaged row failing
the whole list, a 5,000-turn session page of a megabyte, the list of
10,000 sessions, and approvals that neither the inspector nor the
terminal showed.
"""

from __future__ import annotations

import contextlib
import html
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient

from approval_support import make_prompt, pause_again, script
from inspector_support import build_store, write_plain_sessions
from weakprompt.adapters.testing import ScriptedAdapter
from weakprompt.cli import cli
from weakprompt.inspector import InspectorSettings, create_app
from weakprompt.inspector.charts import MAX_BARS, UsagePoint, usage_chart
from weakprompt.inspector.hosts import allowed_host, host_name
from weakprompt.runtime import Approve, Deny, evaluate, paused_run, resume_sync
from weakprompt.runtime.pause_records import read_pauses, stored_pauses
from weakprompt.session import Session
from weakprompt.store import Store

LOCAL = "http://127.0.0.1"


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_store(tmp_path_factory.mktemp("security") / "store.db")


@pytest.fixture
def client(db: Path) -> Iterator[TestClient]:
    with TestClient(create_app(str(db)), base_url=LOCAL) as test_client:
        yield test_client


def _text(html: str) -> str:
    import html as html_module

    return " ".join(html_module.unescape(re.sub(r"<[^>]+>", " ", html)).split())


# -- Host and Origin --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "host",
    ["attacker.example", "attacker.example:8765", "127.0.0.1.attacker.example", "localhost.", "", "[::1"],
)
def test_a_rebinding_host_is_refused_and_reads_nothing(client: TestClient, host: str) -> None:
    for path in ("/", "/session?id=agent-run", "/outputs?session=tiny", "/output/raw?session=tiny&seq=0"):
        page = client.get(path, headers={"Host": host})
        assert page.status_code == 421, (path, host)
        assert page.headers["content-type"].startswith("text/plain")
        assert "agent-run" not in page.text and "log-doctor" not in page.text
        assert "--allow-host" in page.text


@pytest.mark.parametrize(
    "host", ["127.0.0.1", "127.0.0.1:8765", "localhost", "LOCALHOST:80", "[::1]", "[::1]:8765"]
)
def test_loopback_hosts_are_answered(client: TestClient, host: str) -> None:
    page = client.get("/", headers={"Host": host})
    assert page.status_code == 200 and "agent-run" in page.text


def test_allow_host_adds_a_name_and_only_that_name(db: Path) -> None:
    settings = InspectorSettings(allowed_hosts=("inspector.lan:9000", "fe80::1"))
    with TestClient(create_app(str(db), settings=settings), base_url="http://inspector.lan") as client:
        assert client.get("/").status_code == 200
        assert client.get("/", headers={"Host": "inspector.lan:1234"}).status_code == 200
        assert client.get("/", headers={"Host": "[fe80::1]:80"}).status_code == 200
        assert client.get("/", headers={"Host": "other.lan"}).status_code == 421
        assert client.get("/", headers={"Host": "localhost"}).status_code == 200


def test_a_bad_allow_host_name_is_refused_where_it_is_given(db: Path) -> None:
    with pytest.raises(ValueError, match="not a host name"):
        InspectorSettings(allowed_hosts=("http://x/",))
    result = CliRunner().invoke(cli, ["inspect", "--db", str(db), "--allow-host", "a b"])
    assert result.exit_code == 2 and "--allow-host" in result.output and "not a host name" in result.output


def test_host_header_parsing() -> None:
    assert host_name("LocalHost:80") == "localhost"
    assert host_name("[::1]:8765") == "::1"
    assert host_name("[::1]") == "::1"
    for bad in ("", ":80", "host:", "host:x", "host:80:90", "[::1", "[::1]x", "host:٣"):
        assert host_name(bad) is None, bad
    assert allowed_host("[::1]") == "::1" and allowed_host("fe80::1") == "fe80::1"
    assert allowed_host("Example.COM:8080") == "example.com"


def test_a_post_from_another_origin_is_refused(client: TestClient) -> None:
    refused = client.post("/", headers={"Origin": "http://attacker.example"})
    assert refused.status_code == 403 and "another origin" in refused.text
    assert client.post("/", headers={"Origin": "null"}).status_code == 403
    assert client.post("/", headers={"Origin": "http://[::1"}).status_code == 403  # not even a URL
    # the inspector has nothing to post to: a request from its own origin (or none) is just not allowed
    assert client.post("/", headers={"Origin": "http://127.0.0.1:8765"}).status_code == 405
    assert client.post("/").status_code == 405
    assert client.get("/", headers={"Origin": "http://attacker.example"}).status_code == 200


def test_a_websocket_to_a_foreign_host_is_closed(db: Path) -> None:
    from starlette.websockets import WebSocketDisconnect

    with TestClient(create_app(str(db)), base_url=LOCAL) as client:
        with (
            pytest.raises(WebSocketDisconnect),
            client.websocket_connect("/", headers={"Host": "evil.example"}),
        ):
            pass  # pragma: no cover - the handshake is refused


# -- weakprompt inspect --port 0 --------------------------------------------------------------------


def test_port_0_prints_the_port_it_listens_on(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The real server on a real socket: the printed URL is where it answers, and it checks Host."""
    import uvicorn

    seen: dict[str, object] = {}

    async def main_loop(self: uvicorn.Server) -> None:  # instead of waiting for Ctrl-C
        port = self.servers[0].sockets[0].getsockname()[1]
        async with httpx.AsyncClient() as http:
            seen["port"] = port
            seen["ok"] = await http.get(f"http://127.0.0.1:{port}/")
            seen["foreign"] = await http.get(f"http://127.0.0.1:{port}/", headers={"Host": "evil.example"})

    monkeypatch.setattr(uvicorn.Server, "main_loop", main_loop)
    result = CliRunner().invoke(cli, ["inspect", "--db", str(db), "--port", "0"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    printed = re.search(r"weakprompt inspector on http://127\.0\.0\.1:(\d+)/ \(read-only", result.output)
    assert printed is not None, result.output
    assert int(printed.group(1)) == seen["port"] != 0
    ok, foreign = seen["ok"], seen["foreign"]
    assert isinstance(ok, httpx.Response) and ok.status_code == 200 and "agent-run" in ok.text
    assert isinstance(foreign, httpx.Response) and foreign.status_code == 421


def test_every_address_prints_a_loopback_url_and_says_names_need_allow_host() -> None:
    """What ``--host 0.0.0.0`` prints once it listens (tests bind only 127.x addresses: the banner alone)."""
    from weakprompt.cli.app import inspector_banner

    url, note = inspector_banner("0.0.0.0", [8765], None)
    assert re.search(r"on http://127\.0\.0\.1:8765/ \(read-only", url)
    assert "--allow-host" in note


# -- pages that stay whole ---------------------------------------------------------------------------


def test_outputs_of_an_unknown_session_is_404(client: TestClient) -> None:
    page = client.get("/outputs", params={"session": "no-such-session"})
    assert page.status_code == 404 and "no-such-session" in _text(page.text)
    assert client.get("/outputs", params={"session": "tiny"}).status_code == 200


def _damaged(db: Path, tmp_path: Path, sql: str) -> Path:
    copy = tmp_path / "damaged.db"
    copy.write_bytes(db.read_bytes())
    with contextlib.closing(sqlite3.connect(copy)) as conn, conn:
        conn.execute(sql)
    return copy


def test_a_non_numeric_seq_is_marked_and_the_rest_is_shown(db: Path, tmp_path: Path) -> None:
    copy = _damaged(db, tmp_path, "UPDATE commits SET seq = 'x3' WHERE session_id = 'ran-out' AND seq = 3")
    with TestClient(create_app(str(copy)), base_url=LOCAL) as client:
        listing = client.get("/")
        session = client.get("/session", params={"id": "ran-out"})
    assert listing.status_code == 200
    rows = dict(re.findall(r'<tr data-session="([^"]+)">(.*?)</tr>', listing.text, re.S))
    assert set(rows) == {"tiny", "ran-out", "edited-later", "agent-run"}
    assert "1 damaged row" in _text(rows["ran-out"]) and "seq 'x3'" in html.unescape(rows["ran-out"])
    assert "damaged" not in _text(rows["agent-run"])
    assert session.status_code == 200
    text = _text(session.text)
    assert "1 commit row cannot be read" in text and "seq 'x3' is not a whole number" in text
    assert "Turn 1" in text
    terminal = CliRunner().invoke(cli, ["transcript", "show", "--db", str(copy)], catch_exceptions=False)
    assert terminal.exit_code == 0, terminal.output
    assert "1 damaged row(s): commit" in terminal.output and "'x3' is not a whole number" in terminal.output


def test_a_session_whose_every_row_is_damaged_still_gets_a_page(db: Path, tmp_path: Path) -> None:
    sql = "UPDATE commits SET token_count = 'many' WHERE session_id = 'tiny'"
    copy = _damaged(db, tmp_path, sql)
    with TestClient(create_app(str(copy)), base_url=LOCAL) as client:
        listing = client.get("/")
        session = client.get("/session", params={"id": "tiny"})
    assert listing.status_code == 200 and "5 damaged rows" in _text(listing.text)
    assert session.status_code == 200 and "token_count 'many' is not a whole number" in _text(session.text)


def test_a_5000_turn_session_page_is_small_paged_and_its_chart_bounded(tmp_path: Path) -> None:
    path = tmp_path / "long.db"
    with Store.open(path) as store:
        write_plain_sessions(store, {"long": 5000})
    with TestClient(create_app(str(path)), base_url=LOCAL) as client:
        first = client.get("/session", params={"id": "long"})
        last = client.get("/session", params={"id": "long", "page": 100})
    assert first.status_code == 200 and last.status_code == 200
    assert len(first.content) < 200_000, len(first.content)
    assert "page 1 of 100" in first.text and 'rel="next"' in first.text
    assert first.text.count('<section class="turn card"') == 50
    assert first.text.count('<rect class="in"') == MAX_BARS
    assert "each bar: 25 turns" in first.text and "turns 1 to 25: 2,500 in, 175 out" in first.text
    assert 'id="turn-5000"' in last.text and 'rel="prev"' in last.text


def test_the_chart_draws_one_bar_a_turn_up_to_its_cap() -> None:
    points = [UsagePoint(n, 10, 1, href=f"?page=1#turn-{n}") for n in range(1, 8)]
    assert usage_chart(points).count('<rect class="in"') == 7
    grouped = usage_chart(points, max_bars=3)
    assert (
        grouped.count('<rect class="in"') == 3
        and "turns 7 to 7" not in grouped
        and "turn 7: 10 in" in grouped
    )


def test_the_session_list_pages_through_10000_sessions(tmp_path: Path) -> None:
    path = tmp_path / "many.db"
    with Store.open(path) as store:
        write_plain_sessions(store, {f"s-{n:05d}": 1 for n in range(10_000)})
    with TestClient(create_app(str(path)), base_url=LOCAL) as client:
        first = client.get("/")
        last = client.get("/", params={"page": 200})
        beyond = client.get("/", params={"page": 5000}, follow_redirects=False)
        filtered = client.get("/", params={"q": "s-0999", "page": 1})
    assert first.status_code == 200 and "10000 sessions" in first.text
    assert "page 1 of 200" in first.text and 'rel="next"' in first.text
    firsts = re.findall(r'<tr data-session="([^"]+)">', first.text)
    assert firsts[0] == "s-09999" and len(firsts) == 50
    lasts = re.findall(r'<tr data-session="([^"]+)">', last.text)
    assert lasts[-1] == "s-00000" and len(lasts) == 50 and "page 200 of 200" in last.text
    assert beyond.status_code == 303 and beyond.headers["location"] == "/?page=200"
    assert re.findall(r'<tr data-session="([^"]+)">', filtered.text)[0] == "s-09999"


# -- approvals ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def approvals_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Session ``s1``: pause 1 decided by alice (c2 approved, c3 denied), pause 2 waiting on c4."""
    path = tmp_path_factory.mktemp("approvals") / "runs.db"
    with Store.open(path) as store:
        evaluate(
            make_prompt(), adapter=ScriptedAdapter(script()), session=Session(session_id="s1"), store=store
        )
        first = paused_run(store, "s1")
        assert first is not None
        tokens = {p.call_id: p.token for p in first.pending}
        resume_sync(
            store,
            "s1",
            [Approve("c2", tokens["c2"]), Deny("c3", tokens["c3"], "keep b.txt")],
            prompt=make_prompt(),
            adapter=pause_again(),
            decided_by="alice",
        )
    return path


def test_the_inspector_shows_who_decided_each_call_and_what_waits(approvals_db: Path) -> None:
    with Store.open(approvals_db, read_only=True) as store:
        waiting = paused_run(store, "s1")
        pauses = stored_pauses(store, "s1")
    assert waiting is not None and [p.call_id for p in waiting.pending] == ["c4"]
    token = waiting.pending[0].token
    with TestClient(create_app(str(approvals_db)), base_url=LOCAL) as client:
        page = client.get("/session", params={"id": "s1"})
    assert page.status_code == 200
    sections = dict(
        re.findall(r'<section class="card pause" id="pause-(\d+)".*?>(.*?)</section>', page.text, re.S)
    )
    decided, open_pause = _text(sections["1"]), _text(sections["2"])
    resumed_at = pauses[0].decided_at
    assert resumed_at is not None
    assert "decided by alice at" in decided and resumed_at[:10] in decided
    assert "c2 delete_file approve" in decided and "c3 delete_file deny keep b.txt" in decided
    assert "waiting for approval" in open_pause and "c4" in open_pause and token in open_pause
    calls = dict(
        re.findall(r'<details class="call[^"]*" data-call="([^"]+)"[^>]*>(.*?)</details>', page.text, re.S)
    )
    assert "approved by alice" in _text(calls["c2"]) and "denied by alice" in _text(calls["c3"])
    assert "message: keep b.txt" in _text(calls["c3"])
    assert "waiting for approval" in _text(calls["c4"]) and token in calls["c4"]


def test_transcript_show_prints_decisions_and_the_waiting_token(approvals_db: Path) -> None:
    with Store.open(approvals_db, read_only=True) as store:
        waiting = paused_run(store, "s1")
    assert waiting is not None
    result = CliRunner().invoke(
        cli, ["transcript", "show", "--db", str(approvals_db), "--session", "s1"], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    out = result.output
    assert "decision approved by alice" in out and "decision denied by alice" in out
    assert "message: keep b.txt" in out
    assert re.search(r"pause 1 decided by alice at \d{4}-\d\d-\d\d", out)
    assert "approve c2 delete_file" in out and "deny c3 delete_file: keep b.txt" in out
    assert "PAUSED (pause 2)" in out and "pending c4 delete_file" in out
    assert "waiting for approval" in out and f"token={waiting.pending[0].token}" in out


def test_an_edited_approval_shows_both_argument_sets(tmp_path: Path) -> None:
    path = tmp_path / "edited.db"
    with Store.open(path) as store:
        evaluate(
            make_prompt(), adapter=ScriptedAdapter(script()), session=Session(session_id="e"), store=store
        )
        first = paused_run(store, "e")
        assert first is not None
        tokens = {p.call_id: p.token for p in first.pending}
        decisions = [Approve("c2", tokens["c2"], {"path": "/tmp/z.txt"}), Approve("c3", tokens["c3"])]
        resume_sync(store, "e", decisions, prompt=make_prompt(), adapter=ScriptedAdapter(script()[1:]))
    result = CliRunner().invoke(cli, ["transcript", "show", "--db", str(path), "--session", "e"])
    assert "decision approved with edits by (not recorded)" in result.output
    assert 'asked for {"path": "/tmp/a.txt"}' in result.output
    assert 'approved  {"path": "/tmp/z.txt"}' in result.output
    assert "pause 1 decided by (not recorded)" in result.output
    assert 'approve with edits c2 delete_file: arguments {"path": "/tmp/z.txt"}' in result.output
    with TestClient(create_app(str(path)), base_url=LOCAL) as client:
        page = _text(client.get("/session", params={"id": "e"}).text)
    assert "approved with edits by (not recorded)" in page and "arguments approved" in page


def test_damaged_pause_rows_are_shown_as_damaged(approvals_db: Path, tmp_path: Path) -> None:
    copy = tmp_path / "bad-pause.db"
    copy.write_bytes(approvals_db.read_bytes())
    with contextlib.closing(sqlite3.connect(copy)) as conn, conn:
        conn.execute("UPDATE paused_runs SET pending_json = 'nope', decisions_json = '[{}]' WHERE seq = 1")
        conn.execute('UPDATE paused_runs SET pending_json = \'[{"kind": "magic"}]\' WHERE seq = 2')
        supplied = '[{"decision": "supply", "call_id": "c9", "token": "t", "result": "42", "is_error": true}]'
        conn.execute(
            "INSERT INTO paused_runs (session_id, seq, status, pending_json, state_json, decisions_json,"
            " created_at) VALUES ('s1', 3, 'resumed', '[]', '{}', ?, 'x')",
            (supplied,),
        )
    with Store.open(copy, read_only=True) as store, store.read() as conn:
        pauses = read_pauses(conn, "s1")
    assert pauses[0].problem is not None and "pending calls cannot be read" in pauses[0].problem
    assert "decisions cannot be read" in pauses[0].problem
    assert pauses[2].decided[0].detail == "an error result: 42"
    with TestClient(create_app(str(copy)), base_url=LOCAL) as client:
        page = client.get("/session", params={"id": "s1"})
    assert page.status_code == 200 and "this pause is damaged" in page.text
    shown = CliRunner().invoke(cli, ["transcript", "show", "--db", str(copy), "--session", "s1"])
    assert "damaged: the pending calls cannot be read" in shown.output
    assert "supply c9 : an error result: 42" in shown.output
    listing = CliRunner().invoke(cli, ["transcript", "show", "--db", str(copy)], catch_exceptions=False)
    assert listing.exit_code == 0 and "PAUSED (0 pending)" in listing.output


def test_a_store_without_paused_runs_has_no_pauses(tmp_path: Path) -> None:
    path = tmp_path / "plain.db"
    with Store.open(path) as store:
        write_plain_sessions(store, {"p": 1})
    with contextlib.closing(sqlite3.connect(path)) as conn, conn:
        conn.execute("DROP TABLE paused_runs")
    import sqlalchemy

    engine = sqlalchemy.create_engine(f"sqlite:///{path}")
    with engine.connect() as conn:
        assert read_pauses(conn, "p") == ()
    engine.dispose()
