"""A strict user's view, checked by pyright: ``tests/typing`` is clean and its deliberate mistakes are caught.

One pyright run over a copy of ``tests/typing`` (mistakes included) plus the
README's sample; the errors must be exactly the lines marked ``# expect: <rule>``.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TYPING = ROOT / "tests" / "typing"
PYRIGHT = shutil.which("pyright", path=str(Path(sys.executable).parent)) or shutil.which("pyright")
EXPECT = re.compile(r"#\s*expect:\s*(?P<rules>[\w, ]+)$")

pytestmark = pytest.mark.skipif(PYRIGHT is None, reason="pyright is not installed")


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "user_project"
    shutil.copytree(TYPING, project)
    config = json.loads((TYPING / "pyrightconfig.json").read_text(encoding="utf-8"))
    config["exclude"] = []  # the mistakes are checked too
    config["extraPaths"] = [str(ROOT / "src")]
    for key in ("venvPath", "venv"):  # the interpreter is passed with --pythonpath
        config.pop(key, None)
    (project / "pyrightconfig.json").write_text(json.dumps(config), encoding="utf-8")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    taste = readme[readme.index("## A first agent") :]
    sample = re.search(r"```python\n(.*?)```", taste, flags=re.DOTALL)
    assert sample is not None
    (project / "readme_taste.py").write_text(sample.group(1), encoding="utf-8")
    return project


def _expected(project: Path) -> set[tuple[str, int, str]]:
    found: set[tuple[str, int, str]] = set()
    for path in sorted(project.rglob("*.py")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            marker = EXPECT.search(line)
            if marker:
                for rule in marker.group("rules").split(","):
                    found.add((path.relative_to(project).as_posix(), number, rule.strip()))
    return found


def test_strict_pyright_accepts_the_user_code_and_reports_each_deliberate_mistake(tmp_path: Path) -> None:
    assert PYRIGHT is not None
    project = _project(tmp_path)
    done = subprocess.run(
        [PYRIGHT, "-p", str(project), "--outputjson", "--pythonpath", sys.executable],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    report = json.loads(done.stdout)
    reported = {
        (
            Path(d["file"]).relative_to(project).as_posix(),
            d["range"]["start"]["line"] + 1,
            d.get("rule", d["message"]),
        )
        for d in report["generalDiagnostics"]
        if d["severity"] == "error"
    }
    expected = _expected(project)
    assert expected, "expected_errors/ must hold at least one deliberate mistake"
    assert {path for path, _, _ in expected} == {"expected_errors/mistakes.py"}
    assert reported == expected
    assert report["summary"]["filesAnalyzed"] >= 5
    assert done.returncode == 1  # so `pyright` on the mistakes does fail


def test_make_lint_checks_the_user_project_without_the_mistakes() -> None:
    config = json.loads((TYPING / "pyrightconfig.json").read_text(encoding="utf-8"))
    assert config["typeCheckingMode"] == "strict"
    assert config["exclude"] == ["expected_errors"]
    assert config["reportUnnecessaryTypeIgnoreComment"] == "error"
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    lint = makefile[makefile.index("\nlint:") : makefile.index("\npytest:")]
    assert "pyright -p tests/typing" in lint
