"""``weakprompt mcp tools``, ``weakprompt mcp serve`` and ``weakprompt run --mcp`` through click's runner."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from mcp_support import time_command
from weakprompt.cli import cli

pytestmark = pytest.mark.timeout(120)

MODULE = """
from weakprompt import MarkdownSection, Prompt, PromptTemplate
from weakprompt.adapters.testing import ScriptedAdapter, tool_call, tool_call_turn

prompt = Prompt(PromptTemplate(ns="t", key="clock", sections=[
    MarkdownSection(title="Clock", key="clock", template="Tell the time."),
]))


def asks_the_time():
    return ScriptedAdapter([
        tool_call_turn(tool_call("get_current_time", {"timezone": "Europe/Lisbon"}, id="c1")),
        "it is late",
    ])
"""


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_mcp_tools_lists_a_servers_tools_as_json() -> None:
    result = invoke("mcp", "tools", time_command(), "--json")
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    names = {tool["name"] for tool in document["tools"]}
    assert names == {"get_current_time", "convert_time"}
    current = next(t for t in document["tools"] if t["name"] == "get_current_time")
    assert current["input_schema"]["required"] == ["timezone"]
    assert current["read_only"] is True


def test_mcp_tools_prints_text_too() -> None:
    result = invoke("mcp", "tools", time_command())
    assert result.exit_code == 0
    assert "2 tool(s)" in result.output and "get_current_time read-only" in result.output


def test_mcp_tools_on_something_that_is_not_a_server_fails_clearly() -> None:
    result = invoke("mcp", "tools", "false", "--timeout", "10")
    assert result.exit_code == 1
    assert "could not connect to the MCP server 'false'" in result.output


def test_run_mounts_mcp_servers_for_the_run(tmp_path: Path) -> None:
    module = tmp_path / "clock_module.py"
    module.write_text(MODULE)
    result = invoke(
        "run", f"{module}:prompt", "--adapter", f"{module}:asks_the_time", "--mcp", time_command()
    )
    assert result.exit_code == 0, result.output
    assert "get_current_time" in result.output
    assert "Europe/Lisbon" in result.output
    assert "it is late" in result.output


def test_mcp_tools_lists_prompts_and_resources_too() -> None:
    from mcp_support import everything_command

    result = invoke("mcp", "tools", f"{everything_command()} stdio", "--json")
    assert result.exit_code == 0, result.output
    document = json.loads(result.output[result.output.index("{") :])
    assert "args-prompt" in {p["name"] for p in document["prompts"]}
    assert any(r["uri"].endswith("architecture.md") for r in document["resources"])
    text = invoke("mcp", "tools", f"{everything_command()} stdio")
    assert "prompt(s): simple-prompt" in text.output and "resource(s): demo://" in text.output


def test_mcp_serve_wires_the_prompt_store_and_transport(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from weakprompt.mcp import PromptServer

    module = tmp_path / "clock_module.py"
    module.write_text(MODULE)
    seen: list[tuple[str, object]] = []

    async def fake_http(self: PromptServer, *, host: str, port: int, path: str, **_security: object) -> None:
        seen.append(("http", (self.name, host, port, path, self.store is not None)))

    async def fake_stdio(self: PromptServer) -> None:
        seen.append(("stdio", self.prompt.template.key))
        raise KeyboardInterrupt  # Ctrl-C ends the command quietly

    monkeypatch.setattr(PromptServer, "serve_http", fake_http)
    monkeypatch.setattr(PromptServer, "serve_stdio", fake_stdio)
    db = tmp_path / "served.db"
    args = ["--http", "--port", "9123", "--path", "/tools", "--db", str(db), "--name", "clock"]
    http = invoke("mcp", "serve", f"{module}:prompt", *args)
    assert http.exit_code == 0, http.output
    stdio = invoke("mcp", "serve", f"{module}:prompt")
    assert stdio.exit_code == 0, stdio.output
    assert seen == [("http", ("clock", "127.0.0.1", 9123, "/tools", True)), ("stdio", "clock")]
    assert db.exists()


def test_mcp_serve_refuses_a_target_that_is_not_a_prompt(tmp_path: Path) -> None:
    result = invoke("mcp", "serve", f"{tmp_path / 'missing.py'}:prompt")
    assert result.exit_code == 1
    assert "missing.py" in result.output


def test_without_the_sdk_the_commands_say_which_extra_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "mcp" else real(name, *a)
    )
    result = invoke("mcp", "tools", "anything")
    assert result.exit_code == 1
    assert "pip install 'weakprompt[mcp]'" in result.output


def test_mcp_serve_off_loopback_without_a_token_refuses_with_a_clear_message(tmp_path: Path) -> None:
    module = tmp_path / "clock_module.py"
    module.write_text(MODULE)
    result = CliRunner().invoke(
        cli,
        ["mcp", "serve", f"{module}:prompt", "--http", "--host", "0.0.0.0"],
        env={"WEAKPROMPT_MCP_TOKEN": None},
    )
    assert result.exit_code == 1
    assert "not a loopback address" in result.output and "--insecure" in result.output


def test_mcp_serve_insecure_warns_and_passes_the_security_options(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from weakprompt.mcp import PromptServer

    module = tmp_path / "clock_module.py"
    module.write_text(MODULE)
    seen: list[dict[str, object]] = []

    async def fake_http(self: PromptServer, **options: object) -> None:
        seen.append(options)

    monkeypatch.setattr(PromptServer, "serve_http", fake_http)
    args = [
        "--http",
        "--host",
        "0.0.0.0",
        "--insecure",
        "--allow-host",
        "box",
        "--allow-origin",
        "https://a.b",
    ]
    result = CliRunner().invoke(
        cli, ["mcp", "serve", f"{module}:prompt", *args], env={"WEAKPROMPT_MCP_TOKEN": None}
    )
    assert result.exit_code == 0, result.output
    assert "without a token" in result.output
    [options] = seen
    assert options["insecure"] is True and options["token"] is None
    assert options["allowed_hosts"] == ("box",) and options["allowed_origins"] == ("https://a.b",)
