"""The import contracts in pyproject.toml hold, and they would catch a violation.

Each violation test copies the package to a temporary directory, adds one
forbidden import to the copy and runs ``lint-imports`` on it with the
project's own configuration: the contract named must come out broken, on
exactly that import. Function-local and TYPE_CHECKING imports count.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import weakprompt

PACKAGE = Path(weakprompt.__file__).parent
CONFIG = Path(__file__).parent.parent / "pyproject.toml"
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def lint_imports(src: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(CONFIG), "--no-cache"],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(src), "COLUMNS": "200"},  # wide: no wrapped lines
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def copy_with(tmp_path: Path, module: str, addition: str) -> Path:
    """A copy of the package whose ``module`` (a path under weakprompt/) ends with ``addition``."""
    src = tmp_path / "src"
    shutil.copytree(PACKAGE, src / "weakprompt", ignore=shutil.ignore_patterns("__pycache__"))
    target = src / "weakprompt" / module
    target.write_text(target.read_text() + "\n" + addition)
    return src


def broken_section(output: str) -> str:
    assert "Broken contracts" in output, output
    return output.split("Broken contracts", 1)[1]


def test_the_package_keeps_every_contract(tmp_path: Path) -> None:
    done = lint_imports(PACKAGE.parent, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout
    assert "KEPT (1 ignored import)" in done.stdout  # the wire formats behind CompiledContext.to_*


LOCAL = "def _violation() -> None:\n    from {target} import {name}  # noqa\n"
TYPING = "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from {target} import {name}  # noqa\n"


@pytest.mark.parametrize(
    ("module", "addition", "contract", "edge"),
    [
        (
            "store/store.py",
            LOCAL.format(target="..transcript.transcript", name="Transcript"),
            "Layers: imports only go down",
            "weakprompt.store.store -> weakprompt.transcript.transcript",
        ),
        (
            "tools/context.py",
            TYPING.format(target="..runtime.loop", name="evaluate"),
            "Layers: imports only go down",
            "weakprompt.tools.context -> weakprompt.runtime.loop",
        ),
        (
            "transcript/summarize.py",
            LOCAL.format(target="..runtime.loop", name="evaluate"),
            "Layers: imports only go down",
            "weakprompt.transcript.summarize -> weakprompt.runtime.loop",
        ),
        (
            "budget.py",
            LOCAL.format(target=".messages", name="Message"),
            "Layers: imports only go down",
            "weakprompt.budget -> weakprompt.messages",
        ),
        (
            "serde/dumping.py",
            LOCAL.format(target="..messages", name="Message"),
            "Layers: imports only go down",
            "weakprompt.serde.dumping -> weakprompt.messages",
        ),
        (
            "model/context.py",
            LOCAL.format(target="..adapters.testing", name="ScriptedAdapter"),
            "Layers: imports only go down",
            "weakprompt.model.context -> weakprompt.adapters.testing",
        ),
        (
            "runtime/results/extraction/read_grep.py",
            LOCAL.format(target="...loop", name="evaluate"),
            "The tool-result pipeline never imports the loop",
            "weakprompt.runtime.results.extraction.read_grep -> weakprompt.runtime.loop",
        ),
        (
            "runtime/results/extraction/source.py",
            LOCAL.format(target="..store", name="ToolOutputStore"),
            "Extraction knows neither the store nor the loop",
            "weakprompt.runtime.results.extraction.source -> weakprompt.runtime.results.store",
        ),
    ],
)
def test_a_forbidden_import_breaks_its_contract(
    tmp_path: Path, module: str, addition: str, contract: str, edge: str
) -> None:
    done = lint_imports(copy_with(tmp_path, module, addition), tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    broken = broken_section(done.stdout)
    assert contract in broken
    assert edge in broken


def test_a_layer_of_its_own_for_every_top_level_module(tmp_path: Path) -> None:
    # The layers contract is exhaustive: a new package must be placed in a layer before it lints.
    src = copy_with(tmp_path, "errors.py", "")
    (src / "weakprompt" / "unplaced.py").write_text('"""Not in any layer."""\n')
    done = lint_imports(src, tmp_path)
    assert done.returncode == 1
    assert "weakprompt.unplaced" in done.stdout


PRIVATE_CHECK = """
import json, grimp
graph = grimp.build_graph("weakprompt", cache_dir=None)
found = []
for module in sorted(graph.modules):
    package, _, leaf = module.rpartition(".")
    if leaf.startswith("_") and not leaf.startswith("__"):
        for importer in sorted(graph.find_modules_that_directly_import(module)):
            if importer != package and not importer.startswith(package + "."):
                found.append([importer, module])
print(json.dumps(found))
"""


def private_imports_across_packages(src: Path, cwd: Path) -> list[list[str]]:
    done = subprocess.run(
        [sys.executable, "-c", PRIVATE_CHECK],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(src)},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    found: list[list[str]] = json.loads(done.stdout)
    return found


def test_private_modules_are_imported_only_inside_their_package(tmp_path: Path) -> None:
    assert private_imports_across_packages(PACKAGE.parent, tmp_path) == []


def test_the_private_module_check_would_notice_a_leak(tmp_path: Path) -> None:
    src = copy_with(
        tmp_path, "runtime/loop.py", LOCAL.format(target="..session._snapshot", name="SessionSnapshot")
    )
    assert private_imports_across_packages(src, tmp_path) == [
        ["weakprompt.runtime.loop", "weakprompt.session._snapshot"]
    ]
