"""Each extra installs what the guide's matching page uses, in a fresh virtualenv.

The tracing guide's blocks need the OpenTelemetry SDK and the OTLP/HTTP
exporter, and the testing guide promises hypothesis strategies and pytest fixtures:
installing ``weakprompt[otel]`` or ``weakprompt[testing]`` alone (no dev
extras) must be enough to run them.
The wheel is built once from this checkout; each extra gets a venv of its
own, so nothing the test suite's own environment has can hide a missing
dependency.
"""

from __future__ import annotations

import re
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = re.compile(r"```python\n(?P<code>.*?)```(?:\s*prints\s*```text\n(?P<output>.*?)```)?", re.DOTALL)

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    build = ["wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(out), str(ROOT)]
    subprocess.run([sys.executable, "-m", "pip", *build], check=True)
    (built,) = out.glob("weakprompt-*.whl")
    return built


def _venv_with(wheel: Path, extra: str, where: Path) -> Path:
    """A fresh venv (no system packages) with ``weakprompt[extra]`` installed; its python."""
    venv.EnvBuilder(with_pip=True, clear=True).create(where)
    python = where / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "-q", f"{wheel}[{extra}]"], check=True)
    return python


def _run_sample(python: Path, code: str, cwd: Path) -> str:
    script = cwd / "sample.py"
    script.write_text(code, encoding="utf-8")
    done = subprocess.run([str(python), str(script)], capture_output=True, text=True, cwd=cwd, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


# the page's `scripted hello` block builds an OpenAIAdapter; the otel extra alone has no openai SDK
_SCRIPTED_HELLO = (
    "import weakprompt\n"
    "weakprompt.OpenAIAdapter = lambda *a, **k: weakprompt.FunctionAdapter(\n"
    "    lambda request: 'Hello from the scripted model.'\n"
    ")\n"
)


def test_the_otel_extra_runs_the_tracing_guide_and_exports_over_otlp(wheel: Path, tmp_path: Path) -> None:
    from docs_support import DOCS, otlp_collector, snippets

    python = _venv_with(wheel, "otel", tmp_path / "venv")
    blocks = [s for s in snippets(DOCS / "how-to" / "tracing.md") if s.skip is None]
    assert any(s.otlp_collector for s in blocks)
    code = _SCRIPTED_HELLO + "\n".join(s.code for s in blocks)
    with otlp_collector() as received:  # the subprocess inherits OTEL_EXPORTER_OTLP_ENDPOINT
        printed = _run_sample(python, code, tmp_path)
    assert printed == "".join(s.expected or "" for s in blocks)
    assert received, "the OTLP exporter of the otel extra sent nothing"


def test_the_testing_extra_runs_the_guides_block_and_brings_pytest_with_the_fixtures(
    wheel: Path, tmp_path: Path
) -> None:
    python = _venv_with(wheel, "testing", tmp_path / "venv")
    page = (ROOT / "docs" / "how-to" / "testing.md").read_text(encoding="utf-8")
    sample = SAMPLE.search(page)  # the guide's first block: check_tool and params_for
    assert sample is not None
    _run_sample(python, sample.group("code"), tmp_path)
    (tmp_path / "test_uses_fixtures.py").write_text(
        "def test_fixtures(session, store, transcript, scripted_adapter):\n"
        "    assert transcript.session_id\n",
        encoding="utf-8",
    )
    done = subprocess.run(
        [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_uses_fixtures.py"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout
