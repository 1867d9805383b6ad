"""The top-level package: lazy re-exports and a cheap import."""

from __future__ import annotations

import subprocess
import sys

import pytest

import weakprompt


def test_lazy_names_resolve_to_the_package_objects() -> None:
    from weakprompt.prompt import Prompt
    from weakprompt.runtime import evaluate

    assert weakprompt.Prompt is Prompt
    assert weakprompt.evaluate is evaluate
    assert "Prompt" in dir(weakprompt)


def test_unknown_attribute_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no_such_name"):
        _ = weakprompt.no_such_name  # type: ignore[attr-defined]


def test_import_weakprompt_loads_no_heavy_dependency() -> None:
    code = (
        "import sys, weakprompt; "
        "heavy = [m for m in ('sqlalchemy', 'openai', 'anthropic', 'llama_cpp', 'weakprompt.prompt') "
        "if m in sys.modules]; print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
