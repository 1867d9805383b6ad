"""``weakprompt replay DB SESSION APP:factory``: exit 0 when identical, 1 with the report on a divergence."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from replay_support import record
from weakprompt import Store
from weakprompt.cli import cli

APP = """
import sys
sys.path.insert(0, {support!r})
from replay_support import make_prompt

def build_prompt():
    return make_prompt()

def changed_prompt():
    return make_prompt(style="Be brief.\\x1b[2J[bold]loud[/bold]")
"""


def _app(tmp_path: Path) -> Path:
    path = tmp_path / "app.py"
    path.write_text(APP.format(support=str(Path(__file__).parent)))
    return path


def test_replay_command_exits_0_when_identical_and_1_with_the_report(tmp_path: Path) -> None:
    db = str(record(tmp_path / "rec.db"))
    app = _app(tmp_path)
    same = CliRunner().invoke(cli, ["replay", db, "rec", f"{app}:build_prompt"])
    assert same.exit_code == 0, same.output
    assert "identical: 2 model call(s)" in same.output
    assert "not stored" in same.output
    ran = CliRunner().invoke(cli, ["replay", db, "rec", f"{app}:build_prompt", "--tools", "run"])
    assert ran.exit_code == 0, ran.output
    changed = CliRunner().invoke(cli, ["replay", db, "rec", f"{app}:changed_prompt"])
    assert changed.exit_code == 1, changed.output
    assert "diverged after 0 of 2 model call(s)" in changed.output
    assert "section_path: style" in changed.output
    assert "\x1b" not in changed.output  # the changed text is shown escaped, not sent to the terminal
    assert "[bold]loud[/bold]" in changed.output.replace("\\[", "[")


def test_replay_command_refusals(tmp_path: Path) -> None:
    app = _app(tmp_path)
    missing = CliRunner().invoke(cli, ["replay", str(tmp_path / "none.db"), "rec", f"{app}:build_prompt"])
    assert missing.exit_code == 1 and "no database at" in missing.output
    db = str(record(tmp_path / "rec.db"))
    unknown = CliRunner().invoke(cli, ["replay", db, "other", f"{app}:build_prompt"])
    assert unknown.exit_code == 1 and "ConfigurationError" in unknown.output and "'other'" in unknown.output


def test_replay_command_stores_the_replayed_run_only_with_record(tmp_path: Path) -> None:
    db = record(tmp_path / "rec.db")
    app = _app(tmp_path)
    plain = CliRunner().invoke(cli, ["replay", str(db), "rec", f"{app}:build_prompt"])
    assert plain.exit_code == 0, plain.output
    with Store.open(db) as store:
        assert store.session_ids() == ["rec"]
    kept = CliRunner().invoke(cli, ["replay", str(db), "rec", f"{app}:build_prompt", "--record"])
    assert kept.exit_code == 0, kept.output
    with Store.open(db) as store:
        (replayed,) = [s for s in store.session_ids() if s != "rec"]
    assert f"recorded as session {replayed}" in kept.output
