"""A store with the sessions an inspector must show, written by the real loop and pipeline.

``build_store(path)`` writes, into a SQLite file:

- ``agent-run``: ``evaluate()`` with a scripted model. Turn 1 reads the build
  log (summarized by a ``tool_result`` hook: an edit with provenance) and
  calls a tool that raises (an error result); turn 2 reads the nightly log,
  too large for the context (stored behind a handle); turn 3 asks
  ``tool_output`` about it (read-grep extraction; ``tool_output`` joins the
  tool set, a change); turn 4 answers.
- ``edited-later``: a hand-written transcript whose grep result is edited
  after the fact (an EDIT commit), with a trace id on its reply.
- ``ran-out``: an evaluation that hit its turn cap (no final answer).
- ``tiny``: one stored output of its own, compressed (used to damage a row).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from weakprompt import Store, Transcript, evaluate
from weakprompt.adapters.testing import FunctionAdapter, tool_call, tool_call_turn
from weakprompt.errors import MaxTurnsExceededError
from weakprompt.messages import AssistantTurn, ToolCall, Usage
from weakprompt.prompt import MarkdownSection, Prompt, PromptTemplate
from weakprompt.runtime import ModelRequest
from weakprompt.runtime.results import ToolOutputStore
from weakprompt.session import Session
from weakprompt.tools import ToolContext, ToolResult, tool
from weakprompt.transcript import TOOL_SUMMARY_SYSTEM_PROMPT

NEEDLE = "ERROR disk full on /var/db"
BUILD_LOG = "\n".join(
    [f"[{i:04d}] INFO compiled module_{i}.py" for i in range(120)]
    + ["[0120] ERROR tests/test_api.py::test_login failed: expected 200, got 500"]
    + [f"[{i:04d}] INFO linked target_{i}" for i in range(121, 160)]
)
NIGHTLY_LOG = "\n".join(
    f"[{i:05d}] {NEEDLE}" if i == 3131 else f"[{i:05d}] INFO worker-{i % 8} finished job {i}"
    for i in range(6000)
)
TINY_OUTPUT = "routine line that compresses well\n" * 400
HANDLE = re.compile(r'tool_output\(handle = "([^"]+)"')
WRAPPER = re.compile(r"<wp-([A-Za-z0-9]+)-FINAL")
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
SPAN_ID = "00f067aa0ba902b7"


@dataclass(frozen=True)
class LogName:
    name: str


@tool(name="read_log", description="Read a log by name: build or nightly.")
def read_log(params: LogName, *, context: ToolContext) -> ToolResult[None]:
    return ToolResult(message=NIGHTLY_LOG if params.name == "nightly" else BUILD_LOG)


@dataclass(frozen=True)
class NoParams:
    pass


@tool(name="flaky_probe", description="Probe a service (always broken here).")
def flaky_probe(params: NoParams, *, context: ToolContext) -> ToolResult[None]:
    raise RuntimeError("probe backend unreachable")


def _prompt(name: str) -> Prompt[None]:
    section = MarkdownSection(
        title="Task", key="task", template="Find what broke.", tools=[read_log, flaky_probe]
    )
    return Prompt(PromptTemplate(ns="tests", key="inspector", name=name, sections=[section]))


def _model(request: ModelRequest) -> AssistantTurn | str:
    """Plays the agent, the summarizer and the read-grep sub-agent, told apart by what it is offered."""
    messages = request.context.messages
    system = messages[0].content if messages and messages[0].role == "system" else ""
    last = messages[-1]
    offered = {t.name for t in request.tools}
    usage = Usage(input_tokens=request.context.token_count, output_tokens=20, model_calls=1)
    if system == TOOL_SUMMARY_SYSTEM_PROMPT:
        output = last.content.split("<tool_output>\n", 1)[-1]
        kept = [line for line in output.splitlines() if "ERROR" in line]
        return AssistantTurn(text="\n".join(kept) + "\n(routine lines left out)", usage=usage)
    if {"read", "grep"} <= offered and "read_log" not in offered:
        if last.role == "user":
            handle = re.search(r"handle: (\S+)", system)
            assert handle is not None
            call = tool_call("grep", {"handle": handle.group(1), "pattern": "ERROR", "context": 0})
            return tool_call_turn(call, usage=usage)
        wrapper = WRAPPER.search(system)
        assert wrapper is not None
        hits = "\n".join(line for line in last.content.splitlines() if "ERROR" in line)
        return AssistantTurn(
            text=f'<wp-{wrapper.group(1)}-FINAL format="text">\n{hits}\n</wp-{wrapper.group(1)}-FINAL>',
            usage=usage,
        )
    if last.role == "user":
        return tool_call_turn(
            tool_call("read_log", {"name": "build"}, id="call-build"),
            tool_call("flaky_probe", {}, id="call-probe"),
            usage=usage,
        )
    if last.name == "flaky_probe":
        return tool_call_turn(tool_call("read_log", {"name": "nightly"}, id="call-nightly"), usage=usage)
    handle = HANDLE.search(last.content)
    if handle is not None:
        arguments = {"handle": handle.group(1), "extract": "every ERROR line, verbatim", "mode": "read-grep"}
        return tool_call_turn(tool_call("tool_output", arguments, id="call-extract"), usage=usage)
    return AssistantTurn(text="The nightly run failed: disk full on /var/db.", usage=usage)


def _agent_run(store: Store) -> None:
    transcript = Transcript(store, "agent-run")
    transcript.configure_tool_summarization(instructions={"read_log": "keep every ERROR line verbatim"})
    adapter = FunctionAdapter(_model, name="scripted", model="agent", context_window=8192)
    evaluate(
        _prompt("log-doctor"),
        adapter=adapter,
        session=Session(),
        input="What broke last night?",
        transcript=transcript,
    )


def _ran_out(store: Store) -> None:
    transcript = Transcript(store, "ran-out")

    def loop_forever(request: ModelRequest) -> AssistantTurn:
        return tool_call_turn(tool_call("read_log", {"name": "build"}))

    adapter = FunctionAdapter(loop_forever, name="scripted", model="looper")
    try:
        evaluate(
            _prompt("looper"),
            adapter=adapter,
            session=Session(),
            input="Loop.",
            transcript=transcript,
            max_turns=2,
        )
    except MaxTurnsExceededError:
        pass


def _edited_later(store: Store) -> None:
    t = Transcript(store, "edited-later")
    t.set_tools([{"name": "grep", "description": "search", "parameters": {"type": "object"}}])
    t.system("You search code.")
    t.user("Where is login defined?")
    t.assistant(
        "",
        tool_calls=[ToolCall("g1", "grep", '{"pattern": "login"}')],
        usage=Usage(input_tokens=50, output_tokens=7, model_calls=1),
        metadata={"trace_id": TRACE_ID, "span_id": SPAN_ID},
    )
    hits = "src/app/auth.py:88: def login(user, password):\n" + "".join(
        f"docs/changelog.md:{n}: mentions login\n" for n in range(1, 30)
    )
    grep = t.tool_result("g1", "grep", hits)
    t.tool_result(
        "g1",
        "grep",
        "src/app/auth.py:88: def login(user, password):",
        edit=grep.hash,
        metadata={"triggered_by": "tests:manual-trim"},
    )
    t.set_tools(
        [
            {"name": "grep", "description": "search", "parameters": {"type": "object"}},
            {"name": "read", "description": "read a file", "parameters": {"type": "object"}},
        ]
    )
    t.assistant("login is defined in src/app/auth.py:88.", usage=Usage(input_tokens=60, output_tokens=9))


def _tiny(store: Store) -> None:
    t = Transcript(store, "tiny")
    t.system("You read logs.")
    t.user("Show the routine log.")
    t.assistant("", tool_calls=[ToolCall("t1", "read_log", '{"name": "routine"}')])
    outputs = ToolOutputStore(store, "tiny")
    outputs.store_result("t1", "read_log", '{"name": "routine"}', TINY_OUTPUT)
    t.tool_result("t1", "read_log", TINY_OUTPUT[:200])
    t.assistant("Only routine lines.")


def fill(store: Store) -> None:
    """Write every session above into ``store``."""
    _agent_run(store)
    _edited_later(store)
    _ran_out(store)
    _tiny(store)


def build_store(path: Path) -> Path:
    """A SQLite file at ``path`` (which must not exist yet) holding every session above."""
    with Store.open(path) as store:
        fill(store)
    return path


def write_plain_sessions(store: Store, sessions: dict[str, int], *, prompt: str = "bulk") -> None:
    """Sessions of ``turns`` user/assistant exchanges each, rows written straight into the tables.

    For stores too large to write through the transcript in a test (10,000
    sessions, a 5,000-turn session): shaped as the loop writes them (a system
    commit naming its prompt, then a user message and a reply with usage per
    turn); blobs are content-addressed and shared.
    """
    from datetime import UTC, datetime, timedelta

    from sqlalchemy import insert

    from weakprompt.canonical import canonical_json, content_hash
    from weakprompt.store import tables

    blobs: dict[str, str] = {}

    def blob(payload: dict[str, object]) -> str:
        digest = content_hash(payload)
        blobs.setdefault(digest, canonical_json(payload))
        return digest

    system = blob({"role": "system", "content": "You answer briefly."})
    asked = blob({"role": "user", "content": "Go on."})
    answered = blob({"role": "assistant", "content": "Done with this step."})
    start = datetime(2026, 1, 1, tzinfo=UTC)
    rows: list[dict[str, object]] = []
    tick = 0
    for index, (session_id, turns) in enumerate(sessions.items()):
        parent: str | None = None
        shape = [(system, "system", {"prompt": prompt})]
        for _ in range(turns):
            shape.append((asked, "user", {}))
            shape.append((answered, "assistant", {"usage": {"input_tokens": 100, "output_tokens": 7}}))
        for seq, (blob_hash, role, metadata) in enumerate(shape):
            commit_hash = content_hash([index, session_id, seq])
            tick += 1
            rows.append(
                {
                    "hash": commit_hash,
                    "session_id": session_id,
                    "seq": seq,
                    "parent_hash": parent,
                    "operation": "APPEND",
                    "edit_target": None,
                    "role": role,
                    "blob_hash": blob_hash,
                    "message": None,
                    "metadata_json": canonical_json(metadata),
                    "token_count": 5,
                    "created_at": (start + timedelta(seconds=tick)).isoformat(),
                }
            )
            parent = commit_hash
    with store.write() as conn:
        conn.execute(
            insert(tables.blobs),
            [
                {
                    "hash": h,
                    "content": text,
                    "size_bytes": len(text.encode()),
                    "created_at": start.isoformat(),
                }
                for h, text in blobs.items()
            ],
        )
        for at in range(0, len(rows), 20_000):
            conn.execute(insert(tables.commits), rows[at : at + 20_000])
