"""A stream follows a handoff as ``run`` does: the target's events come next, one ``RunFinished`` ends it."""

from __future__ import annotations

import asyncio
from pathlib import Path

from weakprompt import Agent, ScriptedAdapter, Store
from weakprompt.adapters.testing import tool_call, tool_call_turn
from weakprompt.events import RunFinished, TextDelta, ToolInvoked
from weakprompt.messages import AssistantTurn
from weakprompt.runtime import PromptResponse
from weakprompt.runtime.run_events import RunEvent
from weakprompt.tools import tool


@tool
def refund(order: str) -> str:
    """Refund an order."""
    return f"refunded {order}"


@tool
def lookup_order(order: str) -> str:
    """Look an order up."""
    return f"order {order}: shipped"


def _chain(store: Store) -> Agent[None]:
    """triage -> billing -> closing, each a scripted model (built fresh: a script is used up)."""
    closing = Agent(
        ScriptedAdapter([AssistantTurn(text="Anything else?")]), instructions="Close.", name="closing"
    )
    billing = Agent(
        ScriptedAdapter(
            [
                tool_call_turn(tool_call("refund", {"order": "A1"}, id="r1"), text="Refunding."),
                tool_call_turn(tool_call("transfer_to_closing", {}, id="t2")),
            ]
        ),
        instructions="You handle billing.",
        tools=[refund],
        name="billing",
        handoffs=[closing],
    )
    return Agent(
        ScriptedAdapter(
            [
                tool_call_turn(tool_call("lookup_order", {"order": "A1"}, id="l1"), text="Looking."),
                tool_call_turn(tool_call("transfer_to_billing", {"reason": "refund"}, id="t1")),
            ]
        ),
        instructions="You triage.",
        tools=[lookup_order],
        name="triage",
        handoffs=[billing],
        store=store,
    )


def _seen(response: PromptResponse[None]) -> object:
    """What a response says, without the per-run objects (its session, its tool events' times)."""
    return (
        response.text,
        response.usage,
        response.turns,
        [(e.event.name, e.event.call_id, e.success) for e in response.tool_executions],
        [(m.role, m.content) for m in response.new_messages],
        [(m.role, m.content) for m in response.messages],
        response.verdict,
        response.head is not None,
    )


def _check_order(events: list[RunEvent[None]]) -> PromptResponse[None]:
    names = [e.name for e in events if isinstance(e, ToolInvoked)]
    assert names == ["lookup_order", "transfer_to_billing", "refund", "transfer_to_closing"]
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert text == "Looking.Refunding.Anything else?"  # every agent's words, in the order they came
    finished = [e for e in events if isinstance(e, RunFinished)]
    assert len(finished) == 1 and events[-1] is finished[0]  # one end, after every agent's events
    return finished[0].response


def test_a_stream_goes_on_with_the_target_after_a_handoff_and_finishes_with_the_joined_response(
    tmp_path: Path,
) -> None:
    async def streamed() -> list[RunEvent[None]]:
        store = Store.open(f"sqlite:///{tmp_path / 'stream.db'}")
        async with _chain(store).stream("refund A1", session="s") as events:
            return [event async for event in events]

    response = _check_order(asyncio.run(streamed()))
    ran = _chain(Store.open(f"sqlite:///{tmp_path / 'run.db'}")).run_sync("refund A1", session="s")
    assert response.text == "Anything else?" and response.turns == 5
    assert _seen(response) == _seen(ran)


def test_stream_sync_follows_a_handoff_too(tmp_path: Path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'stream.db'}")
    with _chain(store).stream_sync("refund A1", session="s") as events:
        response = _check_order(list(events))
    ran = _chain(Store.open(f"sqlite:///{tmp_path / 'run.db'}")).run_sync("refund A1", session="s")
    assert _seen(response) == _seen(ran)


def test_a_runs_listener_hears_one_run_finished_holding_the_joined_response(tmp_path: Path) -> None:
    """Before, a listener heard a ``RunFinished`` per agent, the first one ending on the transfer call."""
    heard: list[RunEvent[None]] = []
    store = Store.open(f"sqlite:///{tmp_path / 'run.db'}")
    response = asyncio.run(_chain(store).run("refund A1", session="s", on_event=heard.append))
    finished = [e for e in heard if isinstance(e, RunFinished)]
    assert len(finished) == 1 and finished[0].response == response
    assert _check_order(heard) == response
