"""stream() and stream_sync(): events across tool turns, early exit cancels cleanly."""

from __future__ import annotations

import asyncio

from async_support import Item, tools_prompt
from test_async_cancellation import _consistent, note
from weakprompt import stream, stream_sync
from weakprompt.adapters.testing import ScriptedAdapter, tool_call, tool_call_turn
from weakprompt.runtime import RunFinished, ToolCallReady, ToolInvoked, ToolResultStored, TurnCommitted
from weakprompt.session import Session
from weakprompt.store import Store


def _script() -> list[object]:
    return [
        tool_call_turn(tool_call("note", {"text": "one"}, id="a")),
        tool_call_turn(tool_call("note", {"text": "two"}, id="b")),
        "done",
    ]


def test_stream_goes_through_tool_turns_and_ends_with_the_response() -> None:
    async def main() -> list[object]:
        async with stream(
            tools_prompt([note]), adapter=ScriptedAdapter(_script()), session=Session()
        ) as events:  # type: ignore[arg-type]
            return [event async for event in events]

    seen = asyncio.run(main())
    assert [type(e) for e in seen if isinstance(e, (ToolCallReady, ToolResultStored, TurnCommitted))] == [
        ToolCallReady,
        ToolResultStored,
        TurnCommitted,
        ToolCallReady,
        ToolResultStored,
        TurnCommitted,
        TurnCommitted,
    ]
    last = seen[-1]
    assert isinstance(last, RunFinished) and last.response.text == "done"


def test_breaking_out_of_a_stream_cancels_the_run_cleanly() -> None:
    store = Store.open("sqlite://")
    session = Session()

    async def main() -> None:
        async with stream(
            tools_prompt([note]), adapter=ScriptedAdapter(_script()), session=session, store=store
        ) as events:  # type: ignore[arg-type]
            async for event in events:
                if isinstance(event, ToolInvoked):  # the first call finished; its turn is not stored
                    break

    asyncio.run(main())
    _consistent(store, session)
    # the session holds exactly what the stored turns did (checked by _consistent)


def test_stream_sync_yields_the_same_events_in_a_script() -> None:
    with stream_sync(tools_prompt([note]), adapter=ScriptedAdapter(_script()), session=Session()) as events:  # type: ignore[arg-type]
        seen = list(events)
    assert isinstance(seen[-1], RunFinished)
    assert [e.content for e in seen if isinstance(e, ToolResultStored)] == ["one", "two"]


def test_stream_sync_early_exit_stops_the_run() -> None:
    store = Store.open("sqlite://")
    session = Session()
    with stream_sync(
        tools_prompt([note]), adapter=ScriptedAdapter(_script()), session=session, store=store
    ) as events:  # type: ignore[arg-type]
        for event in events:
            if isinstance(event, TurnCommitted):
                break
    _consistent(store, session)
    assert [i.text for i in session[Item].all()] in (["one"], ["one", "two"])


def test_stream_checks_its_settings_when_called_not_inside_the_run() -> None:
    """Regression: ``**options: Any`` took any keyword, and a bad one failed only once iterated."""
    import pytest

    from weakprompt import ConfigurationError

    prompt = tools_prompt([note])
    with pytest.raises(ConfigurationError, match="max_turns"):
        stream_sync(prompt, adapter=ScriptedAdapter(["x"]), session=Session(), max_turns=0)
    with pytest.raises(TypeError, match="max_turn"):
        stream(prompt, adapter=ScriptedAdapter(["x"]), session=Session(), max_turn=3)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="on_event"):
        stream(prompt, adapter=ScriptedAdapter(["x"]), session=Session(), on_event=print)  # type: ignore[call-arg]
