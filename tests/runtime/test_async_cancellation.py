"""Cancelling a run at random points never leaves half a turn, and the session continues."""

from __future__ import annotations

import asyncio
import random

from async_support import Item, tools_prompt
from weakprompt import run
from weakprompt.adapters.testing import ScriptedAdapter, tool_call, tool_call_turn
from weakprompt.runtime import TurnCommitted
from weakprompt.session import Session
from weakprompt.store import Store
from weakprompt.tools import ToolContext, ToolResult, tool
from weakprompt.transcript import Transcript


@tool
async def note(text: str, *, context: ToolContext) -> ToolResult[None]:
    """Write a note, yielding to the loop."""
    await asyncio.sleep(0)
    context.session[Item].append(Item(text))
    await asyncio.sleep(0)
    return ToolResult.ok(None, message=text)


def _script(tag: str) -> list[object]:
    return [
        tool_call_turn(
            tool_call("note", {"text": f"{tag}-1"}, id=f"{tag}a"),
            tool_call("note", {"text": f"{tag}-2"}, id=f"{tag}b"),
        ),
        tool_call_turn(tool_call("note", {"text": f"{tag}-3"}, id=f"{tag}c")),
        f"{tag} done",
    ]


def _consistent(store: Store, session: Session) -> None:
    log = Transcript(store, session.session_id).compile().messages
    # every stored assistant tool call has its result stored right after it: no half turn
    pending: set[str] = set()
    for commit in log:
        if commit.role == "assistant":
            assert not pending, f"a turn was stored without all its results: {pending}"
            pending = {c.id for c in commit.tool_calls}
        elif commit.role == "tool":
            pending.discard(commit.tool_call_id or "")
    assert not pending
    # the session holds exactly the notes whose results are stored
    stored = [c.content for c in log if c.role == "tool"]
    assert [i.text for i in session[Item].all()] == stored


async def _trial(rng: random.Random, store: Store) -> None:
    session = Session()
    committed: list[TurnCommitted] = []
    task = asyncio.ensure_future(
        run(
            tools_prompt([note]),
            adapter=ScriptedAdapter(_script("x")),  # type: ignore[arg-type]
            session=session,
            store=store,
            on_event=lambda e: committed.append(e) if isinstance(e, TurnCommitted) else None,
        )
    )
    for _ in range(rng.randrange(0, 60)):
        await asyncio.sleep(0)
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass
    _consistent(store, session)
    # a new run on the same session continues from what was stored
    again = await run(
        tools_prompt([note]), adapter=ScriptedAdapter(_script("y")), session=session, store=store
    )  # type: ignore[arg-type]
    assert again.text == "y done"
    _consistent(store, session)


def test_cancelling_at_random_points_keeps_store_and_session_consistent() -> None:
    rng = random.Random(20240611)
    store = Store.open("sqlite://")

    async def main() -> None:
        for _ in range(500):
            await _trial(rng, store)

    asyncio.run(main())
