"""The README's code samples run as written, and its commands exist."""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_every_python_sample_in_the_readme_runs() -> None:
    blocks = re.findall(r"```python\n(.*?)```", README, flags=re.DOTALL)
    assert blocks, "the README should show at least one Python sample"
    for index, block in enumerate(blocks):
        # dataclasses look their module up in sys.modules, so give the sample a real one
        module = types.ModuleType(f"readme_sample_{index}")
        sys.modules[module.__name__] = module
        try:
            exec(compile(block, f"README.md sample {index}", "exec"), module.__dict__)
        finally:
            del sys.modules[module.__name__]


def test_the_two_setup_commands_are_make_targets() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    for target in ("demo", "test"):
        assert f"make {target}" in README
        assert re.search(rf"^{target}:", makefile, flags=re.MULTILINE)


def test_ci_runs_the_readme_test_command() -> None:
    assert "make test" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")
