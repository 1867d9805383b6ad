"""The inspector in a real browser: headless Chromium (the Debian package) driven by Playwright.

A user's path through it: the sessions list, a session, a tool call
expanded, an edit's diff, a stored output, and an extraction followed to
the output it read. Screenshots go to ``$WEAKPROMPT_ARTIFACTS`` (CI keeps
them) or the test's temporary folder. Without Chromium the test is skipped,
except under CI, where it fails.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from inspector_support import NEEDLE, build_store

playwright_api = pytest.importorskip("playwright.sync_api")
uvicorn = pytest.importorskip("uvicorn")

from weakprompt.inspector import create_app  # noqa: E402

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


def _chromium_or_skip() -> str:
    if Path(CHROMIUM).exists():
        return CHROMIUM
    if os.environ.get("CI"):
        pytest.fail(f"Chromium is required under CI (not found at {CHROMIUM}); .ci/run installs it")
    pytest.skip("no system Chromium (apt-get install chromium)")


@pytest.fixture(scope="module")
def base_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    db = build_store(tmp_path_factory.mktemp("browser") / "store.db")
    config = uvicorn.Config(create_app(str(db)), host="127.0.0.1", port=0, log_level="warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            pytest.fail("the inspector server did not start")
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)


@pytest.fixture
def artifacts(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("WEAKPROMPT_ARTIFACTS", tmp_path)) / "inspector"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture
def page(base_url: str) -> Iterator[object]:
    executable = _chromium_or_skip()
    with playwright_api.sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=executable, headless=True)
        try:
            tab = browser.new_page(viewport={"width": 1280, "height": 900}, base_url=base_url)
            yield tab
        finally:
            browser.close()


def test_a_user_walks_from_the_session_list_to_an_extraction(page: object, artifacts: Path) -> None:
    from playwright.sync_api import Page, expect

    assert isinstance(page, Page)
    page.goto("/")
    rows = page.locator("table.sessions tbody tr")
    expect(rows).to_have_count(4)
    expect(page.locator('tr[data-session="agent-run"]')).to_contain_text("log-doctor")
    expect(page.locator('tr[data-session="agent-run"] .badge')).to_have_text("finished")
    expect(page.locator('tr[data-session="ran-out"] .badge')).to_have_text("failed")
    page.screenshot(path=str(artifacts / "1-sessions.png"), full_page=True)

    # Filter, then open the session.
    page.fill('input[name="q"]', "doctor")
    page.click('button[type="submit"]')
    expect(rows).to_have_count(1)
    page.click("a.session-link")
    expect(page.locator("h1")).to_contain_text("agent-run")
    expect(page.locator("section.turn")).to_have_count(4)
    expect(page.locator("svg.usage-chart rect.in")).to_have_count(4)

    # Expand a tool call: its arguments and result become visible.
    probe = page.locator('details.call[data-call="call-probe"]')
    expect(probe.locator("pre.result")).to_be_hidden()
    probe.locator("> summary").click()
    expect(probe.locator("pre.arguments")).to_have_text("{}")
    expect(probe.locator("pre.result")).to_contain_text("probe backend unreachable")

    # View an edit's diff: the hook's summary against the tool's output, with provenance.
    build = page.locator('details.call[data-call="call-build"]')
    build.locator("> summary").click()
    edit = build.locator("details.edit")
    edit.locator("> summary").click()
    expect(edit.locator(".provenance")).to_contain_text("tool_summarization:instructions")
    expect(edit.locator(".diff .del").first).to_have_text("- [0000] INFO compiled module_0.py")
    expect(edit.locator(".diff .add")).to_have_text(["+ (routine lines left out)"])
    expect(edit.locator(".diff .ctx").first).to_contain_text("ERROR tests/test_api.py::test_login")
    page.screenshot(path=str(artifacts / "2-session-edit.png"), full_page=True)
    # The top of the page with this call open, as docs/inspector.png shows it.
    page.screenshot(
        path=str(artifacts / "readme.png"),
        full_page=True,
        clip={"x": 0, "y": 0, "width": 1280, "height": 1350},
    )

    # Follow the extraction to the stored output it read.
    extract = page.locator('details.call[data-call="call-extract"]')
    extract.locator("> summary").click()
    expect(extract.locator(".extraction .strategy")).to_have_text("read-grep")
    expect(extract.locator(".extraction .fallback")).to_have_text("none")
    extract.locator("a.follow-extraction").click()
    expect(page.locator("h1")).to_contain_text("Stored output #2 read_log")
    expect(page.locator(".extraction-of-output .strategy")).to_have_text("read-grep")
    expect(page.locator(".extraction-of-output pre")).to_contain_text(NEEDLE)
    expect(page.locator(".summary")).to_have_text("read_log: 6000 lines, 238884 bytes")
    page.screenshot(path=str(artifacts / "3-stored-output.png"), full_page=True)

    # Back from the extraction to the turn that made it.
    page.click("a.extraction-commit")
    expect(page.locator("#turn-3")).to_be_in_viewport()
    assert page.url.endswith("#turn-3")
    page.go_back()

    # Open the full output: streamed as plain text.
    page.click("a.raw-link")
    expect(page.locator("body")).to_contain_text(NEEDLE)
    expect(page.locator("body")).to_contain_text("[05999] INFO worker-7 finished job 5999")


def test_expand_all_opens_every_call_and_the_outputs_page_links_back(page: object, artifacts: Path) -> None:
    from playwright.sync_api import Page, expect

    assert isinstance(page, Page)
    page.goto("/session?id=agent-run")
    page.click("#expand-all")
    calls = page.locator("details.call")
    expect(calls).to_have_count(4)
    for index in range(4):
        expect(calls.nth(index)).to_have_attribute("open", "")
    page.click("#collapse-all")
    expect(page.locator("details.call[open]")).to_have_count(0)
    page.click("a.outputs-link")
    expect(page.locator("table.outputs tbody tr")).to_have_count(3)
    page.locator("a.output-link").first.click()
    expect(page.locator("h1")).to_contain_text("Stored output #0 read_log")
    page.goto("/session?id=nope")
    expect(page.locator("h1")).to_have_text("Unknown session")
    page.screenshot(path=str(artifacts / "4-unknown-session.png"))
