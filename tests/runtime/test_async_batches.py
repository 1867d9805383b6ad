"""Concurrent batches keep the contract: a hypothesis state machine; streamed events vs transcript."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from async_support import Item, tools_prompt
from weakprompt.adapters.testing import ScriptedAdapter, tool_call, tool_call_turn
from weakprompt.events import ToolInvoked
from weakprompt.messages import ToolCall
from weakprompt.runtime import RunEvent, TextDelta, ToolResultStored, TurnCommitted, run
from weakprompt.runtime.dispatcher import ToolDispatcher
from weakprompt.session import Session, append
from weakprompt.store import Store
from weakprompt.tools import Tool, ToolContext, ToolResult
from weakprompt.transcript import Transcript


@dataclass(frozen=True)
class Step:
    text: str
    sleeps: int
    fail: bool


async def _work(params: Step, *, context: ToolContext) -> ToolResult[None]:
    context.session[Item].append(Item(params.text))
    for _ in range(params.sleeps):
        await asyncio.sleep(0)
    context.session.dispatch(Item(params.text + "!"))  # through the reducer too
    if params.fail:
        raise RuntimeError("planned failure")
    return ToolResult.ok(None, message=params.text)


def _sync_work(params: Step, *, context: ToolContext) -> ToolResult[None]:
    context.session[Item].append(Item(params.text))
    if params.fail:
        return ToolResult.error("planned")
    return ToolResult.ok(None, message=params.text)


TOOLS = [
    Tool(name="work", description="async work", handler=_work),
    Tool(name="sync_work", description="sync work", handler=_sync_work),
    Tool(name="alone", description="sequential work", handler=_work, sequential=True),
]

steps = st.builds(
    Step, text=st.text("abc", min_size=1, max_size=3), sleeps=st.integers(0, 3), fail=st.booleans()
)
calls = st.lists(st.tuples(st.sampled_from(["work", "sync_work", "alone"]), steps), min_size=1, max_size=5)


def _session() -> Session:
    session = Session()
    session.register_reducer(Item, Item, append)
    return session


class Batches(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.session = _session()
        self.reference = _session()
        self.count = 0

    @rule(batch=calls)
    def run_batch(self, batch: list[tuple[str, Step]]) -> None:
        tool_calls = []
        for name, step in batch:
            self.count += 1
            tool_calls.append(
                ToolCall(
                    id=f"c{self.count}",
                    name=name,
                    arguments={"text": step.text, "sleeps": step.sleeps, "fail": step.fail},
                )
            )
        before = len(self.session[ToolInvoked].all())
        asyncio.run(self._run(tool_calls))
        events = self.session[ToolInvoked].all()[before:]
        assert [e.call_id for e in events] == [c.id for c in tool_calls]
        # the reference: the successful calls applied one after another, in call order
        for (name, step), event in zip(batch, events, strict=True):
            assert event.success is not step.fail
            if not step.fail:
                self.reference[Item].append(Item(step.text))
                if name != "sync_work":
                    self.reference.dispatch(Item(step.text + "!"))

    async def _run(self, tool_calls: list[ToolCall]) -> None:
        dispatcher = ToolDispatcher(TOOLS, session=self.session)
        index = 0
        while index < len(tool_calls):
            end = index + 1
            if not dispatcher.runs_alone(tool_calls[index]):
                while end < len(tool_calls) and not dispatcher.runs_alone(tool_calls[end]):
                    end += 1
            group = tool_calls[index:end]
            if len(group) == 1:
                await dispatcher.execute_async(group[0])
            else:
                await dispatcher.execute_concurrently(group)
            index = end

    @invariant()
    def equals_reference(self) -> None:
        assert self.session[Item].all() == self.reference[Item].all()


TestBatches = Batches.TestCase
TestBatches.settings = settings(max_examples=60, stateful_step_count=6, deadline=None)


@settings(max_examples=30, deadline=None)
@given(
    turns=st.lists(
        st.lists(st.tuples(st.sampled_from(["work", "alone"]), steps), min_size=1, max_size=3), max_size=3
    )
)
def test_streamed_events_agree_with_the_transcript(turns: list[list[tuple[str, Step]]]) -> None:
    script: list[object] = []
    n = 0
    for turn in turns:
        made = []
        for name, step in turn:
            n += 1
            made.append(
                tool_call(name, {"text": step.text, "sleeps": step.sleeps, "fail": step.fail}, id=f"k{n}")
            )
        script.append(tool_call_turn(*made, text="thinking"))
    script.append("final")
    store = Store.open("sqlite://")
    session = _session()
    seen: list[RunEvent[None]] = []
    response = asyncio.run(
        run(
            tools_prompt(TOOLS),
            adapter=ScriptedAdapter(script),
            session=session,
            store=store,
            on_event=seen.append,
        )
    )  # type: ignore[arg-type]
    messages = Transcript(store, session.session_id).compile().messages
    tool_messages = [(m.tool_call_id, m.content, m.is_error) for m in messages if m.role == "tool"]
    streamed = [(e.call.id, e.content, e.is_error) for e in seen if isinstance(e, ToolResultStored)]
    assert streamed == tool_messages
    texts = [e.text for e in seen if isinstance(e, TextDelta)]
    assert texts == [m.content for m in messages if m.role == "assistant" and m.content]
    committed = [e for e in seen if isinstance(e, TurnCommitted)]
    assert len(committed) == response.turns
    assert committed[-1].head == response.head
