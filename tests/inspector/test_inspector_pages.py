"""The inspector's pages through Starlette's TestClient, over a store the real loop wrote.

Each page shows what the store holds (asserted on the HTML), and every bad
input (an unknown session, output or tool set, a bad parameter, a damaged
stored output, an older schema, a database error) is a readable page with
the right status, never a crash, and the store is never written.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import sqlite3
import zlib
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from inspector_support import NEEDLE, SPAN_ID, TINY_OUTPUT, TRACE_ID, build_store
from weakprompt.errors import StoreError
from weakprompt.inspector import InspectorSettings, PausedRuns, create_app
from weakprompt.store import Store

pytest.importorskip("starlette")

LOCAL = "http://127.0.0.1"  # the inspector answers loopback names only (TestClient's default is "testserver")


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_store(tmp_path_factory.mktemp("inspector") / "store.db")


@pytest.fixture
def client(db: Path) -> TestClient:
    with TestClient(create_app(str(db)), base_url=LOCAL) as test_client:
        yield test_client


def _text(html: str) -> str:
    """The page's text, tags removed and whitespace folded, for plain assertions."""
    import html as html_module

    return " ".join(html_module.unescape(re.sub(r"<[^>]+>", " ", html)).split())


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_sessions_list_shows_time_prompt_turns_tokens_and_status(client: TestClient) -> None:
    page = client.get("/")
    assert page.status_code == 200
    rows = re.findall(r'<tr data-session="([^"]+)">(.*?)</tr>', page.text, re.S)
    assert [name for name, _ in rows] == ["tiny", "ran-out", "edited-later", "agent-run"]  # newest first
    cells = {name: _text(row) for name, row in rows}
    assert "log-doctor" in cells["agent-run"] and "finished" in cells["agent-run"]
    assert " 4 " in cells["agent-run"]  # four model turns
    assert "looper" in cells["ran-out"] and "failed" in cells["ran-out"]
    assert "You search code." in cells["edited-later"]  # no prompt name stored: the system text
    assert "126 (110 / 16)" in cells["edited-later"]  # tokens from the stored usage
    assert "4 sessions" in _text(page.text)


def test_sessions_list_filters_by_text_and_pages(db: Path) -> None:
    settings = InspectorSettings(sessions_per_page=2)
    with TestClient(create_app(str(db), settings=settings), base_url=LOCAL) as client:
        found = client.get("/", params={"q": "LOG-doc"})
        assert re.findall(r'data-session="([^"]+)"', found.text) == ["agent-run"]
        assert "matching “LOG-doc”" in _text(found.text)
        none = client.get("/", params={"q": "no such thing"})
        assert "no sessions match this filter" in _text(none.text)
        first = client.get("/")
        assert re.findall(r'data-session="([^"]+)"', first.text) == ["tiny", "ran-out"]
        assert "page 1 of 2" in _text(first.text)
        second = client.get("/", params={"page": 2})
        assert re.findall(r'data-session="([^"]+)"', second.text) == ["edited-later", "agent-run"]


def test_session_page_shows_turns_calls_edits_outputs_and_extractions(client: TestClient) -> None:
    page = client.get("/session", params={"id": "agent-run"})
    assert page.status_code == 200
    text = _text(page.text)
    assert "log-doctor" in text and "finished" in text
    assert [int(n) for n in re.findall(r'id="turn-(\d+)"', page.text)] == [1, 2, 3, 4]
    # Turn 1: the hook's summary as a diff against the tool's output, with its provenance.
    assert "rewritten by a hook before it was committed" in text
    assert "triggered by tool_summarization:instructions" in text
    assert "summarizer scripted:agent" in text
    assert '<div class="del">- [0000] INFO compiled module_0.py</div>' in page.text
    # The failing tool's error result, and its arguments.
    probe = re.search(r'<details class="call error" data-call="call-probe".*?</details>', page.text, re.S)
    assert probe is not None and "probe backend unreachable" in probe.group(0)
    # Turn 2: an oversized output behind its handle, with size, summary and links.
    assert "behind a handle" in text
    assert "read_log: 6000 lines, 238884 bytes" in text
    assert re.search(r'href="/output/raw\?session=agent-run&amp;seq=2"', page.text)
    # Turn 3: tool_output joins the tool set; the extraction names strategy and fallback.
    assert "changed: +tool_output" in text
    extraction = re.search(r'<div class="extraction card">.*?</div>', page.text, re.S)
    assert extraction is not None
    assert "read-grep" in extraction.group(0) and "every ERROR line, verbatim" in extraction.group(0)
    assert 'class="follow-extraction" href="/output?session=agent-run&amp;seq=2"' in page.text
    # Usage per turn is drawn (one bar pair per turn).
    assert page.text.count('<rect class="in"') == 4
    assert "The nightly run failed: disk full on /var/db." in text


def test_session_page_shows_later_edits_trace_ids_and_tool_set_changes(db: Path) -> None:
    settings = InspectorSettings(trace_url="http://traces.example/trace/{trace_id}")
    with TestClient(create_app(str(db), settings=settings), base_url=LOCAL) as client:
        page = client.get("/session", params={"id": "edited-later"})
    text = _text(page.text)
    assert "edited later (commit #4)" in text and "triggered by tests:manual-trim" in text
    assert '<div class="del">- docs/changelog.md:1: mentions login</div>' in page.text
    assert f'<a href="http://traces.example/trace/{TRACE_ID}">{TRACE_ID}</a>' in page.text
    assert f"span {SPAN_ID}" in text
    assert "first tool set of the session" in text and "changed: +read" in text
    # The result shows its newest version.
    assert re.search(r'<pre class="result">src/app/auth.py:88: def login\(user, password\):</pre>', page.text)


def test_session_page_pages_long_sessions(db: Path) -> None:
    with TestClient(
        create_app(str(db), settings=InspectorSettings(turns_per_page=3)), base_url=LOCAL
    ) as client:
        first = client.get("/session", params={"id": "agent-run"})
        second = client.get("/session", params={"id": "agent-run", "page": 2})
        beyond = client.get("/session", params={"id": "agent-run", "page": 9})
    assert re.findall(r'id="turn-(\d+)"', first.text) == ["1", "2", "3"]
    assert re.findall(r'id="turn-(\d+)"', second.text) == ["4"]
    assert re.findall(r'id="turn-(\d+)"', beyond.text) == ["4"]  # clamped to the last page
    assert "page 1 of 2" in _text(first.text)
    assert 'href="?page=2#turn-4"' in first.text  # the chart links every turn to its page


def test_outputs_page_and_output_detail(client: TestClient) -> None:
    listing = client.get("/outputs", params={"session": "agent-run"})
    assert listing.status_code == 200
    text = _text(listing.text)
    assert "3 stored outputs" in text
    assert "read_log: 6000 lines, 238884 bytes" in text and "flaky_probe failed" in text
    detail = client.get("/output", params={"session": "agent-run", "seq": 2})
    text = _text(detail.text)
    assert "Stored output #2 read_log" in text
    assert "a handle (the output was too large)" in text
    assert "kept as zlib" in text
    assert "strategy read-grep" in text and "fallback none" in text
    assert NEEDLE in text  # the extraction's answer
    empty = client.get("/outputs", params={"session": "edited-later"})
    assert "this session has no stored outputs" in _text(empty.text)


def test_a_commit_link_leads_to_the_turn_that_shows_it(db: Path) -> None:
    with TestClient(
        create_app(str(db), settings=InspectorSettings(turns_per_page=2)), base_url=LOCAL
    ) as client:
        detail = client.get("/output", params={"session": "agent-run", "seq": 2})
        link = re.search(r'class="extraction-commit" href="([^"]+)"', detail.text)
        assert link is not None
        moved = client.get(link.group(1).replace("&amp;", "&"), follow_redirects=False)
        assert moved.status_code == 303
        assert moved.headers["location"] == "/session?page=2&id=agent-run#turn-3"
        # An edit leads to where its original is shown.
        later = client.get("/session", params={"id": "edited-later"})
        edit = re.search(r'data-edit="([0-9a-f]{12})"', later.text)
        assert edit is not None
        from weakprompt.store import Store as _Store

        with _Store.open(db, read_only=True) as store, store.read() as conn:
            full = conn.exec_driver_sql(
                "SELECT hash FROM commits WHERE operation = 'EDIT' AND session_id = 'edited-later'"
            ).scalar_one()
        moved = client.get(
            "/session/commit", params={"id": "edited-later", "hash": full}, follow_redirects=False
        )
        assert moved.headers["location"] == "/session?page=1&id=edited-later#turn-1"
        unknown = client.get("/session/commit", params={"id": "agent-run", "hash": "f" * 64})
        assert unknown.status_code == 404 and "has no commit" in _text(unknown.text)


def test_full_output_is_streamed_exactly(client: TestClient) -> None:
    from inspector_support import NIGHTLY_LOG

    with client.stream("GET", "/output/raw", params={"session": "agent-run", "seq": 2}) as response:
        assert response.status_code == 200
        assert response.headers["content-length"] == str(len(NIGHTLY_LOG.encode()))
        body = b"".join(response.iter_bytes())
    assert body == NIGHTLY_LOG.encode()


def test_tool_set_page_lists_tools_and_sessions(client: TestClient) -> None:
    session = client.get("/session", params={"id": "agent-run"})
    set_hash = re.search(r'href="/toolset/([0-9a-f]{64})"', session.text)
    assert set_hash is not None
    page = client.get(f"/toolset/{set_hash.group(1)}")
    text = _text(page.text)
    assert page.status_code == 200
    assert "read_log" in text and "Read a log by name: build or nightly." in text
    assert "flaky_probe" in text and '"properties"' in text
    assert "agent-run" in text


@pytest.mark.parametrize(
    ("url", "params", "status", "says"),
    [
        ("/session", {"id": "nope"}, 404, "this store has no session 'nope'"),
        ("/session", {}, 400, "the 'id' query parameter is missing"),
        ("/session", {"id": "agent-run", "page": "0"}, 400, "page must be a whole number from 1 up, got '0'"),
        ("/", {"page": "two"}, 400, "page must be a whole number from 1 up, got 'two'"),
        ("/output", {"session": "agent-run", "seq": "x"}, 400, "seq must be a whole number from 0 up"),
        ("/output", {"session": "agent-run", "seq": "99"}, 404, "has no stored output #99"),
        ("/output/raw", {"session": "nope", "seq": "0"}, 404, "session 'nope' has no stored output #0"),
        ("/toolset/abc", {}, 404, "this store has no tool set 'abc'"),
        ("/session/commit", {"id": "agent-run"}, 400, "the 'hash' query parameter is missing"),
        ("/no/such/page", {}, 404, "no page at '/no/such/page'"),
    ],
)
def test_bad_requests_get_readable_pages(
    client: TestClient, url: str, params: dict[str, str], status: int, says: str
) -> None:
    page = client.get(url, params=params)
    assert page.status_code == status
    assert page.headers["content-type"].startswith("text/html")
    assert says in _text(page.text)
    assert "the store was not changed" in _text(page.text)


def _damaged_copy(db: Path, tmp_path: Path, damage: str) -> Path:
    """A copy of the store whose compressed 'tiny' payload is damaged in one way."""
    copy = tmp_path / f"{damage}.db"
    copy.write_bytes(db.read_bytes())
    digest = hashlib.sha256(TINY_OUTPUT.encode()).hexdigest()
    with contextlib.closing(sqlite3.connect(copy)) as conn, conn:
        (data, encoding) = conn.execute(
            "SELECT data, encoding FROM tool_output_blobs WHERE hash = ?", (digest,)
        ).fetchone()
        assert encoding == "zlib"
        if damage == "garbage":
            conn.execute(
                "UPDATE tool_output_blobs SET data = ? WHERE hash = ?", (b"\x00not zlib" * 9, digest)
            )
        elif damage == "cut":
            conn.execute(
                "UPDATE tool_output_blobs SET data = ?, stored_bytes = ? WHERE hash = ?",
                (data[: len(data) // 2], len(data) // 2, digest),
            )
        elif damage == "other-bytes":
            other = zlib.compress(TINY_OUTPUT.upper().encode())
            conn.execute(
                "UPDATE tool_output_blobs SET data = ?, stored_bytes = ? WHERE hash = ?",
                (other, len(other), digest),
            )
        elif damage == "encoding":
            conn.execute("UPDATE tool_output_blobs SET encoding = 'lz4' WHERE hash = ?", (digest,))
        else:
            change = 1 if damage == "size" else -1
            conn.execute(
                "UPDATE tool_output_blobs SET size_bytes = size_bytes + ? WHERE hash = ?", (change, digest)
            )
    return copy


@pytest.mark.parametrize(
    ("damage", "says"),
    [
        ("garbage", "cannot be decompressed"),
        ("cut", "compressed data does not end"),
        ("other-bytes", "does not match its content hash"),
        ("encoding", "unknown encoding 'lz4'"),
        ("size", "the store recorded 13601"),
        ("smaller", "the store recorded 13599"),
    ],
)
def test_a_damaged_stored_output_gets_a_page(db: Path, tmp_path: Path, damage: str, says: str) -> None:
    copy = _damaged_copy(db, tmp_path, damage)
    before = _digest(copy)
    with TestClient(create_app(str(copy)), base_url=LOCAL) as client:
        detail = client.get("/output", params={"session": "tiny", "seq": 0})
        assert detail.status_code == 200  # the row itself still reads
        raw = client.get("/output/raw", params={"session": "tiny", "seq": 0})
    assert raw.status_code == 500
    assert "Damaged stored output" in raw.text and says in _text(raw.text)
    assert _digest(copy) == before


def test_an_older_schema_gets_a_page_and_stays_untouched(tmp_path: Path) -> None:
    from weakprompt.clock import FakeClock
    from weakprompt.store import MIGRATIONS
    from weakprompt.store.engine import WRITE_OPTION, build_engine, normalize_url
    from weakprompt.store.migrations import migrate

    old = tmp_path / "v2.db"
    engine = build_engine(normalize_url(old))
    with engine.connect() as conn:
        conn.execution_options(**{WRITE_OPTION: True})
        with conn.begin():
            migrate(conn, FakeClock(), migrations=MIGRATIONS[:2])
    engine.dispose()
    before = _digest(old)
    with TestClient(create_app(str(old)), base_url=LOCAL) as client:
        page = client.get("/")
        again = client.get("/session", params={"id": "x"})
    assert page.status_code == 503 and again.status_code == 503
    text = _text(page.text)
    assert (
        "The store cannot be opened" in text and "SchemaVersionError" in text and "schema version 2" in text
    )
    assert _digest(old) == before


def test_missing_and_foreign_files_get_a_page(tmp_path: Path) -> None:
    foreign = tmp_path / "notes.txt"
    foreign.write_text("not a database")
    with TestClient(create_app(str(foreign)), base_url=LOCAL) as client:
        page = client.get("/")
    assert page.status_code == 503 and "not a database" in _text(page.text)
    assert foreign.read_text() == "not a database"
    with TestClient(create_app(str(tmp_path / "missing.db")), base_url=LOCAL) as client:
        page = client.get("/")
    assert page.status_code == 503 and "no database file" in _text(page.text)
    assert not (tmp_path / "missing.db").exists()


def test_database_errors_get_a_page(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = Store.open(db, read_only=True)
    app = create_app(store)
    store.close()  # every read now fails with StoreError
    with TestClient(app, base_url=LOCAL) as client:
        page = client.get("/")
    assert page.status_code == 500 and "Database error" in page.text and "is closed" in page.text

    from sqlalchemy.exc import OperationalError

    import weakprompt.inspector.app as app_module

    def broken(*args: object, **kwargs: object) -> object:
        raise OperationalError("SELECT", {}, Exception("disk I/O error"))

    monkeypatch.setattr(app_module, "load_session", broken)
    with TestClient(create_app(str(db)), base_url=LOCAL) as client:
        page = client.get("/session", params={"id": "agent-run"})
    assert page.status_code == 500 and "disk I/O error" in _text(page.text)

    monkeypatch.setattr(app_module, "load_session", lambda *a, **k: 1 / 0)
    with TestClient(create_app(str(db)), base_url=LOCAL) as client:
        page = client.get("/session", params={"id": "agent-run"})
    assert page.status_code == 500 and "Internal error" in page.text and "ZeroDivisionError" in page.text


def test_the_inspector_never_writes(db: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy.db"
    copy.write_bytes(db.read_bytes())
    before = _digest(copy)
    with TestClient(create_app(str(copy)), base_url=LOCAL) as client:
        for url, params in [
            ("/", {}),
            ("/session", {"id": "agent-run"}),
            ("/outputs", {"session": "agent-run"}),
            ("/output", {"session": "agent-run", "seq": "2"}),
            ("/output/raw", {"session": "agent-run", "seq": "2"}),
        ]:
            assert client.get(url, params=params).status_code == 200
    assert _digest(copy) == before
    assert not (tmp_path / "copy.db-wal").exists() or (tmp_path / "copy.db-wal").stat().st_size == 0


def test_paused_runs_show_when_the_store_has_them(db: Path, tmp_path: Path) -> None:
    copy = tmp_path / "paused.db"
    copy.write_bytes(db.read_bytes())
    with contextlib.closing(sqlite3.connect(copy)) as conn, conn:
        conn.execute("CREATE TABLE runs_on_hold (session_id TEXT, resumed INTEGER)")
        conn.execute("INSERT INTO runs_on_hold VALUES ('ran-out', 0), ('agent-run', 1)")
    settings = InspectorSettings(paused_runs=PausedRuns(table="runs_on_hold", where="resumed = 0"))
    with TestClient(create_app(str(copy), settings=settings), base_url=LOCAL) as client:
        listing = client.get("/")
        session = client.get("/session", params={"id": "ran-out"})
    rows = dict(re.findall(r'<tr data-session="([^"]+)">(.*?)</tr>', listing.text, re.S))
    assert "paused" in _text(rows["ran-out"]) and "finished" in _text(rows["agent-run"])
    assert 'class="badge status-paused">paused' in session.text


def test_the_stores_own_paused_runs_mark_only_sessions_still_paused(db: Path, tmp_path: Path) -> None:
    copy = tmp_path / "paused4.db"
    copy.write_bytes(db.read_bytes())
    insert = (
        "INSERT INTO paused_runs (session_id, seq, status, pending_json, state_json, created_at)"
        " VALUES (?, 1, ?, '[]', '{}', 'x')"
    )
    with contextlib.closing(sqlite3.connect(copy)) as conn, conn:
        conn.executemany(insert, [("ran-out", "paused"), ("agent-run", "resumed")])
    with TestClient(create_app(str(copy)), base_url=LOCAL) as client:
        listing = client.get("/")
    rows = dict(re.findall(r'<tr data-session="([^"]+)">(.*?)</tr>', listing.text, re.S))
    assert "paused" in _text(rows["ran-out"]) and "finished" in _text(rows["agent-run"])


def test_text_with_lone_surrogates_is_shown_escaped(tmp_path: Path) -> None:
    from weakprompt.transcript import Transcript

    path = tmp_path / "s.db"
    with Store.open(path) as store:
        t = Transcript(store, "odd")
        t.user("half a character: \ud800 here")
    with TestClient(create_app(str(path)), base_url=LOCAL) as client:
        page = client.get("/session", params={"id": "odd"})
    assert page.status_code == 200 and "half a character: \\ud800 here" in page.text


def test_an_open_store_is_left_open(db: Path) -> None:
    with Store.open(db, read_only=True) as store:
        with TestClient(create_app(store), base_url=LOCAL) as client:
            assert client.get("/").status_code == 200
        assert not store.closed
    with pytest.raises(StoreError):
        store.session_ids()


@pytest.mark.postgres
def test_the_pages_read_a_postgresql_store() -> None:
    """The same queries on PostgreSQL: the recursive scan, IN lists, bytea read with substr."""
    import os
    import uuid

    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    from inspector_support import NIGHTLY_LOG, fill
    from weakprompt.store.engine import normalize_url

    url = os.environ.get("WEAKPROMPT_PG_URL")
    if not url:
        if os.environ.get("CI"):
            pytest.fail("CI is set but WEAKPROMPT_PG_URL is not: the PostgreSQL inspector test must run")
        pytest.skip('WEAKPROMPT_PG_URL is not set (`eval "$(.ci/postgres.sh)"` starts a local server)')
    server = make_url(normalize_url(url))
    name = f"weakprompt_inspector_{uuid.uuid4().hex[:12]}"
    admin = create_engine(server.render_as_string(hide_password=False), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    database = server.set(database=name).render_as_string(hide_password=False)
    try:
        with Store.open(database) as store:
            fill(store)
        with TestClient(create_app(database), base_url=LOCAL) as client:
            listing = client.get("/")
            session = client.get("/session", params={"id": "agent-run"})
            detail = client.get("/output", params={"session": "agent-run", "seq": 2})
            raw = client.get("/output/raw", params={"session": "agent-run", "seq": 2})
            missing = client.get("/session", params={"id": "nope"})
        assert re.findall(r'data-session="([^"]+)"', listing.text) == [
            "tiny",
            "ran-out",
            "edited-later",
            "agent-run",
        ]
        assert "changed: +tool_output" in _text(session.text) and "read-grep" in _text(detail.text)
        assert raw.content == NIGHTLY_LOG.encode()
        assert missing.status_code == 404
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE "{name}" WITH (FORCE)'))
        admin.dispose()
