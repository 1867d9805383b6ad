"""Redaction through a whole run: a secret in a failing tool reaches no stored byte, event or model message.

The run uses the real loop, a scripted model and a SQLite file store. The
database is scanned as raw bytes (the main file and the write-ahead log)
and cell by cell, with zlib-compressed cells inflated, so a secret cannot
hide anywhere we wrote it. A run without redaction is the control: there,
the same scan must find the secret.
"""

from __future__ import annotations

import sqlite3
import zlib
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from weakprompt.adapters.testing import ScriptedAdapter, tool_call, tool_call_turn
from weakprompt.cli import cli
from weakprompt.errors import DeadlineExceededError, PromptEvaluationError
from weakprompt.prompt import MarkdownSection, Prompt, PromptTemplate
from weakprompt.runtime import Redactor, default_redact, evaluate
from weakprompt.session import Session
from weakprompt.store import Store
from weakprompt.tools import NoParams, ToolContext, ToolResult, tool

API_KEY = "sk-ant-api03-" + "Q7x" * 12  # the default hook knows this shape
PASSWORD = "hunter2-pale-horse"  # only the deployment's own hook knows this one
SECRETS = (API_KEY, PASSWORD)


@dataclass(frozen=True)
class Attempt:
    host: str


@tool(name="connect", description="Connect to the database.")
def connect(params: NoParams, *, context: ToolContext) -> ToolResult[None]:
    context.session[Attempt].append(Attempt("db"))
    raise ConnectionError(f"login as admin/{PASSWORD} with key {API_KEY} refused")


@tool(name="refuse", description="Refuse politely.")
def refuse(params: NoParams, *, context: ToolContext) -> ToolResult[None]:
    return ToolResult.error(f"not allowed for password {PASSWORD}")


@tool(name="late", description="Run out of time.")
def late(params: NoParams, *, context: ToolContext) -> ToolResult[None]:
    raise DeadlineExceededError(f"gave up waiting on admin:{PASSWORD}")


def leaky_prompt() -> Prompt[None]:
    return Prompt(
        PromptTemplate(
            ns="tests/redaction",
            key="leaky",
            name="leaky",
            sections=[
                MarkdownSection(title="T", key="t", template="Connect.", tools=[connect, refuse, late])
            ],
        )
    )


def deployment_hook(text: str) -> str:
    """What a deployment would pass: the default rules plus its own secret."""
    return default_redact(text).replace(PASSWORD, "[password]")


def stored_texts(db: Path) -> list[bytes]:
    """Every byte the store wrote: the files themselves, and each cell (inflated when compressed)."""
    found = [path.read_bytes() for path in db.parent.glob(db.name + "*")]
    with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
        tables = [row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        for table in tables:
            for row in conn.execute(f'SELECT * FROM "{table}"'):  # names from sqlite_master
                for cell in row:
                    if isinstance(cell, bytes):
                        found.append(cell)
                        try:
                            found.append(zlib.decompress(cell))
                        except zlib.error:
                            pass
                    elif isinstance(cell, str):
                        found.append(cell.encode("utf-8"))
    return found


def leaks(blobs: list[bytes], secrets: tuple[str, ...] = SECRETS) -> list[str]:
    return [secret for secret in secrets if any(secret.encode() in blob for blob in blobs)]


def run_leaky(db: Path, calls: list[str], redact: Redactor) -> tuple[ScriptedAdapter, list[object], Session]:
    adapter = ScriptedAdapter([tool_call_turn(tool_call(name)) for name in calls] + ["done"])
    session = Session(session_id="leaky")
    events: list[object] = []
    session.bus.subscribe_all(events.append)
    with Store.open(db) as store:
        response = evaluate(leaky_prompt(), adapter=adapter, session=session, store=store, redact=redact)
        assert response.text == "done" and response.failed_tool_calls == len(calls)
    return adapter, events, session


def test_a_secret_raised_by_a_handler_reaches_no_stored_byte_event_or_model_message(tmp_path: Path) -> None:
    db = tmp_path / "run.db"
    adapter, events, session = run_leaky(db, ["connect", "refuse"], deployment_hook)
    assert leaks(stored_texts(db)) == []
    assert leaks([repr(event).encode() for event in events]) == []
    assert leaks([repr(adapter.requests).encode()]) == []
    assert session[Attempt].all() == ()  # the failed call was rolled back
    # the model still learns what went wrong
    last = adapter.requests[-1].context.messages
    assert "ConnectionError: login as admin/[password] with key [REDACTED] refused" in last[-3].content
    assert last[-1].content == "not allowed for password [password]"


def test_without_redaction_the_same_scan_finds_the_secret(tmp_path: Path) -> None:
    """The control: the scan above would have seen a leak."""
    db = tmp_path / "run.db"
    adapter, events, _ = run_leaky(db, ["connect"], lambda text: text)
    assert leaks(stored_texts(db)) == list(SECRETS)
    assert leaks([repr(event).encode() for event in events]) == list(SECRETS)
    assert leaks([repr(adapter.requests).encode()]) == list(SECRETS)


def test_the_default_hook_alone_scrubs_the_api_key(tmp_path: Path) -> None:
    db = tmp_path / "run.db"
    run_leaky(db, ["connect"], default_redact)
    assert leaks(stored_texts(db)) == [PASSWORD]


def test_an_error_raised_out_of_the_run_is_redacted_too(tmp_path: Path) -> None:
    db = tmp_path / "run.db"
    adapter = ScriptedAdapter([tool_call_turn(tool_call("late")), "done"])
    session = Session(session_id="late")
    events: list[object] = []
    session.bus.subscribe_all(events.append)
    with Store.open(db) as store, pytest.raises(PromptEvaluationError) as raised:
        evaluate(leaky_prompt(), adapter=adapter, session=session, store=store, redact=deployment_hook)
    error = raised.value
    assert "hit a limit of the evaluation: DeadlineExceededError: gave up waiting on admin:[password]" in str(
        error
    )
    assert leaks([str(error).encode(), *(note.encode() for note in error.__notes__)]) == []
    assert leaks([repr(event).encode() for event in events]) == []
    assert leaks(stored_texts(db)) == []


def test_a_failing_hook_withholds_the_text_and_the_run_goes_on(tmp_path: Path) -> None:
    def broken(text: str) -> str:
        raise RuntimeError("hook bug")

    db = tmp_path / "run.db"
    adapter, _, _ = run_leaky(db, ["connect"], broken)
    assert leaks(stored_texts(db)) == []
    assert "text withheld" in adapter.requests[-1].context.messages[-1].content


CLI_MODULE = """
from test_redaction_loop import leaky_prompt, PASSWORD
from weakprompt.adapters.testing import ScriptedAdapter, tool_call, tool_call_turn

prompt = leaky_prompt()


def adapter():
    return ScriptedAdapter([tool_call_turn(tool_call("connect")), "done"])


def hide_password(text):
    return text.replace(PASSWORD, "[pw]")


not_callable = 3
"""


@pytest.fixture
def module(tmp_path: Path) -> Path:
    path = tmp_path / "leaky_module.py"
    path.write_text(CLI_MODULE)
    return path


def invoke(module: Path, db: Path, *extra: str) -> str:
    args = ["run", f"{module}:prompt", "--adapter", f"{module}:adapter", "--db", str(db), *extra]
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize(
    ("extra", "expected_leaks"),
    [((), [PASSWORD]), (("--redact", "{module}:hide_password"), [API_KEY])],
    ids=["default", "custom"],
)
def test_cli_run_redacts_with_the_default_or_the_named_hook(
    module: Path, tmp_path: Path, extra: tuple[str, ...], expected_leaks: list[str]
) -> None:
    db = tmp_path / "cli.db"
    output = invoke(module, db, *(arg.replace("{module}", str(module)) for arg in extra))
    assert "ConnectionError" in output
    assert leaks([output.encode()]) == expected_leaks
    assert leaks(stored_texts(db)) == expected_leaks


@pytest.mark.parametrize(
    ("reference", "message"),
    [("{module}:not_callable", "--redact needs a function"), ("{module}:nope", "no attribute")],
)
def test_cli_run_rejects_a_redact_reference_that_is_not_a_function(
    module: Path, tmp_path: Path, reference: str, message: str
) -> None:
    args = [
        "run",
        f"{module}:prompt",
        "--adapter",
        f"{module}:adapter",
        "--redact",
        reference.replace("{module}", str(module)),
    ]
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 1 and message in result.output
