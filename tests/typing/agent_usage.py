"""An Agent as a strict user writes one: the output type flows to ``response.output`` with no casts."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import assert_type

from pydantic import BaseModel

from weakprompt import (
    Agent,
    Approve,
    Budget,
    Deny,
    ForceTool,
    FunctionAdapter,
    MarkdownSection,
    ModelRequest,
    OutputValidationError,
    PausedRun,
    Prompt,
    PromptResponse,
    PromptTemplate,
    RunEvent,
    ScriptedAdapter,
    Session,
    Store,
    Tool,
    ToolArguments,
    tool,
)
from weakprompt.runtime import Decision, RunFinished


class Weather(BaseModel):
    city: str
    celsius: float


@dataclass(frozen=True)
class Task:
    city: str


@tool
def lookup_weather(city: str) -> Weather:
    """Current weather of a city."""
    return Weather(city=city, celsius=21.5)


@tool
def describe(city: str) -> str:
    """One line about a city."""
    return f"{city} is by the sea."


# plain-value tools keep their value type
assert_type(lookup_weather, Tool[ToolArguments, Weather])
assert_type(describe, Tool[ToolArguments, str])

adapter = ScriptedAdapter(['{"city": "Lisbon", "celsius": 21.5}'])

# -- instructions + tools + output_type: an Agent[Weather] ------------------------------------

agent = Agent(
    adapter,
    instructions="You answer weather questions.",
    tools=[lookup_weather, describe],
    output_type=Weather,
    max_turns=4,
    budget=Budget(max_model_calls=8),
    tool_choice=ForceTool("lookup_weather"),
)
assert_type(agent, Agent[Weather])
response = agent.run_sync("How warm is Lisbon?")
assert_type(response, PromptResponse[Weather])
assert_type(response.output, Weather)
celsius: float = agent.run_sync("How warm is Lisbon?", max_turns=2, session=Session()).output.celsius


async def run_async(store: Store) -> Weather:
    answered = await agent.run("How warm is Lisbon?", session="user-42", store=store, tool_choice="auto")
    assert_type(answered.output, Weather)
    async with agent.stream("How warm is Lisbon?") as events:
        assert_type(events, AsyncIterator[RunEvent[Weather]])
        async for event in events:
            if isinstance(event, RunFinished):
                assert_type(event.response.output, Weather)
    return answered.output


with agent.stream_sync("How warm is Lisbon?", adapter=FunctionAdapter(lambda request: "{}")) as sync_events:
    assert_type(sync_events, Iterator[RunEvent[Weather]])

# -- no output_type: the answer is the text ---------------------------------------------------

chat = Agent(adapter, instructions="Chat.", tools=[describe])
assert_type(chat, Agent[None])
assert_type(chat.run_sync("hi").output, None)
assert_type(chat.run_sync("hi").text, str)

# -- an agent as a tool of another: its result type is the agent's output ---------------------

assert_type(agent.as_tool(name="weather", description="Answers weather questions."), Tool[object, Weather])
assert_type(chat.as_tool(name="chat", description="Chats."), Tool[object, str])
lead = Agent(adapter, instructions="Lead.", tools=[agent.as_tool(name="weather", description="Weather.")])
assert_type(lead, Agent[None])

# -- a whole prompt tree, and params for its sections -----------------------------------------

template: PromptTemplate[Weather] = PromptTemplate(
    ns="typing",
    key="weather",
    output_type=Weather,
    sections=[MarkdownSection(title="Task", key="task", template="How warm is $city?", params_type=Task)],
)
tree = Agent(adapter, template=template)
assert_type(tree, Agent[Weather])
assert_type(tree.run_sync(params=(Task("Lisbon"),)).output, Weather)
assert_type(Agent(adapter=adapter, template=Prompt(template)), Agent[Weather])
assert_type(tree.template, PromptTemplate[Weather])

# -- a first approval -------------------------------------------------------------------------


def decide(paused: PausedRun) -> list[Decision]:
    decisions: list[Decision] = []
    for waiting in paused.pending:
        if waiting.tool == "describe":
            decisions.append(Approve(waiting.call_id, waiting.token))
        else:
            decisions.append(Deny(waiting.call_id, waiting.token))
    return decisions


def resume_after_approval(store: Store) -> Weather | None:
    first = agent.run_sync("How warm is Lisbon?", session="job-1", store=store)
    if first.paused is None:
        return first.output
    finished = agent.resume_sync(first.session_id, decide(first.paused), store=store, decided_by="alice")
    assert_type(finished, PromptResponse[Weather])
    return finished.output


async def resume_in_a_loop(store: Store) -> Weather:
    finished = await agent.resume("job-1", [], store=store, approve=decide)
    return finished.output


def echo(request: ModelRequest) -> str:
    return request.context.messages[-1].content


inline = Agent(FunctionAdapter(echo), instructions="Echo.", approve=decide, on_event=print)
assert_type(inline.run_sync("x").text, str)

# -- mistakes the checker catches -------------------------------------------------------------

wrong: str = agent.run_sync("x").output  # pyright: ignore[reportAssignmentType]
agent.run_sync("x", max_turn=3)  # pyright: ignore[reportCallIssue]
agent.run_sync("x", max_turns="3")  # pyright: ignore[reportArgumentType]
Agent(adapter, instructions="x", deadline=None)  # pyright: ignore[reportCallIssue]
Agent(adapter, template=template, tools=[describe])  # pyright: ignore[reportCallIssue]


# An output validator is typed by the agent's output type: it sees a Weather, no cast.
def plausible(weather: Weather) -> None:
    if not -90.0 <= weather.celsius <= 60.0:
        raise OutputValidationError(f"{weather.celsius} °C is not a temperature on Earth")


checked = Agent(
    ScriptedAdapter(['{"city": "Oslo", "celsius": 3}']),
    instructions="Answer.",
    output_type=Weather,
    output_validators=[plausible],
)
checked_weather: Weather = checked.run_sync("How warm?").output
