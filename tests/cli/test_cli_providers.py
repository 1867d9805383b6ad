"""``weakprompt run``'s provider options: output mode, temperature, max tokens, retries, OpenAI knobs.

Factories in a user module receive the options they name; options that
cannot apply are refused with the flag named; ``module:factory`` is found
from the current directory; a server that cannot be reached is named.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from weakprompt.cli import cli

MODULE = """
from loop_support import arithmetic_prompt
from weakprompt.adapters.testing import FunctionAdapter, ScriptedAdapter

prompt = arithmetic_prompt()
structured = arithmetic_prompt(output=True)


def configured(model, output_mode, temperature, retries, strict_tools, max_tokens_field):
    seen = f"{model}|{output_mode}|{temperature}|{retries}|{strict_tools}|{max_tokens_field}"
    return ScriptedAdapter(["ok"], model=seen)


def plain():
    return ScriptedAdapter(["ok"])


def echo():
    return FunctionAdapter(
        lambda request: f"max={request.max_output_tokens} mode={request.output_mode}"
    )


instance = ScriptedAdapter(["from an instance"])
"""


@pytest.fixture
def module(tmp_path: Path) -> Path:
    path = tmp_path / "provider_module.py"
    path.write_text(MODULE)
    return path


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_a_factory_gets_the_options_it_names(module: Path) -> None:
    result = invoke(
        "run",
        f"{module}:prompt",
        "--adapter",
        f"{module}:configured",
        "--model",
        "m1",
        "--output-mode",
        "json_object",
        "--temperature",
        "0.2",
        "--retries",
        "4",
        "--no-strict-tools",
        "--max-tokens-field",
        "max_tokens",
    )
    assert result.exit_code == 0, result.output
    assert "m1|json_object|0.2|4|False|max_tokens" in result.output


def test_options_left_out_are_not_passed(module: Path) -> None:
    result = invoke("run", f"{module}:prompt", "--adapter", f"{module}:plain")
    assert result.exit_code == 0, result.output


def test_max_tokens_reaches_every_model_call(module: Path) -> None:
    result = invoke("run", f"{module}:prompt", "--adapter", f"{module}:echo", "--max-tokens", "33")
    assert result.exit_code == 0, result.output
    assert "max=33 mode=None" in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--adapter", "{module}:plain", "--output-mode", "tool"], "takes no --output-mode option"),
        (["--adapter", "{module}:instance", "--temperature", "1"], "--temperature cannot apply to it"),
        (["--adapter", "{module}:instance", "--model", "x"], "--model cannot apply to it"),
        (["--adapter", "local", "--retries", "2"], "--retries does not apply to the local adapter"),
        (
            ["--adapter", "anthropic", "--model", "c", "--max-tokens-field", "max_tokens"],
            "--max-tokens-field does not apply to the anthropic adapter",
        ),
        (["--adapter", "nothing_here_module:factory"], "looked in the current directory"),
        (["--adapter", "bogus"], "./file.py:name or module:name"),
    ],
)
def test_options_that_cannot_apply_are_refused(module: Path, args: list[str], message: str) -> None:
    result = invoke("run", f"{module}:prompt", *(a.format(module=module) for a in args))
    assert result.exit_code == 1
    assert message in result.output


def test_an_unknown_output_mode_is_refused_by_the_option(module: Path) -> None:
    result = invoke("run", f"{module}:prompt", "--adapter", f"{module}:plain", "--output-mode", "yaml")
    assert result.exit_code == 2 and "yaml" in result.output


def test_module_factory_is_found_from_the_current_directory(
    tmp_path: Path, module: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "my_models_here.py").write_text(
        "from weakprompt.adapters.testing import ScriptedAdapter\n\n"
        "def scripted():\n    return ScriptedAdapter(['from the cwd module'])\n"
    )
    monkeypatch.chdir(tmp_path)

    result = invoke("run", f"{module}:prompt", "--adapter", "my_models_here:scripted")

    assert result.exit_code == 0, result.output
    assert "from the cwd module" in result.output


def test_a_server_that_cannot_be_reached_is_named(module: Path) -> None:
    result = invoke(
        "run",
        f"{module}:prompt",
        "--adapter",
        "openai",
        "--model",
        "m",
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--retries",
        "0",
    )
    assert result.exit_code == 1
    assert "ProviderConnectionError" in result.output
    assert "http://127.0.0.1:9/v1/chat/completions" in result.output


def test_the_help_documents_file_and_module_factories() -> None:
    result = invoke("run", "--help")
    assert "./file.py:name" in result.output and "current directory" in result.output
    for flag in (
        "--output-mode",
        "--temperature",
        "--max-tokens",
        "--retries",
        "--strict-tools",
        "--max-tokens-field",
    ):
        assert flag in result.output


def test_built_in_adapters_get_their_options(
    module: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = tmp_path / "missing.gguf"
    local = invoke(
        "run", f"{module}:prompt", "--model", str(missing), "--output-mode", "native", "--temperature", "0"
    )
    assert local.exit_code == 1 and "missing.gguf" in local.output
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    claude = invoke("run", f"{module}:prompt", "--adapter", "anthropic", "--model", "c", "--retries", "1")
    assert claude.exit_code == 1 and "no API key" in claude.output


def test_retries_and_fallbacks_are_printed_as_they_happen() -> None:
    from io import StringIO

    from rich.console import Console

    from weakprompt.cli.live import LivePrinter
    from weakprompt.events import AdapterFellBack, EventBus, ModelCallRetried

    out = StringIO()
    dispatcher = EventBus()
    LivePrinter(Console(file=out, width=200, highlight=False)).attach(dispatcher)

    dispatcher.dispatch(
        ModelCallRetried(
            provider="openai",
            model="m",
            attempt=1,
            wait_seconds=2.5,
            error_type="RateLimitError",
            error="slow down",
        )
    )
    dispatcher.dispatch(
        AdapterFellBack(
            from_adapter="openai",
            from_model="m",
            to_adapter="local",
            to_model="s",
            error_type="ProviderError",
            error="x",
        )
    )

    text = out.getvalue()
    assert "retry openai attempt 1 failed (RateLimitError: slow down); trying again in 2.5s" in text
    assert "fallback openai/m failed (ProviderError); asking local/s" in text


@pytest.mark.parametrize(
    ("spec", "url", "endpoint"),
    [
        ("gemini", "http://127.0.0.1:9", "gemini error: the stream from http://127.0.0.1:9"),
        ("openai-responses", "http://127.0.0.1:9/v1", "http://127.0.0.1:9/v1/responses"),
    ],
)
def test_gemini_and_openai_responses_are_built_in_adapters(
    module: Path, monkeypatch: pytest.MonkeyPatch, spec: str, url: str, endpoint: str
) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "test-key")
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    result = invoke(
        "run", f"{module}:prompt", "--adapter", spec, "--model", "m", "--base-url", url, "--retries", "0"
    )
    assert result.exit_code == 1
    assert "ProviderConnectionError" in result.output and endpoint in result.output


def test_the_new_built_in_adapters_get_their_options(monkeypatch: pytest.MonkeyPatch) -> None:
    from weakprompt.adapters import GeminiAdapter, OpenAIResponsesAdapter
    from weakprompt.cli.adapters import AdapterOptions, build_adapter

    monkeypatch.setenv("GEMINI_API_KEY", "test-key")
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    options = AdapterOptions(output_mode="tool", temperature=0.25, retries=2)
    gemini = build_adapter("gemini", model="gemini-2.5-flash", options=options)
    assert isinstance(gemini, GeminiAdapter) and gemini.model == "gemini-2.5-flash"
    assert gemini.model_settings.temperature == 0.25 and gemini.output_modes.default == "tool"
    responses = build_adapter(
        "openai-responses", model="gpt-5-mini", options=AdapterOptions(strict_tools=False, temperature=0.5)
    )
    assert isinstance(responses, OpenAIResponsesAdapter) and responses.name == "openai"
    assert responses.model_settings.temperature == 0.5
    untouched = build_adapter("gemini", model="gemini-2.5-flash")
    assert isinstance(untouched, GeminiAdapter) and untouched.model_settings.temperature is None


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--adapter", "gemini"], "--adapter gemini needs --model"),
        (["--adapter", "openai-responses"], "--adapter openai-responses needs --model"),
        (
            ["--adapter", "gemini", "--model", "g", "--no-strict-tools"],
            "does not apply to the gemini adapter",
        ),
        (
            ["--adapter", "openai-responses", "--model", "o", "--max-tokens-field", "max_tokens"],
            "--max-tokens-field does not apply to the openai-responses adapter",
        ),
        (["--base-url", "http://127.0.0.1:9"], "gemini, openai-responses adapters, not local"),
    ],
)
def test_the_new_built_in_adapters_refuse_what_cannot_apply(
    module: Path, args: list[str], message: str
) -> None:
    result = invoke("run", f"{module}:prompt", *args)
    assert result.exit_code == 1
    assert message in result.output


def test_the_help_names_every_built_in_adapter() -> None:
    output = " ".join(invoke("run", "--help").output.split()).replace("- ", "-")  # undo the wrapping
    assert "local | openai | anthropic | gemini | openai-responses" in output
