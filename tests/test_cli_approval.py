"""`weakprompt transcript show` marks paused runs; `weakprompt approve` / `deny` decide and resume them."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from approval_support import make_prompt, script
from weakprompt.adapters.testing import ScriptedAdapter
from weakprompt.cli import cli
from weakprompt.runtime import evaluate, paused_run
from weakprompt.session import Session
from weakprompt.store import Store
from weakprompt.transcript import Transcript

PROMPT_REF = "approval_support:make_prompt"
ADAPTER_REF = "approval_support:adapter_after_pause"


def paused_db(tmp_path: Path) -> str:
    db = str(tmp_path / "runs.db")
    with Store.open(db) as store:
        evaluate(
            make_prompt(), adapter=ScriptedAdapter(script()), session=Session(session_id="s1"), store=store
        )
    return db


def test_show_marks_the_paused_session_and_its_pending_calls(tmp_path: Path) -> None:
    db = paused_db(tmp_path)
    runner = CliRunner()
    listing = runner.invoke(cli, ["transcript", "show", "--db", db])
    assert listing.exit_code == 0, listing.output
    assert "s1 PAUSED (2 pending)" in listing.output
    shown = runner.invoke(cli, ["transcript", "show", "--db", db, "--session", "s1"])
    assert shown.exit_code == 0, shown.output
    assert "PAUSED (pause 1)" in shown.output
    assert "pending c2 delete_file" in shown.output and "pending c3 delete_file" in shown.output


def test_approve_one_and_deny_the_other_then_the_run_finishes(tmp_path: Path) -> None:
    db = paused_db(tmp_path)
    args = ["approve", PROMPT_REF, "--db", db, "--session", "s1", "--adapter", ADAPTER_REF]
    result = CliRunner().invoke(cli, [*args, "--call", "c2", "--deny", "c3", "--by", "ops"])
    assert result.exit_code == 0, result.output
    assert "Done." in result.output
    with Store.open(db) as store:
        assert paused_run(store, "s1") is None
        tool_results = [m for m in Transcript(store, "s1").compile().messages if m.role == "tool"]
    assert [(m.tool_call_id, m.is_error) for m in tool_results] == [
        ("c1", False),
        ("c2", False),
        ("c3", True),
    ]


def test_deny_all_and_refusals(tmp_path: Path) -> None:
    db = paused_db(tmp_path)
    base = ["--db", db, "--session", "s1", "--adapter", ADAPTER_REF]
    runner = CliRunner()
    unknown = runner.invoke(cli, ["deny", PROMPT_REF, *base, "--call", "nope"])
    assert unknown.exit_code != 0 and "no pending call 'nope'" in unknown.output
    partial = runner.invoke(cli, ["deny", PROMPT_REF, *base, "--call", "c2"])
    assert partial.exit_code != 0 and "not named: c3" in partial.output
    done = runner.invoke(cli, ["deny", PROMPT_REF, *base, "--message", "Not today."])
    assert done.exit_code == 0, done.output
    again = runner.invoke(cli, ["deny", PROMPT_REF, *base])
    assert again.exit_code != 0 and "not paused" in again.output
