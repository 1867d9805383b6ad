"""Every library that src/ imports is declared in pyproject.toml, in the core or in its package's extra.

An import that works only because another dependency happens to pull the
library in breaks the day that dependency drops it (``httpx2`` was imported
by the Anthropic adapter and declared nowhere; issue 29).
"""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "weakprompt"

# The extras a weakprompt package may import from, besides the core dependencies.
EXTRAS_OF: dict[str, frozenset[str]] = {
    "adapters": frozenset({"openai", "anthropic", "gemini", "local"}),
    "cli": frozenset({"inspector"}),  # weakprompt inspect serves the inspector with uvicorn
    "durable": frozenset({"dbos"}),
    "inspector": frozenset({"inspector"}),
    "mcp": frozenset({"mcp"}),
    "otel": frozenset({"otel"}),
    "serde": frozenset({"pydantic"}),
    "testing": frozenset({"testing"}),
    "evals": frozenset({"testing"}),  # each case as a pytest test (evals.as_tests)
}
# Modules that exist only for type checkers (imported under TYPE_CHECKING), never installed.
TYPE_CHECKER_ONLY = frozenset({"_typeshed"})


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirement_name(requirement: str) -> str:
    found = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement.strip())
    assert found is not None, requirement
    return _normalized(found.group(0))


def _declared() -> tuple[set[str], dict[str, set[str]]]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    core = {_requirement_name(r) for r in project["dependencies"]}
    extras = {
        extra: {_requirement_name(r) for r in requirements}
        for extra, requirements in project["optional-dependencies"].items()
    }
    return core, extras


def _third_party_imports() -> dict[tuple[str, str], str]:
    """``(top-level module imported, weakprompt package importing it)`` -> one file that does."""
    found: dict[tuple[str, str], str] = {}
    for path in sorted(SRC.rglob("*.py")):
        parts = path.relative_to(SRC).parts
        package = parts[0] if len(parts) > 1 else ""
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.partition(".")[0]
                if top in sys.stdlib_module_names or top in {"__future__", "weakprompt"}:
                    continue
                found.setdefault((top, package), str(path.relative_to(ROOT)))
    return found


def test_every_imported_distribution_is_declared() -> None:
    core, extras = _declared()
    distributions = importlib.metadata.packages_distributions()
    problems: list[str] = []
    for (top, package), where in sorted(_third_party_imports().items()):
        if top in TYPE_CHECKER_ONLY:
            continue
        candidates = {_normalized(d) for d in distributions.get(top, [])}
        if not candidates:
            problems.append(f"{where}: imports {top!r}, which no installed distribution provides")
            continue
        allowed = set(core)
        for extra in EXTRAS_OF.get(package, frozenset()):
            allowed |= extras[extra]
        if not candidates & allowed:
            extra_names = sorted(EXTRAS_OF.get(package, frozenset()))
            problems.append(
                f"{where}: imports {top!r} (distribution {', '.join(sorted(candidates))}), declared "
                f"neither in the core dependencies nor in the extras {extra_names} of weakprompt.{package}"
            )
    assert not problems, "\n".join(problems)


def test_the_extras_named_for_packages_exist() -> None:
    _, extras = _declared()
    assert {extra for names in EXTRAS_OF.values() for extra in names} <= set(extras)


def test_httpx2_is_declared_where_it_is_imported() -> None:
    """The regression of issue 29: the Anthropic adapter (and MCP over HTTP) import httpx2."""
    _, extras = _declared()
    imports = _third_party_imports()
    assert ("httpx2", "adapters") in imports
    assert "httpx2" in extras["anthropic"]
    assert ("httpx2", "mcp") not in imports or "httpx2" in extras["mcp"]
