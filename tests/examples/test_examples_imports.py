"""The examples import from package roots, as a user would, never from internal modules."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.py"))
# The scripted-model helpers (tool_call, text_turn, ...) are the public testing module.
TESTING_KIT = {"weakprompt.adapters.testing"}


def _weakprompt_imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):  # function-local imports included
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("weakprompt"):
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith("weakprompt"))
    return found


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_examples_import_only_package_roots(path: Path) -> None:
    modules = _weakprompt_imports(path)
    assert "weakprompt" in modules, "the top-level package has what a first agent needs"
    for name in modules - TESTING_KIT:
        module = importlib.import_module(name)
        # A package root, or one of the foundation modules that sit right under weakprompt.
        top_level = name.count(".") == 1
        assert top_level or hasattr(module, "__path__"), f"{path.name} imports {name}; use its package"
        assert not any(part.startswith("_") for part in name.split("."))
