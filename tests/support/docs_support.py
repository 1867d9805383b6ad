"""Runs the Python blocks of a markdown page (the guide in docs/, and README.md) as the reader would.

The conventions, also explained in docs/contributing.md:

- Every fenced block opened with `` ```python `` (or `` ```py ``) runs. A page's blocks run in
  order in one namespace, as one script, with a fresh temporary folder as the working directory.
- A `` ```text `` block is the expected stdout of the Python block just before it when only the
  word ``prints`` or the comment ``<!-- output -->`` stands between them. Everything the block
  printed must match it exactly.
- An HTML comment on the line just before a block (blank lines allowed between) changes how it
  runs:

  ``<!-- run: skip REASON -->``
      not run; the reason is required. ``agent-pending`` marks blocks that teach the ``Agent``
      before it lands (the integrator removes those markers when it does).
  ``<!-- run: scripted NAME -->``
      the block builds a paid provider's adapter (``OpenAIAdapter``, ``AnthropicAdapter``,
      ``GeminiAdapter``, ``OpenAIResponsesAdapter``):
      while it runs, those names build a ``FunctionAdapter`` over the model ``SCRIPTS[NAME]``
      below instead, so the rest of the block runs as written without a key or a network.
  ``<!-- run: real-model -->``
      the block loads the embedded local model; the page's test is marked ``real_model``.
  ``<!-- run: otlp-collector -->``
      the block exports spans over OTLP/HTTP: the whole page then runs with a small local
      receiver (:func:`otlp_collector`) standing in for a collector, named by
      ``OTEL_EXPORTER_OTLP_ENDPOINT``; the page must have exported at least once by its end, and
      whatever tracing it installed with ``instrument()`` is removed after it.
  ``<!-- run: durable-worker NAME -->``
      the block submits to a durable queue: the page's module blocks (those whose first line is
      ``# package/module.py``) are written as files into the working folder, a real
      ``weakprompt worker`` subprocess serves the queue the block submits to (``--allow-module``
      each written package) on a SQLite store in that folder, with the provider adapters scripted
      by ``SCRIPTS[NAME]`` as for ``scripted``; each ``"postgresql://..."`` literal of the block
      becomes that store, and the worker is stopped after the page.
"""

from __future__ import annotations

import ast
import contextlib
import http.server
import io
import json
import os
import re
import signal
import subprocess
import sys
import threading
import types
from collections.abc import Callable, Generator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# the repository root: the folder holding mkdocs.yml (wherever the tests folder puts this file)
ROOT = next(p for p in Path(__file__).resolve().parents if (p / "mkdocs.yml").is_file())
DOCS = ROOT / "docs"

_FENCE = re.compile(r"^```(?P<lang>[\w+-]*)[^\n]*\n(?P<body>.*?)^```[ \t]*$", re.DOTALL | re.MULTILINE)
_MARKER = re.compile(
    r"<!--\s*run:\s*(?P<kind>skip|scripted|real-model|otlp-collector|durable-worker)\b\s*(?P<arg>.*?)\s*-->\s*\Z",
    re.DOTALL,
)
_OUTPUT_LINK = re.compile(r"\A\s*(?:prints|<!--\s*output\s*-->)\s*\Z")
PYTHON_LANGS = frozenset({"python", "py"})


@dataclass(frozen=True)
class Snippet:
    """One Python block of a page, with how it runs and what it must print."""

    page: str
    line: int
    code: str
    expected: str | None = None
    skip: str | None = None
    scripted: str | None = None
    real_model: bool = False
    otlp_collector: bool = False
    durable_worker: str | None = None

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def _marker_before(text: str, start: int) -> re.Match[str] | None:
    before = text[:start].rstrip()
    if not before.endswith("-->"):
        return None
    opening = before.rfind("<!--")
    return _MARKER.match(before[opening:]) if opening >= 0 else None


def _name(path: Path) -> str:
    """How errors name a page: its path in the repository (a page elsewhere: its file name)."""
    return path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else path.name


def snippets(path: Path) -> list[Snippet]:
    """The page's Python blocks in order; a malformed marker is an error naming its line."""
    text = path.read_text(encoding="utf-8")
    page = _name(path)
    fences = list(_FENCE.finditer(text))
    found: list[Snippet] = []
    for index, fence in enumerate(fences):
        if fence.group("lang") not in PYTHON_LANGS:
            continue
        line = text.count("\n", 0, fence.start()) + 1
        marker = _marker_before(text, fence.start())
        skip = scripted = durable = None
        real_model = otlp = False
        if marker is not None:
            kind, arg = marker.group("kind"), marker.group("arg")
            if kind == "skip":
                if not arg:
                    raise ValueError(f"{page}:{line}: `<!-- run: skip -->` needs a reason")
                skip = arg
            elif kind in ("scripted", "durable-worker"):
                if arg not in SCRIPTS:
                    raise ValueError(f"{page}:{line}: no script {arg!r}; known: {sorted(SCRIPTS)}")
                if kind == "scripted":
                    scripted = arg
                else:
                    durable = arg
            elif kind == "otlp-collector":
                otlp = True
            else:
                real_model = True
        expected = None
        following = fences[index + 1] if index + 1 < len(fences) else None
        if (
            following is not None
            and following.group("lang") == "text"
            and _OUTPUT_LINK.match(text[fence.end() : following.start()])
        ):
            expected = following.group("body")
        found.append(
            Snippet(page, line, fence.group("body"), expected, skip, scripted, real_model, otlp, durable)
        )
    return found


def pages() -> list[Path]:
    """README.md and every page of the guide (scripts are not pages)."""
    return [ROOT / "README.md", *sorted(p for p in DOCS.rglob("*.md") if "scripts" not in p.parts)]


# -- scripted models for blocks that would call a paid API ----------------------------------------


def _weather(request: Any) -> Any:
    """Calls ``lookup_weather`` for Lisbon once, then answers in JSON (text when no output type)."""
    from weakprompt import AssistantTurn, ToolCall

    messages = request.context.messages
    offered = {tool.name for tool in request.tools}
    if messages[-1].role != "tool" and "lookup_weather" in offered:
        call = ToolCall(id="call_1", name="lookup_weather", arguments=json.dumps({"city": "Lisbon"}))
        return AssistantTurn(tool_calls=(call,), finish_reason="tool_calls")
    return json.dumps({"city": "Lisbon", "celsius": 21.5})


def _hello(request: Any) -> str:
    """Answers every request with one short sentence."""
    return "Hello from the scripted model."


def _orders(request: Any) -> Any:
    """Looks order A-7 up with ``order_status`` once, then says what it found."""
    from weakprompt import AssistantTurn, ToolCall

    messages = request.context.messages
    if messages[-1].role != "tool":
        call = ToolCall(id="call_1", name="order_status", arguments=json.dumps({"order_id": "A-7"}))
        return AssistantTurn(tool_calls=(call,), finish_reason="tool_calls")
    return f"Order A-7: {json.loads(messages[-1].content)}."  # the tool's result arrives as JSON


SCRIPTS: dict[str, Callable[[Any], Any]] = {"weather": _weather, "hello": _hello, "orders": _orders}
_PROVIDERS = ("OpenAIAdapter", "AnthropicAdapter", "GeminiAdapter", "OpenAIResponsesAdapter")


@contextlib.contextmanager
def scripted_providers(name: str) -> Generator[None]:
    """While a block runs, the provider adapters' names build a FunctionAdapter over a script."""
    import weakprompt
    import weakprompt.adapters
    from weakprompt import FunctionAdapter

    def build(*args: object, **kwargs: object) -> object:
        return FunctionAdapter(SCRIPTS[name])

    modules = [weakprompt, weakprompt.adapters]
    saved = [(m, n, m.__dict__.get(n)) for m in modules for n in _PROVIDERS]
    try:
        for module, attr, _ in saved:
            setattr(module, attr, build)
        yield
    finally:
        for module, attr, value in saved:
            if value is None:
                delattr(module, attr)
            else:
                setattr(module, attr, value)


@contextlib.contextmanager
def otlp_collector() -> Generator[list[bytes]]:
    """A local OTLP/HTTP receiver on a free loopback port, named by ``OTEL_EXPORTER_OTLP_ENDPOINT``.

    Yields the list the protobuf bodies POSTed to ``/v1/traces`` are appended to. On the way out
    the variable is put back, the server stops, and any tracing ``instrument()`` installed is
    removed, so no later test is traced.
    """
    from weakprompt.otel import uninstrument

    received: list[bytes] = []

    class Receiver(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.path != "/v1/traces":
                self.send_error(404)
                return
            received.append(body)
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            pass  # keep the test output clean

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    thread = threading.Thread(target=server.serve_forever, name="otlp-collector", daemon=True)
    thread.start()
    saved = os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"] = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield received
    finally:
        uninstrument()
        if saved is None:
            del os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"]
        else:
            os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"] = saved
        server.shutdown()
        server.server_close()
        thread.join()


_MODULE_LINE = re.compile(r"\A# (?P<path>\w+(?:/\w+)*\.py)\n")
_PAGE_DB = re.compile(r"[\"']postgresql://[^\"']*[\"']")
_WORKER = (
    "import sys, docs_support\n"
    "from weakprompt.cli import main\n"
    "with docs_support.scripted_providers(sys.argv[1]):\n"
    "    main(sys.argv[2:])\n"
)


def _queue_of(snippet: Snippet) -> str:
    """The queue the block submits to: the first argument of its ``submit_sync`` call."""
    for node in ast.walk(ast.parse(snippet.code)):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "submit_sync"
        ):
            first = node.args[0] if node.args else None
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                return first.value
    raise ValueError(f"{snippet.where}: a durable-worker block must call submit_sync with the queue first")


@contextlib.contextmanager
def durable_worker(page: list[Snippet], snippet: Snippet, folder: Path) -> Generator[str]:
    """A real ``weakprompt worker`` serving the page's modules from ``folder``; yields its store."""
    sys.path.insert(0, str(ROOT / "tests" / "durable"))
    try:
        from durable_support import wait_for_system_database
    finally:
        sys.path.remove(str(ROOT / "tests" / "durable"))
    packages: set[str] = set()
    for block in page:
        named = _MODULE_LINE.match(block.code)
        if named is None:
            continue
        target = folder / named.group("path")
        for parent in target.relative_to(folder).parents[:-1]:
            (folder / parent).mkdir(exist_ok=True)
            (folder / parent / "__init__.py").touch()
        target.write_text(block.code, encoding="utf-8")
        packages.add(Path(named.group("path")).parts[0].removesuffix(".py"))
    if not packages:
        raise ValueError(f"{snippet.where}: a durable-worker page needs a `# package/module.py` block")
    db = str(folder / "agents.db")
    serves = [arg for name in sorted(packages) for arg in ("--allow-module", name)]
    argv = ["worker", "--db", db, "--queue", _queue_of(snippet), "--executor-id", "docs", *serves]
    path = os.pathsep.join([str(folder), str(ROOT / "src"), str(Path(__file__).parent)])
    with (folder / "worker.log").open("wb") as log:
        worker = subprocess.Popen(
            [sys.executable, "-c", _WORKER, snippet.durable_worker or "", *argv],
            cwd=folder,
            env=dict(os.environ, PYTHONPATH=path),
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_for_system_database(db, timeout=60)
        yield db
    finally:
        worker.send_signal(signal.SIGTERM)
        try:
            worker.wait(60)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()


@contextlib.contextmanager
def _in_folder(folder: Path) -> Generator[None]:
    previous = Path.cwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(previous)


def run_page(path: Path, folder: Path, *, exports: list[bytes] | None = None) -> int:
    """Runs the page's blocks in order in one namespace; returns how many ran.

    Raises AssertionError naming the page and line of a block whose output differs. ``exports``,
    if given, receives the OTLP bodies the local collector got (an ``otlp-collector`` page).
    """
    name = re.sub(r"\W", "_", _name(path).removesuffix(".md"))
    module = types.ModuleType(f"docs_page_{name}")
    sys.modules[module.__name__] = module  # dataclasses and pickle look the module up
    ran = 0
    found = snippets(path)
    collector = otlp_collector() if any(s.otlp_collector for s in found) else contextlib.nullcontext(None)
    try:
        with _in_folder(folder), collector as received, contextlib.ExitStack() as workers:
            for snippet in found:
                if snippet.skip is not None:
                    continue
                code = snippet.code
                if snippet.durable_worker is not None:
                    db = workers.enter_context(durable_worker(found, snippet, folder))
                    code = _PAGE_DB.sub(repr(db), code)
                out = io.StringIO()
                scripted = (
                    scripted_providers(snippet.scripted) if snippet.scripted else contextlib.nullcontext()
                )
                with scripted, contextlib.redirect_stdout(out):
                    exec(compile(code, snippet.where, "exec"), module.__dict__)
                ran += 1
                if snippet.expected is not None:
                    assert out.getvalue() == snippet.expected, (
                        f"{snippet.where} printed:\n{out.getvalue()}\nbut the page shows:\n{snippet.expected}"
                    )
            assert received is None or received, f"{_name(path)} exported no spans to the local collector"
            if exports is not None and received is not None:
                exports.extend(received)
    finally:
        del sys.modules[module.__name__]
        _close_stores(module.__dict__)
    return ran


def _close_stores(namespace: dict[str, object]) -> None:
    """Close the stores a page opened, so no database file stays open past its test."""
    from weakprompt import Store

    durable = sys.modules.get("weakprompt.durable")
    for value in namespace.values():
        if isinstance(value, Store) and not value.closed:
            value.close()
        elif durable is not None and isinstance(value, durable.DurableClient):
            value.close()
