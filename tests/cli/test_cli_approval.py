"""`weakprompt transcript show` marks paused runs; `weakprompt approve` / `deny` decide and resume them."""

from __future__ import annotations

import getpass
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
    row = next(line for line in listing.output.splitlines() if " s1 " in line)
    assert row.rstrip().endswith("PAUSED (2 pending)")
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


def test_approve_one_call_with_edited_arguments(tmp_path: Path) -> None:
    db = paused_db(tmp_path)
    base = ["approve", PROMPT_REF, "--db", db, "--session", "s1", "--adapter", ADAPTER_REF]
    runner = CliRunner()
    two = runner.invoke(cli, [*base, "--call", "c2", "--call", "c3", "--arguments", "{}"])
    assert two.exit_code != 0 and "edits one call" in two.output
    bad = runner.invoke(cli, [*base, "--call", "c2", "--deny", "c3", "--arguments", "{nope"])
    assert bad.exit_code != 0 and "not JSON" in bad.output
    listed = runner.invoke(cli, [*base, "--call", "c2", "--deny", "c3", "--arguments", "[1]"])
    assert listed.exit_code != 0 and "must be a JSON object" in listed.output
    done = runner.invoke(cli, [*base, "--call", "c2", "--deny", "c3", "--arguments", '{"path": "/tmp/x"}'])
    assert done.exit_code == 0, done.output
    with Store.open(db) as store:
        log = Transcript(store, "s1").log()
    edits = [c.metadata["approval"] for c in log if c.metadata and "approval" in c.metadata]
    assert edits[0] == {
        "decision": "approved_with_edits",
        "decided_by": getpass.getuser(),  # --by defaults to the OS user
        "original_arguments": {"path": "/tmp/a.txt"},
        "arguments": {"path": "/tmp/x"},
    }


def test_approve_ends_on_a_new_pause(tmp_path: Path) -> None:
    db = str(tmp_path / "runs.db")
    with Store.open(db) as store:
        evaluate(
            make_prompt(),
            adapter=ScriptedAdapter(script()[:1]),
            session=Session(session_id="s1"),
            store=store,
        )
    result = CliRunner().invoke(
        cli,
        ["approve", PROMPT_REF, "--db", db, "--session", "s1", "--adapter", "approval_support:pause_again"],
    )
    assert result.exit_code == 0, result.output
    assert "PAUSED (pause 2)" in result.output
