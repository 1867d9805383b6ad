"""The README is a landing page that stays true: its first agent, its commands, its links.

Every Python block of the README runs, and its shown output is checked, in
``tests/test_docs_snippets.py`` with the guide's pages; these tests pin what
the landing page promises beyond that.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
SAMPLE = re.compile(r"```python\n(?P<code>.*?)```", re.DOTALL)


def test_the_first_agent_is_an_agent_in_about_ten_lines_from_the_package_root() -> None:
    first = README[README.index("## A first agent") :]
    code = SAMPLE.search(first)
    assert code is not None
    body = code.group("code")
    assert "Agent(" in body and ".run_sync(" in body
    imports = re.findall(r"^from (\S+) import", body, flags=re.MULTILINE)
    assert set(imports) <= {"dataclasses", "weakprompt"}
    # the agent itself, past the imports, the output type and the scripted model, is one short block
    agent_lines = [line for line in body[body.index("agent = Agent(") :].splitlines() if line.strip()]
    assert len(agent_lines) <= 4


def test_the_two_setup_commands_are_make_targets() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    for target in ("demo", "test", "docs"):
        assert f"make {target}" in README
        assert re.search(rf"^{target}:", makefile, flags=re.MULTILINE)


def test_ci_runs_the_readme_test_command_and_builds_the_guide() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "make test" in ci and "make docs" in ci


def test_every_relative_link_of_the_readme_leads_to_a_file() -> None:
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README)
    relative = [link for link in links if not link.startswith(("http://", "https://"))]
    assert relative
    missing = [link for link in relative if not (ROOT / link).exists()]
    assert not missing


def test_the_readme_says_what_a_fixed_session_id_does() -> None:
    assert "continues" in README and 'session="user-42"' in README
    assert "message_history=" in README
