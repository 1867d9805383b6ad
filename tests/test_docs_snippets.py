"""Every Python block of the guide (docs/) and of README.md runs, and shows the output it prints.

One test per page, so a failure names the page; the conventions (output blocks, skip, scripted
and real-model markers) are in ``docs_support`` and docs/contributing.md. The rest checks that
the navigation reaches every page and every topic the guide promises, and that the screenshot
script and the pages agree on the images.
"""

from __future__ import annotations

import ast
import os
import re
import sys
from pathlib import Path
from typing import cast

import pytest
import yaml

from docs_support import DOCS, ROOT, otlp_collector, pages, run_page, snippets

PAGES = pages()


def _param(path: Path) -> object:
    marks = [pytest.mark.real_model] if any(s.real_model for s in snippets(path)) else []
    return pytest.param(path, id=path.relative_to(ROOT).as_posix(), marks=marks)


@pytest.mark.parametrize("page", [_param(p) for p in PAGES])
def test_every_python_block_of_the_page_runs_and_prints_what_it_shows(page: Path, tmp_path: Path) -> None:
    run_page(page, tmp_path)


def test_the_guide_has_python_blocks_and_few_wait_for_the_agent() -> None:
    found = [s for p in PAGES for s in snippets(p)]
    assert len([s for s in found if s.skip is None]) >= 40
    pending = [s.where for s in found if s.skip == "agent-pending"]
    assert len(pending) <= 6, pending
    assert all(s.skip for s in found if s.skip is not None)


def _write(tmp_path: Path, text: str) -> Path:
    page = tmp_path / "scratch.md"
    page.write_text(text, encoding="utf-8")
    return page


def test_a_block_that_prints_something_else_fails_naming_its_line(tmp_path: Path) -> None:
    page = _write(tmp_path, "Intro\n\n```python\nprint('a')\n```\n\nprints\n\n```text\nb\n```\n")
    with pytest.raises(AssertionError, match=r"scratch.md:3 printed"):
        run_page(page, tmp_path)


def test_markers_skip_script_and_tie_output_only_when_introduced(tmp_path: Path) -> None:
    text = (
        "<!-- run: skip agent-pending -->\n```python\nraise SystemExit\n```\n"
        "<!-- run: scripted hello -->\n\n```python\nfrom weakprompt import OpenAIAdapter\n"
        "model = OpenAIAdapter('gpt-4o-mini')\nprint(type(model).__name__)\n```\n<!-- output -->\n"
        "```text\nFunctionAdapter\n```\n"
        "Some words in between.\n```python\nprint('not compared')\n```\nand then\n```text\nx\n```\n"
    )
    page = _write(tmp_path, text)
    found = snippets(page)
    assert [s.skip for s in found] == ["agent-pending", None, None]
    assert found[1].scripted == "hello" and found[1].expected == "FunctionAdapter\n"
    assert found[2].expected is None
    assert run_page(page, tmp_path) == 2
    import weakprompt

    assert weakprompt.OpenAIAdapter.__name__ == "OpenAIAdapter"  # put back after the block


@pytest.mark.parametrize(
    ("marker", "message"),
    [
        ("<!-- run: skip -->", "needs a reason"),
        ("<!-- run: scripted nope -->", "no script 'nope'"),
        ("<!-- run: durable-worker nope -->", "no script 'nope'"),
    ],
)
def test_a_malformed_marker_is_refused_naming_the_page_and_line(
    tmp_path: Path, marker: str, message: str
) -> None:
    page = _write(tmp_path, f"{marker}\n```python\npass\n```\n")
    with pytest.raises(ValueError, match=rf"scratch.md:2: .*{message}"):
        snippets(page)


def test_the_tracing_page_exports_its_traced_run_to_the_local_collector_and_uninstalls(
    tmp_path: Path,
) -> None:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    from weakprompt.runtime.tracing import installed_tracing

    exports: list[bytes] = []
    run_page(DOCS / "how-to" / "tracing.md", tmp_path, exports=exports)
    names: set[str] = set()
    for body in exports:
        request = ExportTraceServiceRequest.FromString(body)
        names |= {s.name for r in request.resource_spans for ss in r.scope_spans for s in ss.spans}
    assert {"invoke_agent greeter", "chat function"} <= names
    assert installed_tracing() is None
    assert "127.0.0.1" not in os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "")


def test_a_collector_page_that_exports_nothing_fails_and_still_uninstalls(tmp_path: Path) -> None:
    from weakprompt.otel import OTelTracing
    from weakprompt.runtime.tracing import install_tracing, installed_tracing

    page = _write(
        tmp_path,
        "<!-- run: otlp-collector -->\n```python\nimport os\n"
        "print(os.environ['OTEL_EXPORTER_OTLP_ENDPOINT'])\n```\n",
    )
    assert snippets(page)[0].otlp_collector
    install_tracing(OTelTracing())  # as a page's instrument() would leave it
    with pytest.raises(AssertionError, match=r"scratch\.md exported no spans to the local collector"):
        run_page(page, tmp_path)
    assert installed_tracing() is None


def test_the_local_collector_answers_only_the_traces_path(tmp_path: Path) -> None:
    import urllib.error
    import urllib.request

    with otlp_collector() as received:
        endpoint = os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"]
        with urllib.request.urlopen(urllib.request.Request(f"{endpoint}/v1/traces", data=b"spans")) as reply:
            assert reply.status == 200
        with pytest.raises(urllib.error.HTTPError, match="404"):
            urllib.request.urlopen(urllib.request.Request(f"{endpoint}/v1/metrics", data=b"x"))
    assert received == [b"spans"]


@pytest.mark.parametrize(
    ("blocks", "message"),
    [
        ("```python\nclient.submit_sync('q', 'm:p')\n```\n", "needs a `# package/module.py` block"),
        (
            "```python\n# pkg/mod.py\n```\n```python\nclient.submit_sync(queue)\n```\n",
            "submit_sync with the queue",
        ),
    ],
)
def test_a_durable_worker_block_without_its_module_or_queue_is_refused_naming_it(
    tmp_path: Path, blocks: str, message: str
) -> None:
    head, _, last = blocks.rpartition("```python")
    page = _write(tmp_path, f"{head}<!-- run: durable-worker orders -->\n```python{last}")
    assert snippets(page)[-1].durable_worker == "orders"
    with pytest.raises(ValueError, match=re.escape(message)):
        run_page(page, tmp_path)


# -- navigation ------------------------------------------------------------------------------------


def _nav_pages(node: object) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, list):
        return [p for item in cast("list[object]", node) for p in _nav_pages(item)]
    if isinstance(node, dict):
        return [p for value in cast("dict[str, object]", node).values() for p in _nav_pages(value)]
    return []


def _nav_titles(node: object) -> list[str]:
    if isinstance(node, list):
        return [t for item in cast("list[object]", node) for t in _nav_titles(item)]
    if isinstance(node, dict):
        items = cast("dict[str, object]", node).items()
        return [t for key, value in items for t in [key, *_nav_titles(value)]]
    return []


def _config() -> dict[str, object]:
    return yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))


def test_the_navigation_lists_every_page_and_only_pages_that_exist() -> None:
    listed = _nav_pages(_config()["nav"])
    on_disk = {p.relative_to(DOCS).as_posix() for p in PAGES if p.is_relative_to(DOCS)}
    assert sorted(listed) == sorted(on_disk)


# The list of issue 36: each entry must be a title in the navigation (matched case-insensitively).
PROMISED = [
    "Install",
    "first agent on the local model",
    "OpenAI, Anthropic, Gemini or any OpenAI-compatible server",
    "Sections and prompt trees",
    "Tools and the dispatcher contract",
    "Sessions and state",
    "The transcript and provenance",
    "handles, extraction, lazy loading, compaction",
    "Streaming and events",
    "Structured output modes",
    "Streaming in a web app",
    "Approval in a web app",
    "MCP, mounted and served",
    "Durable workers on PostgreSQL",
    "Tracing with an OTLP collector",
    "Testing your tools with hypothesis",
    "Giving tools files",
    "Large outputs",
    "Prompt caching",
    "Evals and replay",
    "Sub-agents",
    "Going to production",
    "API reference",
    "Design notes",
]


def test_the_navigation_alone_leads_to_every_topic_the_guide_promises() -> None:
    titles = [t.lower() for t in _nav_titles(_config()["nav"])]
    missing = [topic for topic in PROMISED if not any(topic.lower() in t for t in titles)]
    assert not missing


def test_the_api_reference_covers_every_public_package() -> None:
    packages = {p.parent.name for p in (ROOT / "src" / "weakprompt").glob("*/__init__.py")} - {"cli"}
    referenced = set(re.findall(r"^::: weakprompt\.(\w+)", _reference_text(), flags=re.MULTILINE))
    assert packages <= referenced, packages - referenced


def _reference_text() -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in (DOCS / "reference").glob("*.md"))


# -- screenshots -----------------------------------------------------------------------------------


def test_the_screenshot_script_makes_exactly_the_images_the_pages_show() -> None:
    script = ast.parse((DOCS / "scripts" / "screenshots.py").read_text(encoding="utf-8"))
    shots = next(
        node.value
        for node in script.body
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == "SHOTS"
    )
    assert shots is not None
    made = {shot[0] for shot in ast.literal_eval(shots)}
    shown = {
        Path(m).name
        for p in PAGES
        if p.is_relative_to(DOCS)
        for m in re.findall(r"\]\((?:\.\./)*images/([\w.-]+\.png)\)", p.read_text(encoding="utf-8"))
    }
    assert made == shown
    assert all((DOCS / "images" / name).is_file() for name in made)


def test_the_reference_of_the_package_root_lists_every_top_level_name() -> None:
    import weakprompt

    page = (DOCS / "reference" / "weakprompt.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| \[`[\w.]+`\]\([\w.]+\) \| (.*) \|$", page, flags=re.MULTILINE)
    listed = {name for row in rows for name in re.findall(r"`(\w+)`", row)}
    assert listed == set(weakprompt.__all__) - {"__version__"}


def test_the_screenshot_demo_store_still_builds_with_the_pages_it_photographs(tmp_path: Path) -> None:
    import importlib.util

    from weakprompt import Store

    spec = importlib.util.spec_from_file_location("docs_screenshots", DOCS / "scripts" / "screenshots.py")
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = script  # its dataclass looks its module up
    try:
        spec.loader.exec_module(script)
        db = script.build_store(tmp_path / "demo.db")
    finally:
        del sys.modules[spec.name]
    store = Store.open(f"sqlite:///{db}", read_only=True)
    try:
        sessions = set(store.session_ids())
    finally:
        store.close()
    for _, path, _, _ in script.SHOTS:
        named = re.search(r"(?:id|session)=([\w-]+)", path)
        assert named is None or named.group(1) in sessions, path
