"""``weakprompt inspect`` and the terminal session list of ``weakprompt transcript show``."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from inspector_support import build_store
from weakprompt.cli import cli


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_store(tmp_path_factory.mktemp("cli") / "store.db")


def test_transcript_show_lists_time_prompt_turns_tokens_and_status(db: Path) -> None:
    result = CliRunner().invoke(cli, ["transcript", "show", "--db", str(db)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    lines = {line.split()[2]: line for line in result.output.splitlines() if line[:4].isdigit()}
    assert set(lines) == {"tiny", "ran-out", "edited-later", "agent-run"}
    assert "log-doctor" in lines["agent-run"] and lines["agent-run"].split()[-1] == "finished"
    assert lines["agent-run"].split()[-3] == "4"  # turns
    assert "looper" in lines["ran-out"] and lines["ran-out"].split()[-1] == "failed"
    assert "4 session(s)" in result.output


def test_inspect_serves_the_app_on_localhost_by_default(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import uvicorn

    seen: dict[str, object] = {}

    async def main_loop(self: uvicorn.Server) -> None:  # the server is up: look, then stop
        seen["host"], seen["app"] = self.config.host, self.config.app

    monkeypatch.setattr(uvicorn.Server, "main_loop", main_loop)
    result = CliRunner().invoke(cli, ["inspect", "--db", str(db), "--port", "0"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert seen["host"] == "127.0.0.1"
    assert "read-only" in result.output

    from starlette.testclient import TestClient

    with TestClient(seen["app"], base_url="http://localhost") as client:  # type: ignore[arg-type]
        assert "agent-run" in client.get("/").text


def test_inspect_refuses_a_missing_file_and_names_a_missing_extra(
    tmp_path: Path, db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = CliRunner().invoke(cli, ["inspect", "--db", str(tmp_path / "none.db")])
    assert missing.exit_code == 1 and "no database at" in missing.output
    assert not (tmp_path / "none.db").exists()
    monkeypatch.setitem(sys.modules, "uvicorn", None)
    no_extra = CliRunner().invoke(cli, ["inspect", "--db", str(db)])
    assert no_extra.exit_code == 1 and "pip install 'weakprompt[inspector]'" in no_extra.output


def test_importing_weakprompt_loads_no_web_framework() -> None:
    import subprocess

    code = (
        "import sys, weakprompt, weakprompt.inspector, weakprompt.cli\n"
        "bad = [m for m in ('starlette', 'jinja2', 'uvicorn') if m in sys.modules]\n"
        "print(bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
