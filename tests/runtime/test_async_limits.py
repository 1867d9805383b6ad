"""Deadlines and budgets hold across the calls of a concurrent group."""

from __future__ import annotations

import asyncio

import pytest

from async_support import Item, tools_prompt
from weakprompt import run
from weakprompt.adapters.testing import ScriptedAdapter, tool_call, tool_call_turn
from weakprompt.budget import Budget, BudgetTracker
from weakprompt.deadlines import Deadline
from weakprompt.errors import DeadlineExceededError, PromptEvaluationError
from weakprompt.events import ToolInvoked
from weakprompt.messages import Usage
from weakprompt.session import Session
from weakprompt.store import Store
from weakprompt.tools import ToolContext, ToolResult, tool
from weakprompt.transcript import Transcript


def _group(*names: str) -> ScriptedAdapter:
    calls = [tool_call(name, {"text": f"{name}{i}"}, id=f"c{i}") for i, name in enumerate(names)]
    return ScriptedAdapter([tool_call_turn(*calls), "done"])


def _nothing_of_the_turn_is_kept(store: Store, session: Session) -> None:
    # at most the system prompt (a deadline may pass before even that is stored, on a busy machine)
    assert [m.role for m in Transcript(store, session.session_id).compile().messages] in ([], ["system"])
    assert session[Item].all() == ()


@tool
async def sleepy(text: str, *, context: ToolContext) -> ToolResult[None]:
    """Writes, then sleeps past any short deadline."""
    context.session[Item].append(Item(text))
    await asyncio.sleep(30)
    return ToolResult.ok(None, message=text)


def test_a_deadline_stops_a_concurrent_group_in_flight() -> None:
    store = Store.open("sqlite://")
    session = Session()

    async def main() -> None:
        await run(
            tools_prompt([sleepy]),
            adapter=_group("sleepy", "sleepy", "sleepy"),
            session=session,
            store=store,
            deadline=Deadline.after(1.0),
        )

    with pytest.raises(DeadlineExceededError):
        asyncio.run(main())
    _nothing_of_the_turn_is_kept(store, session)


def test_a_budget_spent_by_concurrent_calls_together_stops_the_run() -> None:
    store = Store.open("sqlite://")
    session = Session()
    invoked: list[ToolInvoked] = []
    session.bus.subscribe(ToolInvoked, invoked.append)
    tracker = BudgetTracker(Budget(max_total_tokens=250))

    @tool
    async def spend(text: str, *, context: ToolContext) -> ToolResult[None]:
        """Spends 100 tokens of the shared budget, then checks it."""
        context.session[Item].append(Item(text))
        assert context.budget_tracker is not None
        context.budget_tracker.record(Usage(input_tokens=100))
        await asyncio.sleep(0.01)  # every call has spent before any checks
        context.budget_tracker.check()
        return ToolResult.ok(None, message=text)

    async def main() -> None:
        await run(
            tools_prompt([spend]),
            adapter=_group("spend", "spend", "spend"),
            session=session,
            store=store,
            budget=tracker,
        )

    with pytest.raises(PromptEvaluationError, match="limit of the evaluation"):
        asyncio.run(main())
    # one tracker for the run: the model call (under 100 tokens) and three calls of 100 tokens each
    # went over 250 together, so each call's check failed, although none of them alone would have
    assert 300 <= tracker.usage.input_tokens < 400
    assert [(e.call_id, e.success) for e in invoked] == [("c0", False), ("c1", False), ("c2", False)]
    _nothing_of_the_turn_is_kept(store, session)
