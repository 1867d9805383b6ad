"""Imports inside weakprompt are ordinary module-level imports (issue 29, item 5).

A function-local import of another weakprompt package hides a dependency and
its cost until first call. Laziness belongs at package roots (``lazy_exports``)
and to optional SDKs; the few local imports that cross packages are listed in
``ALLOWED`` with the reason each one stays. Run this file as a script to list
every function-local import that crosses packages.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = "weakprompt"
LIMIT = 10

# (importing module, imported module) -> why the import stays inside a function.
ALLOWED: dict[tuple[str, str], str] = {
    ("weakprompt.model.context", "weakprompt.adapters.wire"): (
        "the one upward import the layer contracts allow (specs/LAYOUT.md, 'The one exception'): "
        "a compiled context converts itself to a provider's format without the core loading it"
    ),
    ("weakprompt.runtime.pause_reads", "weakprompt.store.pause_rows"): (
        "the runtime root binds the function resume eagerly (it shares runtime.resume's name, so it "
        "cannot resolve lazily); import weakprompt.runtime thus loads runtime.resume and this module it "
        "re-exports from, and must not load the store (SQLAlchemy)"
    ),
    ("weakprompt.cli.app", "weakprompt.inspector.access"): (
        "weakprompt inspect needs the optional 'inspector' extra (starlette): refused with the "
        "pip command when missing, never loaded by the other commands"
    ),
    ("weakprompt.cli.app", "weakprompt.inspector.app"): "as weakprompt.inspector.access (starlette, jinja2)",
    ("weakprompt.cli.app", "weakprompt.inspector.hosts"): "as weakprompt.inspector.access (starlette)",
    ("weakprompt.cli.worker", "weakprompt.durable"): (
        "weakprompt worker needs the optional 'dbos' extra: refused with the pip command when "
        "missing, never loaded by the other commands"
    ),
    ("weakprompt.runtime.cache_prefix", "weakprompt.transcript.compress"): (
        "the cache-bust detector names an edited message's cause only when a message busted the "
        "prefix; an agent's imports do not load the transcript package"
    ),
    ("weakprompt.runtime.cache_prefix", "weakprompt.transcript.provenance"): "as transcript.compress",
    ("weakprompt.runtime.cache_prefix", "weakprompt.store.tables"): (
        "the cross-session lookup is built on a session's first request over a given store; "
        "an agent's imports do not load SQLAlchemy"
    ),
}


@dataclass(frozen=True)
class LocalImport:
    """One function-local import of a weakprompt module from another weakprompt package."""

    module: str
    target: str
    line: int

    @property
    def key(self) -> tuple[str, str]:
        return (self.module, self.target)


def _module_name(path: Path, src: Path) -> str:
    parts = list(path.relative_to(src).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_package(path: Path) -> bool:
    return path.name == "__init__.py"


def _package_of(module: str) -> str:
    """The top-level subpackage of weakprompt a module belongs to (a top-level module is its own)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _targets(node: ast.Import | ast.ImportFrom, module: str, is_package: bool, src: Path) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        prefix = ".".join(base)
        name = f"{prefix}.{node.module}" if node.module else prefix
    else:
        name = node.module or ""
    # ``from weakprompt.adapters import wire``: the target is the submodule when one is named.
    found = [f"{name}.{alias.name}" for alias in node.names if _exists(src, f"{name}.{alias.name}")]
    return found or [name]


def _exists(src: Path, module: str) -> bool:
    path = src.joinpath(*module.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _local_imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    found: list[ast.Import | ast.ImportFrom] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for inner in ast.walk(node):
                if isinstance(inner, ast.Import | ast.ImportFrom):
                    found.append(inner)
    # an import in a nested function is walked from each enclosing function: count it once
    unique = {id(node): node for node in found}
    return sorted(unique.values(), key=lambda node: node.lineno)


def cross_package_local_imports(src: Path = SRC) -> list[LocalImport]:
    """Every function-local import of a weakprompt module whose package differs from the importer's."""
    result: list[LocalImport] = []
    for path in sorted((src / PACKAGE).rglob("*.py")):
        module = _module_name(path, src)
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in _local_imports(tree):
            for target in _targets(node, module, _is_package(path), src):
                if target != PACKAGE and not target.startswith(f"{PACKAGE}."):
                    continue
                if _package_of(target) != _package_of(module):
                    result.append(LocalImport(module, target, node.lineno))
    return result


def test_function_local_imports_across_packages_stay_few() -> None:
    found = cross_package_local_imports()
    listing = "\n".join(f"  {i.module}:{i.line} -> {i.target}" for i in found)
    assert len(found) <= LIMIT, f"{len(found)} local imports cross packages (at most {LIMIT}):\n{listing}"
    unexplained = [f"  {i.module}:{i.line} -> {i.target}" for i in found if not ALLOWED.get(i.key)]
    assert not unexplained, "local imports across packages, no reason in ALLOWED:\n" + "\n".join(unexplained)


def test_the_allow_list_names_only_imports_that_exist() -> None:
    """An entry whose import became module-level is removed, so the list stays the truth."""
    present = {item.key for item in cross_package_local_imports()}
    assert set(ALLOWED) <= present, sorted(set(ALLOWED) - present)


def test_the_counter_sees_relative_absolute_and_nested_local_imports(tmp_path: Path) -> None:
    package = tmp_path / PACKAGE
    (package / "runtime").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "errors.py").write_text("")
    (package / "runtime" / "__init__.py").write_text("")
    (package / "runtime" / "loop.py").write_text(
        "from weakprompt import errors\n"  # module level: not counted
        "def a():\n"
        "    from ..errors import X\n"  # relative, crosses
        "    from . import other\n"  # same package: not counted
        "    import json\n"  # not weakprompt
        "    def b():\n"
        "        from weakprompt import errors\n"  # nested, crosses, counted once
        "class C:\n"
        "    async def m(self):\n"
        "        import weakprompt.store.x\n"  # absolute, crosses
    )
    found = cross_package_local_imports(tmp_path)
    assert [(item.target, item.line) for item in found] == [
        ("weakprompt.errors", 3),
        ("weakprompt.errors", 7),
        ("weakprompt.store.x", 10),
    ]
    assert [item.module for item in found] == ["weakprompt.runtime.loop"] * 3


if __name__ == "__main__":
    items = cross_package_local_imports()
    for item in items:
        print(f"{item.module}:{item.line} -> {item.target}")
    print(f"{len(items)} function-local imports cross packages", file=sys.stderr)
