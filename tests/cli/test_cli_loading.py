"""Reference loading and adapter selection behind ``weakprompt run``, tested directly."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from rich.console import Console

from weakprompt.cli.adapters import build_adapter
from weakprompt.cli.live import LivePrinter, format_arguments, shorten
from weakprompt.cli.loading import load_attribute, load_prompt, resolve_prompt, split_reference
from weakprompt.errors import ConfigurationError
from weakprompt.events import EventBus
from weakprompt.messages import ToolCall
from weakprompt.runtime import ToolResultStored
from weakprompt.transcript import Transcript


def test_split_reference_takes_the_last_colon() -> None:
    assert split_reference("C:/x/mod.py:name") == ("C:/x/mod.py", "name")
    for bad in ("mod.py", ":name", "mod.py:", "mod.py:not-an-identifier"):
        with pytest.raises(ConfigurationError, match="not a reference"):
            split_reference(bad)


def test_a_module_that_fails_to_import_propagates_and_leaves_no_trace(tmp_path: Path) -> None:
    path = tmp_path / "broken.py"
    path.write_text("raise RuntimeError('boom at import')\n")
    before = set(sys.modules)
    with pytest.raises(RuntimeError, match="boom at import"):
        load_attribute(f"{path}:anything")
    assert not {name for name in set(sys.modules) - before if name.startswith("_weakprompt_cli_")}
    assert str(tmp_path) not in sys.path


def test_a_file_in_a_folder_already_on_sys_path(tmp_path: Path) -> None:
    (tmp_path / "onpath.py").write_text("value = 7\n")
    sys.path.insert(0, str(tmp_path))
    try:
        assert load_attribute(f"{tmp_path / 'onpath.py'}:value") == 7
        assert str(tmp_path) in sys.path
    finally:
        sys.path.remove(str(tmp_path))


def test_resolve_prompt_follows_factories_and_names_what_was_wrong() -> None:
    from loop_support import arithmetic_prompt, arithmetic_template

    assert resolve_prompt(arithmetic_prompt).template.key == "arith"
    assert resolve_prompt(arithmetic_template()).template.key == "arith"
    with pytest.raises(ConfigurationError, match="value returned by the reference is a int"):
        resolve_prompt(lambda: 3)
    with pytest.raises(ConfigurationError, match="is a type"):
        resolve_prompt(dict)
    assert load_prompt("loop_support:disclosure_prompt").template.key == "disclosure"


def test_builtin_adapters_are_built_without_network(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    openai_adapter = build_adapter("openai", model="gpt-test", base_url="http://127.0.0.1:9/v1")
    assert (openai_adapter.name, openai_adapter.model) == ("openai", "gpt-test")
    anthropic_adapter = build_adapter("anthropic", model="claude-test")
    assert (anthropic_adapter.name, anthropic_adapter.model) == ("anthropic", "claude-test")


def test_a_factory_without_a_readable_signature_is_called_plainly(tmp_path: Path) -> None:
    path = tmp_path / "adapters_mod.py"
    path.write_text("weird = dict\n")
    with pytest.raises(ConfigurationError, match="is a dict, not a provider adapter"):
        build_adapter(f"{path}:weird")


def test_live_printer_shortens_and_shows_raw_arguments() -> None:
    from datetime import UTC, datetime

    console = Console(record=True, width=200)
    dispatcher = EventBus()
    LivePrinter(console).attach(dispatcher)
    call = ToolCall(id="c1", name="t", arguments='{"broken": ')
    dispatcher.dispatch(
        ToolResultStored(
            prompt_name="p",
            turn=1,
            call=call,
            content="x" * 1000,
            is_error=False,
            commit_hash="h",
            session_id="s",
            created_at=datetime(2026, 1, 1, tzinfo=UTC),
        )
    )
    text = console.export_text()
    assert "(400 more characters)" in text
    assert format_arguments(call.arguments) == '{"broken": '
    assert format_arguments({"a": 1}) == '{"a":1}'
    assert shorten("short") == "short"


def test_a_path_python_cannot_import_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("value = 1\n")
    with pytest.raises(ConfigurationError, match=r"cannot import .*notes\.txt as a Python module"):
        load_attribute(f"{path}:value")


def test_transcript_show_prints_commits_without_linked_tools(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from weakprompt.cli import cli
    from weakprompt.store import Store

    db = tmp_path / "plain.db"
    store = Store.open(db)
    transcript = Transcript(store, "plain")
    transcript.user("hello")
    transcript.assistant("hi there")
    store.close()
    result = CliRunner().invoke(cli, ["transcript", "show", "--db", str(db), "--session", "plain"])
    assert result.exit_code == 0, result.output
    assert "#0 user" in result.output and "#1 assistant" in result.output
    assert "tools:" not in result.output
