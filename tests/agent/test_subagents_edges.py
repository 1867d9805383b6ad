"""Agents as tools at their edges: deadlines, approvers, reused ids, a child failing or refused on resume."""

from __future__ import annotations

from pathlib import Path

import pytest

from subagents_support import counts, note
from weakprompt import (
    Agent,
    Approve,
    ConfigurationError,
    FunctionAdapter,
    ModelRequest,
    PausedRun,
    PromptEvaluationError,
    ResumeError,
    Store,
    tool,
)
from weakprompt.adapters.testing import tool_call, tool_call_turn
from weakprompt.agent import waiting_calls
from weakprompt.clock import FakeClock
from weakprompt.deadlines import Deadline
from weakprompt.errors import DeadlineExceededError
from weakprompt.messages import AssistantTurn
from weakprompt.runtime import Decision, InlineApprover
from weakprompt.runtime.child_runs import child_session_id, latest_child_session
from weakprompt.tools import AnyTool


def _calling(tool_: AnyTool, **kwargs: object) -> Agent[None]:
    def model(request: ModelRequest) -> AssistantTurn:
        last = request.context.messages[-1]
        if last.role == "tool":
            return AssistantTurn(text=f"parent read: {last.content}")
        return tool_call_turn(tool_call(tool_.name, {"input": "work"}, id="p1"))

    return Agent(FunctionAdapter(model), instructions="Parent.", tools=[tool_], **kwargs)  # type: ignore[arg-type]


def test_the_parents_deadline_passing_inside_the_child_stops_the_parent() -> None:
    clock = FakeClock()

    @tool
    def slow() -> str:
        """Takes a while."""
        return "late"

    def child_model(request: ModelRequest) -> AssistantTurn:
        clock.advance(120)  # the child's first model call takes two minutes
        return tool_call_turn(tool_call("slow", {}, id="s1"))

    child = Agent(FunctionAdapter(child_model), instructions="Child.", tools=[slow])
    parent = _calling(child.as_tool(name="kid", description="Ask the child."))
    with pytest.raises(PromptEvaluationError, match="hit a limit of the evaluation") as raised:
        parent.run_sync("go", deadline=Deadline.after(60, clock=clock))
    assert isinstance(raised.value.__cause__, DeadlineExceededError)


def test_a_child_with_its_own_approver_keeps_it_and_one_without_gets_the_parents() -> None:
    decided: list[str] = []

    def approver(name: str) -> InlineApprover:
        def approve(paused: PausedRun) -> list[Decision]:
            decided.append(name)
            return [Approve(p.call_id, p.token) for p in paused.pending]

        return approve

    @tool(requires_approval=True)
    def act() -> str:
        """Needs a yes."""
        return "acted"

    def child_model(request: ModelRequest) -> AssistantTurn:
        if request.context.messages[-1].role == "tool":
            return AssistantTurn(text="child acted")
        return tool_call_turn(tool_call("act", {}, id="a1"))

    own = Agent(
        FunctionAdapter(child_model), instructions="Own.", tools=[act], approve=approver("child's own")
    )
    bare = Agent(FunctionAdapter(child_model), instructions="Bare.", tools=[act])
    for child in (own, bare):
        response = _calling(
            child.as_tool(name="kid", description="K."), approve=approver("parent's")
        ).run_sync("go")
        assert response.text == "parent read: child acted"
    assert decided == ["child's own", "parent's"]


def test_a_call_id_reused_three_times_gets_a_third_session_and_a_pause_finds_the_latest() -> None:
    held = {"root/kid:c1", "root/kid:c1#2"}
    assert child_session_id("root", "kid", "c1", held.__contains__) == "root/kid:c1#3"
    held.add("root/kid:c1#3")
    assert latest_child_session("root", "kid", "c1", held.__contains__) == "root/kid:c1#3"
    assert latest_child_session("root", "kid", "c9", held.__contains__) == "root/kid:c9"


def test_waiting_calls_needs_a_store() -> None:
    agent = Agent(FunctionAdapter(lambda _r: "x"), instructions="No store.")
    with pytest.raises(ConfigurationError, match="waiting_calls: a paused run is read from a store"):
        waiting_calls(agent, "root")


def _clerk_tree(
    log: Path, *, breaks_after_approval: bool = False, renamed_field: bool = False
) -> Agent[None]:
    """A root whose one sub-agent (the clerk) files a report that needs approval."""

    @tool(requires_approval=True)
    def file_report(title: str) -> str:
        """File a report."""
        note(log, "handler:file_report")
        return "filed"

    @tool(requires_approval=True, name="file_report")
    def file_report_by_name(name: str) -> str:
        """File a report (the same tool, its argument renamed)."""
        note(log, "handler:file_report")
        return "filed"

    def clerk_model(request: ModelRequest) -> AssistantTurn:
        if request.context.messages[-1].role == "tool":
            if breaks_after_approval:
                raise ConfigurationError("the clerk's model went away")
            return AssistantTurn(text="clerk done")
        return tool_call_turn(tool_call("file_report", {"title": "Q3"}, id="k1"))

    report = file_report_by_name if renamed_field else file_report
    clerk = Agent(FunctionAdapter(clerk_model), instructions="Clerk.", tools=[report])
    return _calling(clerk.as_tool(name="clerk", description="Files reports."))


def test_a_child_failing_after_its_approval_is_a_failed_result_of_the_parents_call(tmp_path: Path) -> None:
    log = tmp_path / "calls.log"
    store = Store.open(f"sqlite:///{tmp_path / 'runs.db'}")
    assert _clerk_tree(log).run_sync("go", store=store, session="root").paused is not None
    broken = _clerk_tree(log, breaks_after_approval=True)
    (waiting,) = waiting_calls(broken, "root", store=store)
    done = broken.resume_sync("root", [Approve(waiting.call.call_id, waiting.call.token)], store=store)
    assert done.text.startswith("parent read: Agent 'clerk' failed:")
    assert "went away" in done.text
    assert counts(log) == {"handler:file_report": 1}


def test_a_child_whose_tool_changed_is_refused_on_resume_and_the_parent_still_waits(tmp_path: Path) -> None:
    log = tmp_path / "calls.log"
    store = Store.open(f"sqlite:///{tmp_path / 'runs.db'}")
    assert _clerk_tree(log).run_sync("go", store=store, session="root").paused is not None
    changed = _clerk_tree(log, renamed_field=True)
    (waiting,) = waiting_calls(changed, "root", store=store)
    with pytest.raises(ResumeError):
        changed.resume_sync("root", [Approve(waiting.call.call_id, waiting.call.token)], store=store)
    assert counts(log) == {}
    assert len(waiting_calls(_clerk_tree(log), "root", store=store)) == 1  # still waiting, as it was
