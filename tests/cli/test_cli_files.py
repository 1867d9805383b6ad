"""``weakprompt run --files DIR``: the directory mounted as the Filesystem, read-only unless asked."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from weakprompt.cli import cli

MODULE = """
from weakprompt.adapters.testing import FunctionAdapter, ScriptedAdapter, tool_call, tool_call_turn
from weakprompt.contrib.files import FilesSection
from weakprompt.prompt import MarkdownSection, Prompt, PromptTemplate

task = MarkdownSection(title="Task", key="task", template="Go.")
prompt = Prompt(PromptTemplate(ns="t", key="plain", sections=[task]))
nested = MarkdownSection(title="Task", key="task", template="Go.", children=[FilesSection(key="mine")])
own = Prompt(PromptTemplate(ns="t", key="own", sections=[nested]))
asking = Prompt(PromptTemplate(ns="t", key="asking", sections=[task, FilesSection(writable=True)]))


def tool_names(request):
    return ",".join(t.name for t in request.tools)


def reader():
    turns = iter(
        [
            tool_call_turn(tool_call("read_file", {"path": "notes.md"}, id="c1")),
            tool_call_turn(tool_call("grep_files", {"pattern": "milk"}, id="c2")),
            tool_call_turn(tool_call("read_file", {"path": "../outside.txt"}, id="c3")),
        ]
    )
    return FunctionAdapter(lambda request: next(turns, None) or "tools: " + tool_names(request))


def writer():
    return ScriptedAdapter(
        [
            tool_call_turn(
                tool_call("edit_file", {"path": "notes.md", "old_text": "milk", "new_text": "oat milk"})
            ),
            tool_call_turn(tool_call("write_file", {"path": "new/list.md", "content": "- bread\\n"})),
            "written",
        ]
    )


def after_pause():
    return ScriptedAdapter(["approved and written"])


def no_files():
    return ScriptedAdapter([tool_call_turn(tool_call("list_files", {})), "none"])
"""


@pytest.fixture
def module(tmp_path: Path) -> Path:
    path = tmp_path / "files_module.py"
    path.write_text(MODULE)
    return path


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "shared"
    root.mkdir()
    (root / "notes.md").write_text("# Shopping\n- milk\n")
    (tmp_path / "outside.txt").write_text("secret\n")
    return root


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_run_with_files_mounts_the_directory_read_only(module: Path, folder: Path) -> None:
    result = invoke("run", f"{module}:prompt", "--adapter", f"{module}:reader", "--files", str(folder))
    assert result.exit_code == 0, result.output
    assert "2\\t- milk" in result.output  # the terminal view escapes the tab
    assert "notes.md:2: - milk" in result.output
    assert "contains '..'" in result.output
    assert "tools: list_files,read_file,glob_files,grep_files" in result.output
    assert (folder / "notes.md").read_text() == "# Shopping\n- milk\n"


def test_run_with_files_writable_offers_and_runs_the_writing_tools(module: Path, folder: Path) -> None:
    args = ["run", f"{module}:prompt", "--adapter", f"{module}:writer", "--files", str(folder)]
    result = invoke(*args, "--files-writable")
    assert result.exit_code == 0, result.output
    assert "written" in result.output and "PAUSED" not in result.output
    assert (folder / "notes.md").read_text() == "# Shopping\n- oat milk\n"
    assert (folder / "new" / "list.md").read_text() == "- bread\n"


def test_without_files_the_tools_are_absent_and_writes_need_files(module: Path, folder: Path) -> None:
    result = invoke("run", f"{module}:prompt", "--adapter", f"{module}:no_files")
    assert result.exit_code == 0, result.output
    assert "failed list_files" in result.output
    refused = CliRunner().invoke(
        cli, ["run", f"{module}:prompt", "--adapter", f"{module}:no_files", "--files-writable"]
    )
    assert refused.exit_code == 2 and "--files-writable needs --files DIR" in refused.output
    missing = CliRunner().invoke(
        cli, ["run", f"{module}:prompt", "--adapter", f"{module}:no_files", "--files", str(folder / "nope")]
    )
    assert missing.exit_code == 2 and "does not exist" in missing.output


def test_a_prompt_with_its_own_files_section_keeps_it(module: Path, folder: Path) -> None:
    result = invoke("run", f"{module}:own", "--adapter", f"{module}:reader", "--files", str(folder))
    assert result.exit_code == 0, result.output
    assert "tools: list_files,read_file,glob_files,grep_files" in result.output  # once, from the prompt
    assert "2\\t- milk" in result.output  # the terminal view escapes the tab
    refused = CliRunner().invoke(
        cli,
        ["run", f"{module}:own", "--adapter", f"{module}:writer", "--files", str(folder), "--files-writable"],
    )
    assert refused.exit_code == 1 and "has its own Files section" in refused.output


def test_a_prompt_whose_writes_need_approval_pauses_and_approve_with_files_finishes(
    module: Path, folder: Path, tmp_path: Path
) -> None:
    db = str(tmp_path / "runs.db")
    args = ["--db", db, "--session", "s1", "--files", str(folder)]
    paused = invoke("run", f"{module}:asking", "--adapter", f"{module}:writer", *args)
    assert paused.exit_code == 0, paused.output
    assert "PAUSED" in paused.output
    assert (folder / "notes.md").read_text() == "# Shopping\n- milk\n"
    done = invoke("approve", f"{module}:asking", "--adapter", f"{module}:after_pause", "--by", "ops", *args)
    assert done.exit_code == 0, done.output
    assert "approved and written" in done.output
    assert (folder / "notes.md").read_text() == "# Shopping\n- oat milk\n"
    refused = CliRunner().invoke(
        cli, ["deny", f"{module}:asking", "--db", db, "--session", "s1", "--files-writable"]
    )
    assert refused.exit_code == 2 and "--files-writable needs --files DIR" in refused.output


def test_run_that_pauses_prints_the_pause_not_an_empty_final_answer(module: Path, folder: Path) -> None:
    result = invoke("run", f"{module}:asking", "--adapter", f"{module}:writer", "--files", str(folder))
    assert result.exit_code == 0, result.output
    assert "PAUSED (pause 1): 1 call(s) wait for a decision" in result.output
    assert "edit_file" in result.output and "token=" in result.output
    assert "final answer" not in result.output and "(empty)" not in result.output
