"""Text a model, a tool or a server wrote cannot drive the terminal of whoever reads the CLI's output.

``weakprompt transcript show`` and ``weakprompt mcp tools`` used to print
stored and served text raw: a screen clear, an OSC 8 hyperlink, an OSC 52
clipboard write went through, and a call id chosen by the model could
return the cursor and overwrite the pending-approval line, so a person
approved what they did not see. Every such character is now a visible
escape (``weakprompt.safetext.terminal_text``).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import mcp.client.stdio  # noqa: F401  (binds the SDK's default errlog to the real stderr, not the runner's)
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from approval_support import make_prompt
from weakprompt.adapters.testing import ScriptedAdapter, text_turn, tool_call, tool_call_turn
from weakprompt.cli import cli
from weakprompt.messages import ToolCall, Usage
from weakprompt.runtime import Approve, evaluate, paused_run, resume_sync
from weakprompt.safetext import terminal_text
from weakprompt.session import Session
from weakprompt.store import Store
from weakprompt.transcript import Transcript

ESC = "\x1b"
SAMPLES = {
    "CSI screen clear": f"{ESC}[2J{ESC}[H",
    "CSI erase line": f"{ESC}[2K",
    "OSC 8 hyperlink": f"{ESC}]8;;http://evil.example{ESC}\\click here{ESC}]8;;{ESC}\\",
    "OSC 52 clipboard": f"{ESC}]52;c;cm0gLXJmIH4={chr(7)}",
    "carriage return": "approve this\rdeny that",
    "backspace": "rm -rf /\b\b\b\b\b\b\bls",
    "C1 CSI": "\x9b31mred",
    "C1 OSC": "\x9d0;title\x9c",
    "bidi override": "invoice\u202efdp.exe",
    "bidi isolate": "a\u2066b\u2069c",
    "NUL and DEL": "a\x00b\x7fc",
    "tab and vertical tab": "a\tb\x0bc\x0cd",
    "line separator": "a\u2028b\u2029c",
    "zero width": "a\u200bb\ufeffc",
    "lone surrogate": "half \ud800 a character",
}
HOSTILE = "".join(SAMPLES.values()).replace("\x00", "")  # a store refuses NUL (PostgreSQL cannot keep it)
SESSION = "evil" + HOSTILE.replace("\ud800", "")  # and a session id must be valid Unicode

# Text that leans on what terminals act on: C0, C1, DEL, bidi and other format characters.
CONTROLS = st.sampled_from(
    [chr(c) for c in range(0x20)] + ["\x7f"] + [chr(c) for c in range(0x80, 0xA0)]
    + ["\u200e", "\u200f", "\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067"]
    + ["\u2068", "\u2069", "\u2028", "\u2029", "\ufeff", "\ud800"]
)  # fmt: skip
HOSTILE_TEXT = st.lists(st.one_of(st.text(max_size=8), CONTROLS), max_size=24).map("".join)


def _visible(output: str) -> list[str]:
    """The characters of ``output`` a terminal would not just show (newline is allowed)."""
    return [c for c in output if c != "\n" and not c.isprintable()]


@given(HOSTILE_TEXT)
def test_terminal_text_leaves_only_visible_characters_and_newlines(text: str) -> None:
    shown = terminal_text(text)
    assert _visible(shown) == []
    assert shown.count("\n") == text.count("\n")
    if all(c == "\n" or c.isprintable() for c in text):
        assert shown == text  # ordinary text reads as it is


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_each_kind_of_terminal_escape_is_shown_not_obeyed(name: str) -> None:
    shown = terminal_text(SAMPLES[name])
    assert _visible(shown) == [] and ESC not in shown and "\r" not in shown
    assert "\\" in shown  # each was replaced by an escape one can read


def test_the_escapes_name_each_character() -> None:
    assert terminal_text(f"{ESC}[2J") == "\\x1b[2J"
    assert terminal_text("a\rb\tc\bd") == "a\\rb\\tc\\x08d"
    assert terminal_text("\x9b\u202e\U000e0001") == "\\x9b\\u202e\\U000e0001"
    assert terminal_text("line one\nline two") == "line one\nline two"


def _hostile_store(path: Path) -> None:
    """A session whose every stored text is hostile, and one paused on a call id built to hide."""
    with Store.open(path) as store:
        record = Transcript(store, SESSION)
        record.system("You are " + HOSTILE)
        record.user("please " + HOSTILE)
        record.assistant(
            "sure " + HOSTILE,
            tool_calls=[ToolCall("id" + HOSTILE, "tool" + HOSTILE, '{"x": "' + ESC + '[2J"}')],
            usage=Usage(input_tokens=3, output_tokens=4),
        )
        record.tool_result("id" + HOSTILE, "tool" + HOSTILE, "result " + HOSTILE, is_error=True)
        hidden = f"c9\r{ESC}[2K  pending c0 list_files"  # returns to the line start and erases it
        adapter = ScriptedAdapter(
            [
                tool_call_turn(tool_call("delete_file", {"path": "/etc/passwd" + SESSION[4:]}, id=hidden)),
                text_turn("Done " + HOSTILE),
            ]
        )
        evaluate(make_prompt(), adapter=adapter, session=Session(session_id="hide"), store=store)
        decided = ScriptedAdapter(
            [tool_call_turn(tool_call("delete_file", {"path": "/tmp/x"}, id="c7")), text_turn("ok")]
        )
        evaluate(make_prompt(), adapter=decided, session=Session(session_id="decided"), store=store)
        waiting = paused_run(store, "decided")
        assert waiting is not None
        resume_sync(
            store,
            "decided",
            [Approve("c7", waiting.pending[0].token)],
            prompt=make_prompt(),
            adapter=ScriptedAdapter([text_turn("ok")]),
            decided_by="eve" + SESSION[4:],  # a lone surrogate here is not refused clearly (see report)
        )


@pytest.fixture(scope="module")
def hostile_db(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("hostile") / "evil.db"
    _hostile_store(path)
    return str(path)


def _show(*args: str) -> str:
    result = CliRunner().invoke(cli, ["transcript", "show", *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_transcript_show_prints_no_terminal_control_from_stored_text(hostile_db: str) -> None:
    session = SESSION
    listing = _show("--db", hostile_db)
    commits = _show("--db", hostile_db, "--session", session, "--full")
    compiled = _show("--db", hostile_db, "--session", session, "--compiled")
    for output in (listing, commits, compiled):
        assert _visible(output) == [], sorted(set(_visible(output)))
    assert "\\x1b]52;c;" in commits and "\\x1b]8;;http://evil.example" in commits and "\\u202e" in commits


def test_a_call_id_cannot_overwrite_the_pending_approval_line(hostile_db: str) -> None:
    output = _show("--db", hostile_db, "--session", "hide")
    assert _visible(output) == []
    pending = [line for line in output.splitlines() if "pending" in line and "delete_file" in line]
    assert len(pending) == 1
    assert "c9\\r\\x1b[2K  pending c0 list_files delete_file(" in pending[0]  # the whole id, in the open
    block = output.split("PAUSED (pause 1)", 1)[1]  # the pending call, however the console wrapped it
    assert "waiting for approval" in block and "token=" in block


def test_who_decided_is_escaped_too(hostile_db: str) -> None:
    output = _show("--db", hostile_db, "--session", "decided")
    assert _visible(output) == []
    assert "decided by eveA" not in output and "decided by eve\\x1b[2J" in output


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=HOSTILE_TEXT.map(lambda t: t.replace("\x00", "")))
def test_transcript_show_of_any_text_is_all_visible(text: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "any.db"
        with Store.open(path) as store:
            record = Transcript(store, "s")
            record.user(text)
            record.assistant(text, tool_calls=[ToolCall(text or "x", "t" + text, "{}")])
            record.tool_result(text or "x", "t" + text, text)
        output = _show("--db", str(path), "--session", "s", "--full")
    assert _visible(output) == []


def test_mcp_tools_prints_no_terminal_control_a_server_sent(tmp_path: Path) -> None:
    server = Path(__file__).resolve().parents[1] / "support" / "hostile_mcp_server.py"
    command = f"{sys.executable} {server}"
    text = CliRunner().invoke(cli, ["mcp", "tools", command], catch_exceptions=False)
    assert text.exit_code == 0, text.output
    assert _visible(text.output) == [], sorted(set(_visible(text.output)))
    assert "\\x1b]52;c;" in text.output and "\\u202e" in text.output
    assert "bad\\x1bname" in text.output  # a tool the server named with an ESC: shown, escaped
    as_json = CliRunner().invoke(cli, ["mcp", "tools", command, "--json"], catch_exceptions=False)
    assert as_json.exit_code == 0, as_json.output
    assert as_json.output.isascii() and _visible(as_json.output) == []
    import json

    document = json.loads(as_json.output)
    assert "\x1b]52;c;" in document["tools"][0]["description"]  # the JSON still says exactly what was sent
