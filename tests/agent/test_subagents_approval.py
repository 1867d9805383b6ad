"""A child that pauses for approval pauses its parent; a resume (any process) continues both, child first."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from subagents_support import counts, note, tree
from weakprompt import (
    Agent,
    Approve,
    Deny,
    FunctionAdapter,
    ModelRequest,
    ResumeError,
    Store,
    Supply,
    paused_run,
    tool,
)
from weakprompt.adapters.testing import tool_call, tool_call_turn
from weakprompt.agent import waiting_calls
from weakprompt.events import ChildEvent
from weakprompt.messages import AssistantTurn
from weakprompt.transcript import Transcript

ROOT = Path(__file__).resolve().parents[2]

_RESUME = """
import json, sys
from pathlib import Path
from subagents_support import tree
from weakprompt import Approve, Store
from weakprompt.agent import waiting_calls

db, log = sys.argv[1], Path(sys.argv[2])
store = Store.open(f"sqlite:///{db}")
root = tree(log)
waiting = waiting_calls(root, "root", store=store)
decisions = [Approve(w.call.call_id, w.call.token) for w in waiting]
response = root.resume_sync("root", decisions, store=store, decided_by="alice")
print(json.dumps({"text": response.text, "paused": response.paused is not None,
                  "calls": response.usage.model_calls}))
"""


def _paused(tmp_path: Path) -> tuple[Path, Path]:
    db, log = tmp_path / "runs.db", tmp_path / "calls.log"
    store = Store.open(f"sqlite:///{db}")
    response = tree(log).run_sync("go", store=store, session="root")
    assert response.paused is not None
    (pending,) = response.paused.pending
    assert (pending.call_id, pending.tool, pending.kind) == ("r2", "clerk", "deferred")
    store.close()
    return db, log


def test_nested_approval_in_a_parallel_child_resumes_in_another_process_and_nothing_runs_twice(
    tmp_path: Path,
) -> None:
    db, log = _paused(tmp_path)
    assert counts(log) == {"model:root": 1, "model:scout": 2, "model:clerk": 1, "handler:lookup": 1}
    store = Store.open(f"sqlite:///{db}")
    (waiting,) = waiting_calls(tree(log), "root", store=store)
    assert (waiting.session_id, waiting.path, waiting.call.tool) == (
        "root/clerk:r2",
        ("clerk:r2",),
        "file_report",
    )
    store.close()

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT / "tests" / "support")])}
    done = subprocess.run(
        [sys.executable, "-c", _RESUME, str(db), str(log)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["paused"] is False
    assert answer["text"] == "root: scout: notes on tides | clerk: filed tides"
    # the clerk continued where it stopped, then the root; the scout and its lookup never ran again
    assert counts(log) == {
        "model:root": 2,
        "model:scout": 2,
        "model:clerk": 2,
        "handler:lookup": 1,
        "handler:file_report": 1,
    }
    assert answer["calls"] == 2  # the resume's own usage: the clerk's answer and the root's

    store = Store.open(f"sqlite:///{db}")
    results = [c for c in Transcript(store, "root").log() if c.content.role == "tool"]
    assert [c.metadata.get("child_session") for c in results] == ["root/scout:r1", "root/clerk:r2"]
    assert waiting_calls(tree(log), "root", store=store) == ()


def test_a_decision_that_fits_no_waiting_call_is_refused_before_anything_runs(tmp_path: Path) -> None:
    db, log = _paused(tmp_path)
    store = Store.open(f"sqlite:///{db}")
    root = tree(log)
    before = counts(log)
    with pytest.raises(ResumeError, match="fits no call waiting"):
        root.resume_sync("root", [Approve("k1", "not-the-token")], store=store)
    with pytest.raises(ResumeError, match="has no decision"):
        root.resume_sync("root", [], store=store)
    (waiting,) = waiting_calls(root, "root", store=store)
    twice = [Approve(waiting.call.call_id, waiting.call.token)] * 2
    with pytest.raises(ResumeError, match="has 2 decisions"):
        root.resume_sync("root", twice, store=store)
    assert counts(log) == before


def test_a_denied_nested_call_reaches_the_child_model_and_the_parent_goes_on(tmp_path: Path) -> None:
    db, log = _paused(tmp_path)
    store = Store.open(f"sqlite:///{db}")
    root = tree(log)
    (waiting,) = waiting_calls(root, "root", store=store)
    response = root.resume_sync(
        "root", [Deny(waiting.call.call_id, waiting.call.token, "Not today.")], store=store
    )
    assert response.text.startswith("root: scout: notes on tides | clerk: Tool 'file_report' was not run")
    assert "handler:file_report" not in counts(log)


def test_the_waiting_agent_call_can_be_supplied_by_hand_and_its_child_stays_as_it_was(tmp_path: Path) -> None:
    db, log = _paused(tmp_path)
    store = Store.open(f"sqlite:///{db}")
    found = paused_run(store, "root")
    assert found is not None
    (pending,) = found.pending  # the root's own waiting call is the clerk's: its answer is given here
    decision = Supply(pending.call_id, pending.token, "clerk: skipped")
    response = tree(log).resume_sync("root", [decision], store=store)
    assert response.text == "root: scout: notes on tides | clerk: skipped"
    assert counts(log).get("model:clerk") == 1


def _two_clerks(log: Path) -> Agent[None]:
    """A root calling two clerks at once: ``one`` files one report, ``two`` files two, one after the other."""

    @tool(requires_approval=True)
    def file_report(title: str) -> str:
        """File a report (a person approves it first)."""
        note(log, f"handler:file_report:{title}")
        return f"filed {title}"

    def clerk(reports: int) -> Agent[None]:
        def model(request: ModelRequest) -> AssistantTurn:
            done = [m for m in request.context.messages if m.role == "tool"]
            if len(done) < reports:
                title = f"r{reports}-{len(done)}"
                return tool_call_turn(tool_call("file_report", {"title": title}, id=f"k{len(done)}"))
            return AssistantTurn(text=f"clerk {reports} done")

        return Agent(FunctionAdapter(model), instructions="You file reports.", tools=[file_report])

    def root_model(request: ModelRequest) -> AssistantTurn:
        read = [m.content for m in request.context.messages if m.role == "tool"]
        if not read:
            return tool_call_turn(
                tool_call("one", {"input": "file"}, id="a"), tool_call("two", {"input": "file"}, id="b")
            )
        return AssistantTurn(text="root: " + " | ".join(read))

    return Agent(
        FunctionAdapter(root_model),
        instructions="You plan.",
        tools=[
            clerk(1).as_tool(name="one", description="Files one report."),
            clerk(2).as_tool(name="two", description="Files two reports."),
        ],
    )


def test_a_child_that_waits_again_keeps_its_parent_paused_and_a_finished_sibling_is_not_run_again(
    tmp_path: Path,
) -> None:
    log = tmp_path / "calls.log"
    store = Store.open(f"sqlite:///{tmp_path / 'runs.db'}")
    root = _two_clerks(log)
    first = root.run_sync("go", store=store, session="root")
    assert first.paused is not None
    waiting = waiting_calls(root, "root", store=store)
    assert sorted(w.path for w in waiting) == [("one:a",), ("two:b",)]
    heard: list[object] = []
    again = root.resume_sync(
        "root", [Approve(w.call.call_id, w.call.token) for w in waiting], store=store, on_event=heard.append
    )
    assert again.paused == first.paused  # the root's pause still waits: clerk two asks for its second report
    assert again.output is None
    assert again.usage.model_calls == 2  # the two clerks' turns after their approvals
    assert {e.path for e in heard if isinstance(e, ChildEvent)} == {("one:a",), ("two:b",)}
    (second,) = waiting_calls(root, "root", store=store)
    assert (second.path, second.call.arguments) == (("two:b",), {"title": "r2-1"})
    done = root.resume_sync("root", [Approve(second.call.call_id, second.call.token)], store=store)
    assert done.paused is None
    assert done.text == "root: clerk 1 done | clerk 2 done"
    assert counts(log) == {
        "handler:file_report:r1-0": 1,
        "handler:file_report:r2-0": 1,
        "handler:file_report:r2-1": 1,
    }


def test_a_grandchilds_approval_resumes_through_its_parent_and_streams_with_its_whole_path(
    tmp_path: Path,
) -> None:
    """Root -> mid -> clerk: the clerk waits; the resume continues the clerk, then mid, then the root."""
    log = tmp_path / "calls.log"

    @tool(requires_approval=True)
    def file_report(title: str) -> str:
        """File a report (a person approves it first)."""
        note(log, "handler:file_report")
        return f"filed {title}"

    def relay(name: str, call: str, target: str) -> FunctionAdapter:
        def model(request: ModelRequest) -> AssistantTurn:
            read = [m.content for m in request.context.messages if m.role == "tool"]
            if read:
                return AssistantTurn(text=f"{name}: {read[-1]}")
            arguments = {"title": "Q3"} if target == "file_report" else {"input": "go"}
            return tool_call_turn(tool_call(target, arguments, id=call))

        return FunctionAdapter(model)

    clerk = Agent(relay("clerk", "k1", "file_report"), instructions="Clerk.", tools=[file_report])
    mid = Agent(
        relay("mid", "m1", "clerk"),
        instructions="Mid.",
        tools=[clerk.as_tool(name="clerk", description="C.")],
    )
    root = Agent(
        relay("root", "r1", "mid"), instructions="Root.", tools=[mid.as_tool(name="mid", description="M.")]
    )
    store = Store.open(f"sqlite:///{tmp_path / 'runs.db'}")
    assert root.run_sync("go", store=store, session="root").paused is not None
    (waiting,) = waiting_calls(root, "root", store=store)
    assert (waiting.session_id, waiting.path) == ("root/mid:r1/clerk:m1", ("mid:r1", "clerk:m1"))
    heard: list[object] = []
    decision = Approve(waiting.call.call_id, waiting.call.token)
    done = root.resume_sync("root", [decision], store=store, on_event=heard.append)
    assert done.text == 'root: mid: clerk: "filed Q3"'
    paths = {e.path for e in heard if isinstance(e, ChildEvent)}
    assert paths == {("mid:r1",), ("mid:r1", "clerk:m1")}
    assert counts(log) == {"handler:file_report": 1}
    assert done.usage.model_calls == 3  # the clerk's, mid's and the root's answers after the approval
