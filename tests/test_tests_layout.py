"""tests/ mirrors src/weakprompt/: each test file sits in the folder of the package it tests."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "weakprompt"
TESTS = ROOT / "tests"

# Folders of tests/ that are not a package of src/weakprompt, and why.
NOT_PACKAGES = {
    "support": "shared fixtures and scripted worlds",
    "perf": "tests that pin a performance property",
    "examples": "the runnable examples of examples/",
    "typing": "the strict user project checked by pyright",
    "mcp_servers": "the npm reference servers",
}
# The project-wide tests and those of src/weakprompt's root modules.
AT_ROOT = {
    "conftest.py",
    "test_budget_limits.py",
    "test_deadline_budget.py",
    "test_docs_snippets.py",
    "test_image_tokens.py",
    "test_extras_install.py",
    "test_package_public_kwargs.py",
    "test_import_contracts.py",
    "test_package_root.py",
    "test_packaging.py",
    "test_packaging_dependencies.py",
    "test_packaging_local_imports.py",
    "test_readme.py",
    "test_tests_layout.py",
    "test_typing.py",
}


def test_every_test_folder_is_a_package_of_src_or_says_why_not() -> None:
    for folder in sorted(p for p in TESTS.rglob("*") if p.is_dir() and p.name != "__pycache__"):
        relative = folder.relative_to(TESTS)
        if relative.parts[0] in NOT_PACKAGES:
            continue
        assert (SRC / relative).is_dir(), f"tests/{relative} mirrors no package of src/weakprompt"


def test_only_project_wide_tests_sit_at_the_root() -> None:
    stray = sorted(p.name for p in TESTS.glob("*.py") if p.name not in AT_ROOT)
    assert not stray, f"move these into the folder of the package they test: {stray}"


def test_test_file_names_are_unique() -> None:
    names = [p.name for p in TESTS.rglob("test_*.py") if "node_modules" not in p.parts]
    twice = sorted({name for name in names if names.count(name) > 1})
    assert not twice, f"pytest imports test modules by basename; these names repeat: {twice}"
