"""A missing API key is a ConfigurationError when the adapter is built, and one line in the CLI."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from weakprompt.adapters import AnthropicAdapter, OpenAIAdapter
from weakprompt.cli import cli
from weakprompt.errors import ConfigurationError

KEY_VARIABLES = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "OPENAI_API_KEY")


@pytest.fixture
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in KEY_VARIABLES:
        monkeypatch.delenv(name, raising=False)


@pytest.mark.usefixtures("no_keys")
def test_anthropic_without_any_key_is_refused_at_construction() -> None:
    with pytest.raises(ConfigurationError, match=r"AnthropicAdapter: no API key.*ANTHROPIC_API_KEY"):
        AnthropicAdapter("claude-test")


@pytest.mark.usefixtures("no_keys")
def test_openai_without_any_key_is_refused_at_construction_too() -> None:
    with pytest.raises(ConfigurationError, match="OpenAIAdapter"):
        OpenAIAdapter("gpt-test")


@pytest.mark.usefixtures("no_keys")
@pytest.mark.parametrize("variable", ["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"])
def test_a_key_from_the_environment_is_enough(monkeypatch: pytest.MonkeyPatch, variable: str) -> None:
    monkeypatch.setenv(variable, "from-env")
    client = AnthropicAdapter("claude-test").client
    assert "from-env" in (client.api_key, client.auth_token)


@pytest.mark.usefixtures("no_keys")
def test_an_explicit_key_is_used() -> None:
    assert AnthropicAdapter("claude-test", api_key="given").client.api_key == "given"


@pytest.mark.usefixtures("no_keys")
def test_a_compatible_server_at_base_url_needs_no_key() -> None:
    adapter = AnthropicAdapter("local-model", base_url="http://compatible.test")
    assert adapter.client.api_key == "not-needed"
    assert str(adapter.client.base_url).startswith("http://compatible.test")


PROMPT_MODULE = """
from weakprompt.prompt import MarkdownSection, Prompt, PromptTemplate

prompt = Prompt(PromptTemplate(ns="t", key="k", sections=[MarkdownSection(title="T", key="t", template="x")]))
"""


@pytest.mark.usefixtures("no_keys")
@pytest.mark.parametrize(
    ("adapter", "expected"), [("anthropic", "AnthropicAdapter"), ("openai", "OpenAIAdapter")]
)
def test_the_cli_prints_one_line_for_a_missing_key(tmp_path: Path, adapter: str, expected: str) -> None:
    module = tmp_path / "keyless_agent.py"
    module.write_text(PROMPT_MODULE)
    result = CliRunner().invoke(cli, ["run", f"{module}:prompt", "--adapter", adapter, "--model", "m"])
    assert result.exit_code == 1
    assert result.exception is None or isinstance(result.exception, SystemExit)
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    assert lines[0].startswith(f"Error: ConfigurationError: {expected}")
    assert "Traceback" not in result.output
