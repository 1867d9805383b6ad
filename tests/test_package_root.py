"""The top-level package: lazy re-exports and a cheap import."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import weakprompt

PUBLIC = [name for name in weakprompt.__all__ if name != "__version__"]


def test_lazy_names_resolve_to_the_package_objects() -> None:
    from weakprompt.prompt import Prompt
    from weakprompt.runtime import evaluate

    assert weakprompt.Prompt is Prompt
    assert weakprompt.evaluate is evaluate
    assert "Prompt" in dir(weakprompt)


def test_all_lists_exactly_the_lazy_names() -> None:
    assert sorted(PUBLIC) == sorted(weakprompt._LAZY)  # pyright: ignore[reportPrivateUsage]
    assert dir(weakprompt) == sorted(weakprompt.__all__)


@pytest.mark.parametrize("name", PUBLIC)
def test_every_public_name_is_its_package_object(name: str) -> None:
    module_name = weakprompt._LAZY[name]  # pyright: ignore[reportPrivateUsage]
    module = importlib.import_module(module_name)
    # re-exported from a package root or a foundation module, never from an internal module
    assert not any(part.startswith("_") for part in module_name.split("."))
    assert name in getattr(module, "__all__", ())
    assert getattr(weakprompt, name) is getattr(module, name)


def test_a_first_agent_needs_only_the_top_level_names() -> None:
    for name in (
        "evaluate",
        "FunctionAdapter",
        "ScriptedAdapter",
        "ToolCall",
        "AssistantTurn",
        "Usage",
        "Budget",
        "Deadline",
        "Store",
        "Transcript",
        "Session",
        "Prompt",
        "PromptTemplate",
        "MarkdownSection",
        "tool",
        "Tool",
        "ToolResult",
        "ToolContext",
        "PromptResponse",
        "WeakpromptError",
        "ConfigurationError",
        "OutputParseError",
        "PromptValidationError",
    ):
        assert name in weakprompt.__all__, name


def test_unknown_attribute_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no_such_name"):
        _ = weakprompt.no_such_name  # type: ignore[attr-defined]


def test_import_weakprompt_loads_no_heavy_dependency() -> None:
    heavy = (
        "sqlalchemy",
        "openai",
        "anthropic",
        "llama_cpp",
        "docstring_parser",
        "weakprompt.prompt",
        "weakprompt.tools",
        "weakprompt.runtime",
        "weakprompt.adapters",
    )
    code = (
        f"import sys, weakprompt; heavy = [m for m in {heavy!r} if m in sys.modules]; print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_using_the_test_adapters_loads_no_database_or_sdk() -> None:
    code = (
        "import sys, weakprompt; weakprompt.FunctionAdapter; weakprompt.ScriptedAdapter; weakprompt.tool; "
        "print(','.join(m for m in ('sqlalchemy', 'openai', 'anthropic', 'llama_cpp') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
