"""The ``weakprompt`` CLI through click's CliRunner, with scripted adapters from a user module."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from loop_support import arithmetic_prompt
from weakprompt.cli import cli, main
from weakprompt.store import Store
from weakprompt.transcript import Transcript

MODULE = """
from loop_support import arithmetic_prompt, arithmetic_template, disclosure_prompt
from weakprompt.adapters.testing import FunctionAdapter, ScriptedAdapter, tool_call, tool_call_turn

prompt = arithmetic_prompt()
structured = arithmetic_prompt(output=True)
template = arithmetic_template()
hidden = disclosure_prompt()
not_a_prompt = 3


def factory():
    return arithmetic_prompt()


def scripted():
    return ScriptedAdapter(
        [
            tool_call_turn(tool_call("add", {"a": 2, "b": 2}, id="c1")),
            tool_call_turn(tool_call("nope", {})),
            "four",
        ]
    )


def structured_adapter():
    return ScriptedAdapter(['{"value": "x", "note": "n"}', '{"value": 4, "note": "sum"}'])


def opening():
    return ScriptedAdapter(
        [tool_call_turn(tool_call("open_sections", {"section_keys": ["secrets"], "reason": "r"})), "done"]
    )


def endless():
    return FunctionAdapter(lambda request: tool_call_turn(tool_call("add", {"a": 1, "b": 1})))


def named(model):
    return ScriptedAdapter(["model was " + str(model)], model=str(model))


instance = ScriptedAdapter(["from an instance"])
"""


@pytest.fixture
def module(tmp_path: Path) -> Path:
    path = tmp_path / "agent_module.py"
    path.write_text(MODULE)
    return path


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_run_prints_turns_calls_results_and_the_final_answer(module: Path, tmp_path: Path) -> None:
    db = tmp_path / "run.db"
    result = invoke(
        "run",
        f"{module}:prompt",
        "--adapter",
        f"{module}:scripted",
        "--input",
        "2+2?",
        "--db",
        str(db),
        "--session",
        "s-1",
    )
    assert result.exit_code == 0, result.output
    out = result.output
    assert "turn 1" in out and "turn 3" in out
    assert "→ call add" in out and '"a":2' in out
    assert "← result add" in out and '"total":4' in out
    assert "← failed nope" in out and "Unknown tool" in out
    assert "final answer" in out and "four" in out
    assert "3 model call(s), 2 tool call(s) (1 failed)" in out
    # The transcript is in the database under the given session id.
    store = Store.open(db)
    roles = [c.role for c in Transcript(store, "s-1").log()]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "tool", "assistant"]


def test_run_accepts_templates_factories_and_adapter_instances(module: Path) -> None:
    for attribute in ("template", "factory"):
        result = invoke("run", f"{module}:{attribute}", "--adapter", f"{module}:instance")
        assert result.exit_code == 0, result.output
        assert "from an instance" in result.output


def test_run_passes_model_to_a_factory_that_takes_it(module: Path) -> None:
    result = invoke("run", f"{module}:prompt", "--adapter", f"{module}:named", "--model", "tiny-1")
    assert result.exit_code == 0, result.output
    assert "model was tiny-1" in result.output


def test_run_prints_structured_output_and_the_rejection(module: Path) -> None:
    result = invoke("run", f"{module}:structured", "--adapter", f"{module}:structured_adapter")
    assert result.exit_code == 0, result.output
    assert "answer rejected" in result.output and "$.value" in result.output
    assert "output (Answer)" in result.output
    assert '"value": 4' in result.output


def test_run_shows_opened_sections(module: Path) -> None:
    result = invoke("run", f"{module}:hidden", "--adapter", f"{module}:opening")
    assert result.exit_code == 0, result.output
    assert "opened sections secrets" in result.output
    assert "secret_lookup" in result.output


def test_run_reports_the_turn_limit_as_an_error(module: Path) -> None:
    result = invoke("run", f"{module}:prompt", "--adapter", f"{module}:endless", "--max-turns", "2")
    assert result.exit_code == 1
    assert "MaxTurnsExceededError" in result.output and "max_turns=2" in result.output


def test_run_force_tool_and_timeout_options(module: Path) -> None:
    result = invoke(
        "run", f"{module}:prompt", "--adapter", f"{module}:scripted", "--force-tool", "add", "--timeout", "60"
    )
    assert result.exit_code == 0, result.output
    bad = invoke("run", f"{module}:prompt", "--adapter", f"{module}:scripted", "--force-tool", "zzz")
    assert bad.exit_code == 1 and "'zzz'" in bad.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "no_colon_here"], "is not a reference"),
        (["run", "missing_file.py:prompt"], "no such file"),
        (["run", "{module}:absent"], "has no attribute 'absent'"),
        (["run", "{module}:not_a_prompt"], "expected a Prompt"),
        (["run", "{module}:prompt", "--adapter", "bogus"], "unknown adapter 'bogus'"),
        (["run", "{module}:prompt", "--adapter", "{module}:not_a_prompt"], "not a provider adapter"),
        (["run", "{module}:prompt", "--adapter", "{module}:scripted", "--model", "m"], "takes no model"),
        (["run", "{module}:prompt", "--adapter", "openai"], "needs --model"),
        (["run", "{module}:prompt", "--adapter", "anthropic"], "needs --model"),
        (["run", "{module}:prompt", "--adapter", "local", "--base-url", "http://x"], "--base-url applies"),
        (["run", "no.such.module.anywhere:prompt"], "cannot import module"),
    ],
)
def test_bad_references_and_options_are_clear_errors(module: Path, args: list[str], message: str) -> None:
    result = invoke(*[a.replace("{module}", str(module)) for a in args])
    assert result.exit_code == 1, result.output
    assert message in result.output


def test_transcript_show_lists_sessions_and_prints_commits(module: Path, tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    invoke("run", f"{module}:prompt", "--adapter", f"{module}:scripted", "--db", str(db), "--session", "abc")
    listing = invoke("transcript", "show", "--db", str(db))
    assert listing.exit_code == 0 and "abc" in listing.output
    shown = invoke("transcript", "show", "--db", str(db), "--session", "abc")
    assert shown.exit_code == 0, shown.output
    out = shown.output
    for expected in (
        "#0 system",
        "#1 assistant",
        "#2 tool",
        "→ call add",
        "tools: add, echo",
        "error",
        "usage:",
    ):
        assert expected in out
    compiled = invoke("transcript", "show", "--db", str(db), "--session", "abc", "--compiled", "--full")
    assert compiled.exit_code == 0 and "#0 system" in compiled.output


def test_transcript_show_marks_edits(module: Path, tmp_path: Path) -> None:
    db = tmp_path / "e.db"
    invoke("run", f"{module}:hidden", "--adapter", f"{module}:opening", "--db", str(db), "--session", "e")
    shown = invoke("transcript", "show", "--db", str(db), "--session", "e")
    assert "EDIT of" in shown.output


def test_transcript_show_errors(tmp_path: Path) -> None:
    missing = invoke("transcript", "show", "--db", str(tmp_path / "none.db"))
    assert missing.exit_code == 1 and "no database" in missing.output
    assert not (tmp_path / "none.db").exists()
    empty = tmp_path / "empty.db"
    Store.open(empty).close()
    listing = invoke("transcript", "show", "--db", str(empty))
    assert "no transcripts" in listing.output
    unknown = invoke("transcript", "show", "--db", str(empty), "--session", "zzz")
    assert unknown.exit_code == 1 and "no commits for session 'zzz'" in unknown.output


def test_tools_lists_names_schemas_and_hashes(module: Path) -> None:
    rendered = arithmetic_prompt().render()
    table = invoke("tools", f"{module}:prompt")
    assert table.exit_code == 0, table.output
    for name, digest in zip(rendered.tool_names, rendered.tool_hashes, strict=True):
        assert name in table.output
        assert digest[:16] in table.output.replace("\n", "").replace("│", "").replace(" ", "")
    as_json = invoke("tools", f"{module}:prompt", "--json")
    data = json.loads(as_json.output)
    assert [d["name"] for d in data] == ["add", "echo"]
    assert [d["hash"] for d in data] == list(rendered.tool_hashes)
    assert data[0]["schema"]["parameters"]["properties"]["a"]["description"] == "first addend"


def test_tools_on_a_summarized_prompt_and_one_without_tools(module: Path, tmp_path: Path) -> None:
    hidden = invoke("tools", f"{module}:hidden")
    assert "open_sections" in hidden.output and "summarized sections" in hidden.output
    bare = tmp_path / "bare.py"
    bare.write_text(
        "from weakprompt.prompt import MarkdownSection, Prompt, PromptTemplate\n"
        "section = MarkdownSection(title='T', key='t', template='x')\n"
        "prompt = Prompt(PromptTemplate(ns='t', key='b', sections=[section]))\n"
    )
    result = invoke("tools", f"{bare}:prompt")
    assert result.exit_code == 0 and "offers no tools" in result.output


def test_main_entry_point_and_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    assert "run" in out and "transcript" in out and "tools" in out


def test_module_reference_by_import_path() -> None:
    result = invoke("tools", "loop_support:arithmetic_prompt")
    assert result.exit_code == 0, result.output
    assert "add" in result.output
