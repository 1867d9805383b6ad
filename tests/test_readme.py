"""The README's code samples run as written and print what it says, and its lists stay true."""

from __future__ import annotations

import contextlib
import io
import re
import sys
import types
from pathlib import Path

import weakprompt

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
SAMPLE = re.compile(r"```python\n(?P<code>.*?)```(?:\s*prints\s*```text\n(?P<output>.*?)```)?", re.DOTALL)


def _run(code: str, index: int) -> str:
    # dataclasses look their module up in sys.modules, so give the sample a real one
    module = types.ModuleType(f"readme_sample_{index}")
    sys.modules[module.__name__] = module
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(code, f"README.md sample {index}", "exec"), module.__dict__)
    finally:
        del sys.modules[module.__name__]
    return out.getvalue()


def test_every_python_sample_in_the_readme_runs_and_prints_what_it_shows() -> None:
    samples = list(SAMPLE.finditer(README))
    assert samples, "the README should show at least one Python sample"
    for index, sample in enumerate(samples):
        printed = _run(sample.group("code"), index)
        expected = sample.group("output")
        if expected is not None:
            assert printed == expected, f"README sample {index} printed {printed!r}"


def test_the_taste_ends_with_a_typed_evaluation_on_a_function_adapter() -> None:
    taste = README[README.index("## A taste") :]
    code = SAMPLE.search(taste)
    assert code is not None and code.group("output")
    assert "evaluate(" in code.group("code") and "FunctionAdapter(" in code.group("code")
    # the sample imports only from the package root
    imports = re.findall(r"^from (\S+) import", code.group("code"), flags=re.MULTILINE)
    assert set(imports) <= {"dataclasses", "weakprompt"}


def test_the_top_level_names_table_lists_every_public_name() -> None:
    section = README[README.index("## What `import weakprompt` gives you") :]
    section = section[: section.index("\n## ", 1)]
    rows = re.findall(r"^\| [^|]+ \| (.*) \|$", section, flags=re.MULTILINE)
    listed = {name for row in rows[1:] for name in re.findall(r"`(\w+)`", row)}  # rows[0] is the header
    assert listed == {name for name in weakprompt.__all__ if name != "__version__"}


def test_the_two_setup_commands_are_make_targets() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    for target in ("demo", "test"):
        assert f"make {target}" in README
        assert re.search(rf"^{target}:", makefile, flags=re.MULTILINE)


def test_ci_runs_the_readme_test_command() -> None:
    assert "make test" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")
