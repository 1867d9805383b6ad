"""Regenerate the inspector screenshots of the guide (docs/images/*.png) from a demo store.

Run: ``PYTHONPATH=src .venv/bin/python docs/scripts/screenshots.py [--chromium PATH] [--out DIR]``

It writes a small store with the real loop (a scripted model, so it runs offline and the pictures
are the same every time, apart from dates and ids), serves the inspector on a free loopback port,
and photographs each page of ``SHOTS`` in headless Chromium: with Playwright when it is installed
(driving the system Chromium), else with Chromium's own ``--headless --screenshot``.
tests/test_docs_snippets.py checks that ``SHOTS`` and the images the pages show are the same set.
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import uvicorn

from weakprompt import MarkdownSection, Prompt, PromptTemplate, Session, Store, Transcript, evaluate
from weakprompt.adapters.testing import FunctionAdapter
from weakprompt.inspector import create_app
from weakprompt.messages import AssistantTurn, ToolCall, Usage
from weakprompt.model import ModelRequest
from weakprompt.tools import ToolResult, tool

# (file name in docs/images, path on the inspector, viewport height, open every call first)
SHOTS: tuple[tuple[str, str, int, bool], ...] = (
    ("inspector-sessions.png", "/", 420, False),
    ("inspector-session.png", "/session?id=nightly-check", 1100, False),
    ("inspector-edit.png", "/session?id=build-log", 1250, True),
    ("inspector-output.png", "/output?session=nightly-check&seq=0", 1000, False),
)
WIDTH = 1280
HERE = Path(__file__).resolve().parent
IMAGES = HERE.parent / "images"


@dataclass(frozen=True)
class LogName:
    name: str


def build_store(path: Path) -> str:
    """Sessions worth looking at: a handle and an extraction, a summary edit, a failed call."""
    nightly = "\n".join(
        "[03131] ERROR disk full on /var/db"
        if i == 3131
        else f"[{i:05d}] INFO worker-{i % 8} finished job {i}"
        for i in range(6000)
    )
    build = "\n".join(
        [f"[{i:04d}] INFO compiled module_{i}.py" for i in range(40)] + ["[0040] ERROR test_login"]
    )

    @tool(name="read_log", description="Read a log by name: build or nightly.")
    def read_log(params: LogName) -> ToolResult[None]:
        return ToolResult(message=nightly if params.name == "nightly" else build)

    @tool(name="probe", description="Probe the database server.")
    def probe() -> ToolResult[None]:
        raise RuntimeError("connection refused")

    def model(request: ModelRequest) -> AssistantTurn | str:
        messages = request.context.messages
        last = messages[-1]
        offered = {t.name for t in request.tools}
        usage = Usage(input_tokens=request.context.token_count, output_tokens=24, model_calls=1)
        if {"read", "grep"} <= offered and "read_log" not in offered:  # the read-grep sub-agent
            if last.role == "user":
                handle = re.search(r"handle: (\S+)", messages[0].content)
                assert handle is not None
                arguments = {"handle": handle.group(1), "pattern": "ERROR", "context": 0}
                return AssistantTurn(tool_calls=(ToolCall("g1", "grep", arguments),), usage=usage)
            wrapper = re.search(r"<wp-([A-Za-z0-9]+)-FINAL", messages[0].content)
            assert wrapper is not None
            tag = f"wp-{wrapper.group(1)}-FINAL"
            return f'<{tag} format="text">\n[03131] ERROR disk full on /var/db\n</{tag}>'
        if last.role == "user":
            calls = (ToolCall("c1", "read_log", {"name": "nightly"}), ToolCall("c2", "probe", {}))
            return AssistantTurn(tool_calls=calls, usage=usage)
        handle = re.search(r'tool_output\(handle = "([^"]+)"', "\n".join(m.content for m in messages[-2:]))
        if handle is not None and not any(m.name == "tool_output" for m in messages):
            arguments = {"handle": handle.group(1), "extract": "every ERROR line", "mode": "read-grep"}
            return AssistantTurn(tool_calls=(ToolCall("c3", "tool_output", arguments),), usage=usage)
        return AssistantTurn(text="The nightly run stopped: the disk of /var/db is full.", usage=usage)

    section = MarkdownSection(
        title="Task", key="task", template="Find what broke last night.", tools=[read_log, probe]
    )
    prompt = Prompt(PromptTemplate(ns="demo", key="doctor", name="log-doctor", sections=[section]))
    store = Store.open(f"sqlite:///{path}")
    adapter = FunctionAdapter(model, name="demo", model="scripted", context_window=8192)
    evaluate(
        prompt, adapter=adapter, session=Session(session_id="nightly-check"), store=store, input="What broke?"
    )
    for day in range(3):
        session = Session(session_id=f"build-{day + 1}")
        evaluate(prompt, adapter=FunctionAdapter(lambda request: "All green."), session=session, store=store)
    transcript = Transcript(store, "build-log")
    transcript.system("Find what broke in the build.", metadata={"prompt": "log-doctor"})
    transcript.user("What does the build log say?")
    usage = Usage(input_tokens=180, output_tokens=12, model_calls=1)
    transcript.assistant("", tool_calls=[ToolCall("b1", "read_log", {"name": "build"})], usage=usage)
    original = transcript.tool_result("b1", "read_log", build)
    summary = "[0040] ERROR test_login (40 INFO lines left out)"
    transcript.tool_result(
        "b1", "read_log", summary, edit=original.hash, metadata={"summarized_from": original.blob_hash}
    )
    transcript.assistant("test_login fails.", usage=Usage(input_tokens=230, output_tokens=6, model_calls=1))
    store.close()
    return str(path)


def _serve(db: str) -> tuple[str, uvicorn.Server, threading.Thread]:
    server = uvicorn.Server(uvicorn.Config(create_app(db), host="127.0.0.1", port=0, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise SystemExit("the inspector did not start")
        time.sleep(0.05)
    port = server.servers[0].sockets[0].getsockname()[1]
    return f"http://127.0.0.1:{port}", server, thread


def _with_playwright(base: str, chromium: str, out: Path) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        for name, path, height, expand in SHOTS:
            page = browser.new_page(viewport={"width": WIDTH, "height": height})
            page.goto(base + path)
            if expand:
                page.get_by_role("button", name="expand all calls").click()
                page.eval_on_selector_all(
                    "details.edit, details", "all => all.forEach(d => { d.open = true; })"
                )
            page.screenshot(path=str(out / name))
            page.close()
        browser.close()


def _with_cli(base: str, chromium: str, out: Path) -> None:
    for name, path, height, _ in SHOTS:  # no clicks here: calls stay folded
        command = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"]
        command += [f"--window-size={WIDTH},{height}", f"--screenshot={out / name}", base + path]
        subprocess.run(command, check=True, capture_output=True, timeout=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    parser.add_argument("--out", type=Path, default=IMAGES)
    options = parser.parse_args()
    options.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as folder:
        db = build_store(Path(folder) / "demo.db")
        base, server, thread = _serve(db)
        try:
            if importlib.util.find_spec("playwright") is None:
                _with_cli(base, options.chromium, options.out)
            else:
                _with_playwright(base, options.chromium, options.out)
        finally:
            server.should_exit = True
            thread.join(timeout=10)
    for name, path, _, _ in SHOTS:
        print(f"{options.out / name}  <- {quote(path, safe='/?=&')}")


if __name__ == "__main__":
    sys.exit(main())
