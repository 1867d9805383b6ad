"""Agent.resume / resume_sync: a run paused for approval goes on through the agent that started it."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

import pytest

from weakprompt import (
    Agent,
    Approve,
    ConfigurationError,
    Deny,
    ForceTool,
    FunctionAdapter,
    ModelRequest,
    PausedRun,
    ResumeError,
    ScriptedAdapter,
    Session,
    Store,
    ToolContext,
    paused_run,
    tool,
)
from weakprompt.adapters.testing import tool_call, tool_call_turn
from weakprompt.messages import AssistantTurn
from weakprompt.runtime import Decision


@dataclass(frozen=True)
class Removed:
    path: str


@tool(requires_approval=True)
def remove(path: str, *, context: ToolContext) -> str:
    """Remove a file."""
    context.session[Removed].append(Removed(path))
    return f"removed {path}"


def _model(request: ModelRequest) -> AssistantTurn | str:
    """Asks to remove notes.txt, then says how the call ended."""
    last = request.context.messages[-1]
    if last.role == "tool":
        return "done: " + last.content.strip('"')  # a plain -> str result reaches the model as JSON text
    return tool_call_turn(tool_call("remove", {"path": "notes.txt"}, id="rm-1"))


def _agent(store: Store, **kwargs: object) -> Agent[None]:
    return Agent(
        FunctionAdapter(_model),
        instructions="Tidy up.",
        tools=[remove],
        store=store,
        **kwargs,  # type: ignore[arg-type]
    )


def _approve_all(paused: PausedRun) -> list[Decision]:
    return [Approve(waiting.call_id, waiting.token) for waiting in paused.pending]


def test_a_paused_approval_is_resumed_through_the_agent(tmp_path: Path) -> None:
    with Store.open(tmp_path / "runs.db") as store:
        agent = _agent(store)
        first = agent.run_sync("Tidy.", session="job-1")
        assert first.paused is not None and first.output is None
        assert [waiting.tool for waiting in first.paused.pending] == ["remove"]
        done = agent.resume_sync(first.session_id, _approve_all(first.paused), decided_by="alice")
        assert done.text == "done: removed notes.txt" and done.paused is None
        assert paused_run(store, "job-1") is None


def test_resume_is_the_async_twin_and_a_denial_reaches_the_model(tmp_path: Path) -> None:
    with Store.open(tmp_path / "runs.db") as store:
        agent = _agent(store)

        async def main() -> str:
            first = await agent.run("Tidy.", session="job-2")
            assert first.paused is not None
            decisions = [Deny(w.call_id, w.token, message="not today") for w in first.paused.pending]
            return (await agent.resume("job-2", decisions)).text

        assert asyncio.run(main()).endswith("the call was denied. not today")


def test_a_session_given_to_resume_gets_the_runs_state_back(tmp_path: Path) -> None:
    with Store.open(tmp_path / "runs.db") as store:
        agent = _agent(store)
        first = agent.run_sync("Tidy.", session=Session(session_id="job-3"))
        assert first.paused is not None
        session = Session(session_id="job-3")
        agent.resume_sync(session, _approve_all(first.paused))
        assert session[Removed].all() == (Removed("notes.txt"),)


def test_a_resumed_run_is_not_forced_by_the_agents_tool_choice(tmp_path: Path) -> None:
    choices: list[object] = []

    def model(request: ModelRequest) -> AssistantTurn | str:
        choices.append(request.tool_choice)
        return _model(request)

    with Store.open(tmp_path / "runs.db") as store:
        agent = Agent(
            FunctionAdapter(model),
            instructions="Tidy up.",
            tools=[remove],
            store=store,
            tool_choice=ForceTool("remove"),
        )
        first = agent.run_sync("Tidy.", session="job-4")
        assert first.paused is not None
        agent.resume_sync("job-4", _approve_all(first.paused))
    assert choices == [ForceTool("remove"), "auto"]


def test_an_agents_approver_decides_inline_and_the_run_never_pauses(tmp_path: Path) -> None:
    with Store.open(tmp_path / "runs.db") as store:
        agent = _agent(store, approve=_approve_all)
        response = agent.run_sync("Tidy.")
        assert response.paused is None and response.text == "done: removed notes.txt"


def test_resume_reads_the_store_of_the_call_when_the_agent_has_none(tmp_path: Path) -> None:
    with Store.open(tmp_path / "runs.db") as store:
        agent = Agent(FunctionAdapter(_model), instructions="Tidy up.", tools=[remove])
        first = agent.run_sync("Tidy.", session="job-5", store=store)
        assert first.paused is not None
        with pytest.raises(
            ConfigurationError, match=r"Agent\.resume_sync: a paused run is read from a store"
        ):
            agent.resume_sync("job-5", _approve_all(first.paused))
        assert agent.resume_sync("job-5", _approve_all(first.paused), store=store).paused is None


def test_resume_needs_a_session_and_refuses_decisions_for_nothing(tmp_path: Path) -> None:
    with Store.open(tmp_path / "runs.db") as store:
        agent = _agent(store)
        with pytest.raises(ConfigurationError, match="session= must name the paused run"):
            agent.resume_sync(None, [])  # type: ignore[arg-type]
        with pytest.raises(ResumeError, match="no paused run"):
            agent.resume_sync("never-ran", [Approve("x", "y")])


def test_resume_refuses_an_unknown_keyword_by_name(tmp_path: Path) -> None:
    with Store.open(tmp_path / "runs.db") as store:
        with pytest.raises(TypeError, match="'decided'"):
            _agent(store).resume_sync("job", [], decided="bob")  # type: ignore[call-arg]


def test_resume_refuses_params_that_are_not_a_tuple(tmp_path: Path) -> None:
    with Store.open(tmp_path / "runs.db") as store:
        with pytest.raises(ConfigurationError, match="params= takes a tuple"):
            _agent(store).resume_sync("job", [], params=None)  # type: ignore[arg-type]


def test_the_adapter_of_a_resume_call_answers_after_the_decision(tmp_path: Path) -> None:
    with Store.open(tmp_path / "runs.db") as store:
        agent = _agent(store)
        first = agent.run_sync("Tidy.", session="job-6")
        assert first.paused is not None
        later = ScriptedAdapter(["all tidy"])
        assert agent.resume_sync("job-6", _approve_all(first.paused), adapter=later).text == "all tidy"
