"""The full loop on the real local model (SmolLM2-135M-Instruct through llama.cpp)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

import pytest

from weakprompt.events import PromptExecuted, PromptRendered, ToolInvoked
from weakprompt.prompt import MarkdownSection, Prompt, PromptTemplate
from weakprompt.runtime import ForceTool, ModelTurnCompleted, ToolResultStored
from weakprompt.runtime.loop import evaluate
from weakprompt.serde import Meta
from weakprompt.session import Session
from weakprompt.store import Store
from weakprompt.tools import ToolContext, ToolResult, tool
from weakprompt.transcript import Transcript

pytestmark = pytest.mark.real_model


@dataclass(frozen=True)
class CityParams:
    # A length cap becomes part of the grammar, so the tiny model cannot ramble.
    city: Annotated[str, Meta(max_length=30)]


calls: list[str] = []


@tool(name="get_weather", description="Current weather for a city.")
def get_weather(params: CityParams, *, context: ToolContext) -> ToolResult[None]:
    calls.append(params.city)
    return ToolResult(message=f"It is sunny and 21 degrees in {params.city}.")


@dataclass(frozen=True)
class Place:
    name: str


@tool(name="describe_place", description="A short description of a place.")
def describe_place(params: Place, *, context: ToolContext) -> ToolResult[None]:
    return ToolResult(message=f"{params.name} is a city.")


TEMPLATE: PromptTemplate[None] = PromptTemplate(
    ns="tests/local",
    key="weather",
    sections=[
        MarkdownSection(
            title="Weather",
            key="weather",
            template="You answer questions about the weather. Use get_weather.",
            tools=[get_weather],
        ),
        MarkdownSection(
            title="Places", key="places", template="Describe places if asked.", tools=[describe_place]
        ),
    ],
)


@pytest.fixture(scope="module")
def adapter() -> object:
    from weakprompt.adapters.local import LocalAdapter

    return LocalAdapter(progress=False)


def test_forced_tool_call_result_and_answer_on_the_local_model(adapter: object, tmp_path: object) -> None:
    from pathlib import Path

    from weakprompt.runtime import ProviderAdapter

    assert isinstance(adapter, ProviderAdapter)
    db = Path(str(tmp_path)) / "local.db"
    store = Store.open(db)
    session = Session()
    seen: list[object] = []
    session.bus.subscribe_all(seen.append)
    calls.clear()

    response = evaluate(
        Prompt(TEMPLATE),
        adapter=adapter,
        session=session,
        input="What is the weather in Lisbon?",
        store=store,
        tool_choice=ForceTool("get_weather"),
        max_turns=4,
        max_output_tokens=64,
    )

    # The model called the tool (forced), the dispatcher ran it, the model answered.
    assert len(calls) == 1
    assert [e.success for e in response.tool_executions] == [True]
    assert response.turns >= 2
    assert response.text.strip()
    assert response.usage.model_calls == response.turns
    assert response.usage.input_tokens > 0 and response.usage.output_tokens > 0

    # Transcript: system, user, assistant(tool call), tool result, ..., final assistant.
    transcript = Transcript(store, session.session_id)
    log = transcript.log()
    roles = [c.role for c in log]
    assert roles[:4] == ["system", "user", "assistant", "tool"]
    assert roles[-1] == "assistant"
    call_commit = log[2]
    assert [c.name for c in call_commit.content.tool_calls] == ["get_weather"]
    assert log[3].content.tool_call_id == call_commit.content.tool_calls[0].id
    assert "sunny" in log[3].content.content
    # The tool set sent with the request is linked to the assistant commit.
    linked = transcript.get_commit_tools(call_commit.hash)
    assert [t["name"] for t in linked] == ["get_weather", "describe_place"]
    assert call_commit.usage is not None and call_commit.usage.model_calls == 1
    assert response.head == log[-1].hash

    # Events: rendered once, one ToolInvoked, one result committed, one turn event per call, executed once.
    assert sum(isinstance(e, PromptRendered) for e in seen) == 1
    assert sum(isinstance(e, ToolInvoked) for e in seen) == 1
    assert sum(isinstance(e, ToolResultStored) for e in seen) == 1
    assert sum(isinstance(e, ModelTurnCompleted) for e in seen) == response.turns
    executed = [e for e in seen if isinstance(e, PromptExecuted)]
    assert len(executed) == 1 and executed[0].usage == response.usage
    store.close()
