"""The loop streams a tool turn from a real llama.cpp server through OpenAIAdapter (AsyncOpenAI, SSE).

The events a caller of ``stream(...)`` receives and the transcript the run
stores describe the same turns: the same calls, the same results, the same text.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from adapters_support import get_weather
from llama_server import LlamaServer, llama_server  # noqa: F401 - pytest fixture
from weakprompt.adapters.openai import OpenAIAdapter
from weakprompt.errors import MaxTurnsExceededError
from weakprompt.model import ForceTool
from weakprompt.prompt import MarkdownSection, Prompt, PromptTemplate
from weakprompt.runtime import (
    RunEvent,
    RunFinished,
    TextDelta,
    ToolCallDelta,
    ToolCallReady,
    ToolCallStarted,
    ToolResultStored,
    TurnCommitted,
    stream,
)
from weakprompt.session import Session
from weakprompt.store import Store
from weakprompt.transcript import Transcript

pytestmark = pytest.mark.real_model

PROMPT: Prompt[None] = Prompt(
    PromptTemplate(
        ns="tests/loop",
        key="server-stream",
        sections=[
            MarkdownSection(
                title="Task",
                key="task",
                template="Answer questions about the weather. Use get_weather, then answer in one sentence.",
                tools=[get_weather],
            )
        ],
    )
)


@pytest.fixture
def adapter(llama_server: LlamaServer) -> OpenAIAdapter:  # noqa: F811 - the imported fixture
    return OpenAIAdapter(
        llama_server.model,
        base_url=llama_server.base_url,
        strict_tools=False,
        max_retries=0,
        timeout=120,
        temperature=0.0,
        seed=0,
        max_tokens_field="max_tokens",
    )


async def _events(
    adapter: OpenAIAdapter, store: Store, session: Session
) -> tuple[list[RunEvent[None]], bool]:
    seen: list[RunEvent[None]] = []
    finished = True
    try:
        async with stream(
            PROMPT,
            adapter=adapter,
            session=session,
            store=store,
            input="What is the weather in Paris?",
            tool_choice=ForceTool("get_weather"),
            max_turns=3,
            max_output_tokens=48,
        ) as events:
            async for event in events:
                seen.append(event)
    except MaxTurnsExceededError:  # a small model may keep calling the tool; the stored turns still count
        finished = False
    return seen, finished


def test_a_tool_turn_streams_through_the_loop_and_agrees_with_the_transcript(adapter: OpenAIAdapter) -> None:
    store = Store.open("sqlite://")
    session = Session()
    events, finished = asyncio.run(_events(adapter, store, session))

    # the forced first turn: the call streams as it is made, its arguments in pieces
    first = [e for e in events if getattr(e, "turn", None) == 1]
    (started,) = [e for e in first if isinstance(e, ToolCallStarted)]
    (completed,) = [e for e in first if isinstance(e, ToolCallReady)]
    assert started.name == completed.call.name == "get_weather"
    assert [e for e in first if isinstance(e, ToolCallDelta)]
    assert "paris" in json.loads(completed.call.arguments_json())["city"].lower()

    # every committed turn is in the transcript as the events told it
    messages = Transcript(store, session.session_id).compile().messages
    assistants = [m for m in messages if m.role == "assistant"]
    results = {m.tool_call_id: m.content for m in messages if m.role == "tool"}
    committed = [e.turn for e in events if isinstance(e, TurnCommitted)]
    assert committed == list(range(1, len(assistants) + 1))
    for turn, stored in zip(committed, assistants, strict=True):
        calls = [e.call for e in events if isinstance(e, ToolCallReady) and e.turn == turn]
        assert [c.id for c in calls] == [c.id for c in stored.tool_calls]
        assert (
            "".join(e.text for e in events if isinstance(e, TextDelta) and e.turn == turn) == stored.content
        )
    ready = [e for e in events if isinstance(e, ToolResultStored)]
    assert ready and {e.call.id: e.content for e in ready} == results
    assert isinstance(events[-1], RunFinished) == finished
