"""Deadline, budget and usage accounting in the evaluation loop."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from loop_support import Recorder, arithmetic_prompt
from weakprompt.adapters.testing import FunctionAdapter, ScriptedAdapter, tool_call, tool_call_turn
from weakprompt.budget import Budget, BudgetTracker
from weakprompt.clock import FakeClock
from weakprompt.deadlines import Deadline
from weakprompt.errors import BudgetExceededError, DeadlineExceededError
from weakprompt.events import PromptExecuted
from weakprompt.messages import AssistantTurn, Usage
from weakprompt.prompt import MarkdownSection, Prompt, PromptTemplate
from weakprompt.runtime import ModelRequest
from weakprompt.runtime.loop import evaluate
from weakprompt.session import Session
from weakprompt.store import Store
from weakprompt.tools import NoParams, ToolContext, ToolResult, tool
from weakprompt.transcript import Transcript


def _always_tools(request: ModelRequest) -> AssistantTurn:
    return tool_call_turn(
        tool_call("add", {"a": 1, "b": 2}), usage=Usage(input_tokens=10, output_tokens=5, model_calls=1)
    )


def test_deadline_is_checked_before_every_model_call() -> None:
    clock = FakeClock()
    session = Session(clock=clock)
    store = Store.open("sqlite://", clock=clock)

    def slow(request: ModelRequest) -> AssistantTurn:
        clock.advance(10)
        return _always_tools(request)

    adapter = FunctionAdapter(slow)
    deadline = Deadline.after(25, clock=clock)
    with pytest.raises(DeadlineExceededError, match="has passed"):
        evaluate(arithmetic_prompt(), adapter=adapter, session=session, store=store, deadline=deadline)
    # Calls at t=0, 10 and 20 were allowed; at t=30 the deadline had passed.
    assert len(adapter.requests) == 3
    roles = [c.role for c in Transcript(store, session.session_id).log()]
    assert roles.count("assistant") == 3 and roles.count("tool") == 3


def test_an_expired_deadline_means_no_model_call() -> None:
    clock = FakeClock()
    deadline = Deadline.after(1, clock=clock)
    clock.advance(2)
    adapter = ScriptedAdapter(["never"])
    with pytest.raises(DeadlineExceededError):
        evaluate(arithmetic_prompt(), adapter=adapter, session=Session(clock=clock), deadline=deadline)
    assert adapter.requests == ()


def test_budget_on_model_calls_stops_the_loop() -> None:
    adapter = FunctionAdapter(_always_tools)
    with pytest.raises(BudgetExceededError, match="max_model_calls=2"):
        evaluate(arithmetic_prompt(), adapter=adapter, session=Session(), budget=Budget(max_model_calls=2))
    assert len(adapter.requests) == 2


def test_budget_on_tokens_stops_the_loop() -> None:
    adapter = FunctionAdapter(_always_tools)
    with pytest.raises(BudgetExceededError, match="total tokens 45 reached max_total_tokens=40"):
        evaluate(arithmetic_prompt(), adapter=adapter, session=Session(), budget=Budget(max_total_tokens=40))
    assert len(adapter.requests) == 3


def test_a_shared_tracker_counts_across_evaluations() -> None:
    tracker = BudgetTracker(Budget(max_model_calls=3))
    first = ScriptedAdapter([tool_call_turn(tool_call("add", {"a": 1, "b": 1})), "ok"])
    evaluate(arithmetic_prompt(), adapter=first, session=Session(), budget=tracker)
    assert tracker.usage.model_calls == 2
    second = FunctionAdapter(_always_tools)
    with pytest.raises(BudgetExceededError):
        evaluate(arithmetic_prompt(), adapter=second, session=Session(), budget=tracker)
    assert len(second.requests) == 1


def test_tools_see_the_budget_tracker_and_deadline() -> None:
    seen: list[ToolContext] = []

    @tool(name="peek", description="Look at the context.")
    def peek(params: NoParams, *, context: ToolContext) -> ToolResult[None]:
        seen.append(context)
        return ToolResult(message="ok")

    prompt: Prompt[None] = Prompt(
        PromptTemplate(
            ns="t", key="peek", sections=[MarkdownSection(title="T", key="t", template="x", tools=[peek])]
        )
    )
    tracker = BudgetTracker(Budget(max_model_calls=10))
    deadline = Deadline.after(3600)
    adapter = ScriptedAdapter([tool_call_turn(tool_call("peek")), "done"])
    evaluate(prompt, adapter=adapter, session=Session(), budget=tracker, deadline=deadline)
    assert seen[0].budget_tracker is tracker
    assert seen[0].deadline is deadline
    assert seen[0].adapter is adapter
    assert seen[0].rendered_prompt is not None and seen[0].rendered_prompt.tool_names == ("peek",)


_usages = st.builds(
    Usage,
    input_tokens=st.integers(0, 10_000),
    output_tokens=st.integers(0, 10_000),
    cached_input_tokens=st.integers(0, 1_000),
    model_calls=st.just(1),
)


@given(st.lists(_usages, min_size=1, max_size=6))
def test_usage_adds_up_over_every_turn(usages: list[Usage]) -> None:
    turns: list[AssistantTurn | str] = [
        tool_call_turn(tool_call("add", {"a": i, "b": i}), usage=u) for i, u in enumerate(usages[:-1])
    ]
    turns.append(AssistantTurn(text="final", usage=usages[-1]))
    session = Session()
    events = Recorder(session.bus)
    tracker = BudgetTracker(Budget())
    response = evaluate(
        arithmetic_prompt(), adapter=ScriptedAdapter(turns), session=session, budget=tracker, max_turns=10
    )
    total = sum(usages, Usage())
    assert response.usage == total
    assert tracker.usage == total
    assert response.turns == len(usages)
    executed = events.of(PromptExecuted)
    assert isinstance(executed[0], PromptExecuted) and executed[0].usage == total
