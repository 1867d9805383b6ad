"""A child's stream events reach its ancestors' streams, each tagged with the path from the root run."""

from __future__ import annotations

import asyncio

from weakprompt import Agent, ScriptedAdapter
from weakprompt.adapters.testing import tool_call, tool_call_turn
from weakprompt.events import ChildEvent, RunFinished, TextDelta, ToolInvoked, TurnCommitted
from weakprompt.messages import AssistantTurn
from weakprompt.runtime.run_events import RunEvent


def _tree() -> Agent[None]:
    grandchild = Agent(ScriptedAdapter([AssistantTurn(text="leaf words")]), instructions="Leaf.")
    child = Agent(
        ScriptedAdapter(
            [tool_call_turn(tool_call("leaf", {"input": "dig"}, id="g1")), AssistantTurn(text="child words")]
        ),
        instructions="Child.",
        tools=[grandchild.as_tool(name="leaf", description="Ask the leaf.")],
    )
    return Agent(
        ScriptedAdapter(
            [tool_call_turn(tool_call("kid", {"input": "look"}, id="c1")), AssistantTurn(text="root words")]
        ),
        instructions="Root.",
        tools=[child.as_tool(name="kid", description="Ask the child.")],
    )


def _text(events: list[RunEvent[object]], path: tuple[str, ...]) -> str:
    return "".join(
        e.event.text
        for e in events
        if isinstance(e, ChildEvent) and e.path == path and isinstance(e.event, TextDelta)
    )


def test_child_events_appear_in_the_parents_stream_tagged_with_their_path() -> None:
    async def main() -> list[RunEvent[object]]:
        async with _tree().stream("go") as events:
            return [event async for event in events]

    events = asyncio.run(main())
    assert _text(events, ("kid:c1",)) == "child words"
    assert _text(events, ("kid:c1", "leaf:g1")) == "leaf words"  # a grandchild's path is whole, not nested
    nested = [e for e in events if isinstance(e, ChildEvent)]
    assert all(not isinstance(e.event, ChildEvent) for e in nested)
    assert {e.depth for e in nested} == {1, 2}
    # each child's run ends in its own RunFinished, before the root's call of it is over
    finished = [
        i for i, e in enumerate(events) if isinstance(e, ChildEvent) and isinstance(e.event, RunFinished)
    ]
    invoked = next(i for i, e in enumerate(events) if isinstance(e, ToolInvoked))
    assert len(finished) == 2 and max(finished) < invoked
    assert isinstance(events[-1], RunFinished)  # the root's own events stay untagged
    assert any(isinstance(e, TurnCommitted) for e in events)


def test_on_event_hears_the_tagged_child_events_of_a_blocking_run() -> None:
    heard: list[RunEvent[object]] = []
    response = _tree().run_sync("go", on_event=heard.append)
    assert response.text == "root words"
    assert _text(heard, ("kid:c1", "leaf:g1")) == "leaf words"


def test_a_run_without_a_listener_streams_nothing_from_its_children() -> None:
    response = _tree().run_sync("go")
    assert response.text == "root words"


def test_stream_sync_carries_the_child_events_too() -> None:
    with _tree().stream_sync("go") as events:
        seen = list(events)
    assert _text(seen, ("kid:c1",)) == "child words"
