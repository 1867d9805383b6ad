"""A process killed at any moment never leaves a stored output without its commit, or the reverse.

A helper process imports weakprompt once, then forks one writer per round.
Each writer runs evaluations whose tool returns more than the 12 KB cap
(so every result is stored and shown by handle) against one SQLite file,
until the test kills it with SIGKILL after a random delay (seeded). After
each kill the file is opened afresh and checked: the set of stored output
rows equals the set of tool-result commits that refer to a stored output.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from weakprompt.store import Store

ROUNDS = 60
SEED = 20260114

WRITER = textwrap.dedent(
    """
    import os
    import sys

    from weakprompt.adapters.testing import ScriptedAdapter, text_turn, tool_call, tool_call_turn
    from weakprompt.prompt import MarkdownSection, Prompt, PromptTemplate
    from weakprompt.runtime import evaluate
    from weakprompt.session import Session
    from weakprompt.store import Store
    from weakprompt.tools import ToolContext, ToolResult, tool
    from dataclasses import dataclass

    @dataclass(frozen=True)
    class Page:
        n: int

    @tool(name="dump", description="A large output.")
    def dump(params: Page, *, context: ToolContext) -> ToolResult[None]:
        line = f"page {params.n}: " + "lorem ipsum dolor sit amet " * 3
        return ToolResult(message="\\n".join(f"{i} {line}" for i in range(200)))  # about 20 KB

    PROMPT = Prompt(
        PromptTemplate(
            ns="tests/crash",
            key="writer",
            sections=[MarkdownSection(title="T", key="t", template="Dump.", tools=[dump])],
        )
    )

    def write_forever(db, round_no):
        store = Store.open(db)
        run = 0
        while True:
            prefix = f"r{round_no}-e{run}"
            script = [
                tool_call_turn(tool_call("dump", {"n": (run + i) % 4}, id=f"{prefix}-c{i}")) for i in range(3)
            ]
            session = Session(session_id=prefix)
            evaluate(PROMPT, adapter=ScriptedAdapter(script + [text_turn("done")]), session=session,
                     store=store, input="go")
            run += 1

    def warm_up():
        # One evaluation on a scratch store, so that each forked writer starts at full speed.
        with Store.open("sqlite://") as scratch:
            script = [tool_call_turn(tool_call("dump", {"n": 0}, id="warm")), text_turn("done")]
            evaluate(PROMPT, adapter=ScriptedAdapter(script), session=Session(), store=scratch, input="go")

    warm_up()
    db = sys.argv[1]
    for line in sys.stdin:  # one writer per line; the test kills it, this process reaps it
        round_no = int(line)
        pid = os.fork()
        if pid == 0:
            try:
                write_forever(db, round_no)
            finally:
                os._exit(1)
        print(pid, flush=True)
        os.waitpid(pid, 0)
        print("reaped", flush=True)
    """
)


def outputs_and_references(db: Path) -> tuple[set[tuple[str, str]], set[tuple[str, str]]]:
    """(session, call id) of every stored output row, and of every result commit that refers to one."""
    with Store.open(db) as store, store.read() as conn:
        rows = {
            (str(s), str(c))
            for s, c in conn.exec_driver_sql("SELECT session_id, tool_call_id FROM tool_outputs")
        }
        references: set[tuple[str, str]] = set()
        for session_id, metadata in conn.exec_driver_sql(
            "SELECT session_id, metadata_json FROM commits WHERE role = 'tool'"
        ):
            stored = json.loads(metadata).get("stored_output")
            if stored is not None:
                references.add((str(session_id), str(stored["tool_call_id"])))
    return rows, references


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the writers are forked")
def test_killed_writers_never_leave_an_output_without_its_commit_or_the_reverse(tmp_path: Path) -> None:
    db = tmp_path / "crash.db"
    Store.open(db).close()  # created and migrated before any writer starts
    helper = tmp_path / "writer.py"
    helper.write_text(WRITER)
    rng = random.Random(SEED)
    process = subprocess.Popen(
        [sys.executable, str(helper), str(db)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdin is not None and process.stdout is not None
    try:
        for round_no in range(ROUNDS):
            process.stdin.write(f"{round_no}\n")
            process.stdin.flush()
            pid = int(process.stdout.readline())
            # a writer starts at once (everything is imported): kill it at some random point; every
            # fifth one later, so that writers get turns stored even on a slow, loaded machine
            time.sleep(rng.uniform(0.0, 0.08) if round_no % 5 else rng.uniform(0.3, 0.6))
            os.kill(pid, signal.SIGKILL)  # not yet reaped, so the pid is still this writer's
            assert process.stdout.readline().strip() == "reaped"
            rows, references = outputs_and_references(db)
            assert rows - references == set(), f"round {round_no}: outputs stored without their commit"
            assert references - rows == set(), f"round {round_no}: commits referring to no stored output"
    finally:
        process.stdin.close()
        process.wait(timeout=30)
    rows, _ = outputs_and_references(db)
    assert rows  # the writers did get work done between the kills
