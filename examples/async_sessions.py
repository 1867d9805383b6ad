"""Two sessions at once on the async loop, then a third one streamed as it happens.

Run: ``.venv/bin/python examples/async_sessions.py``

Everything here runs offline. The "model" is an async function that waits
0.2 s per call, as a remote provider keeps a request waiting, and the tool
waits 0.1 s, as a slow service would. One ``Agent`` serves every session:
``await agent.run(...)`` gives the event loop back during both waits, so two
sessions started together with ``asyncio.gather`` take about as long as one.
Both write their transcripts to the agent's SQLite file. ``agent.stream(...)``
then runs a third session and hands over the answer's text and the tool calls
while they happen.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from weakprompt import (
    Agent,
    AssistantTurn,
    FunctionAdapter,
    MarkdownSection,
    ModelRequest,
    PromptTemplate,
    Store,
    ToolCall,
    ToolResult,
    tool,
)
from weakprompt.events import TextDelta, ToolCallReady, ToolResultStored

MODEL_LATENCY = 0.2
TEMPERATURES = {"Lisbon": 21.5, "Oslo": 4.0, "Nairobi": 24.0}


@dataclass(frozen=True)
class Weather:
    city: str
    celsius: float


@tool
async def lookup_weather(city: str) -> ToolResult[Weather]:
    """Current temperature for a city.

    Args:
        city: City name, e.g. 'Lisbon'.
    """
    await asyncio.sleep(0.1)  # a slow weather service
    if city not in TEMPERATURES:
        return ToolResult.error(f"no station in {city}; known: {', '.join(TEMPERATURES)}")
    return ToolResult.ok(Weather(city, TEMPERATURES[city]))


@dataclass(frozen=True)
class Task:
    city: str


TEMPLATE = PromptTemplate(
    ns="demo",
    key="async-weather",
    sections=[
        MarkdownSection(
            title="Task",
            key="task",
            template="How warm is it in $city? Look it up, then answer in one sentence.",
            params_type=Task,
            tools=[lookup_weather],
        )
    ],
)


async def fake_model(request: ModelRequest) -> AssistantTurn | str:
    """Asks for the weather in the city the prompt names, then answers from the result."""
    await asyncio.sleep(MODEL_LATENCY)  # a remote model thinking
    messages = request.context.messages
    city = next(name for name in TEMPERATURES if name in messages[0].content)
    if messages[-1].role != "tool":
        call = ToolCall(id=f"call_{city.lower()}", name="lookup_weather", arguments={"city": city})
        return AssistantTurn(text=f"Let me check {city}.", tool_calls=(call,), finish_reason="tool_calls")
    return f"It is {TEMPERATURES[city]} °C in {city} right now."


async def two_sessions_at_once(agent: Agent[None], store: Store) -> None:
    started = time.perf_counter()
    lisbon, oslo = await asyncio.gather(
        agent.run(params=(Task("Lisbon"),), session="lisbon"),
        agent.run(params=(Task("Oslo"),), session="oslo"),
    )
    elapsed = time.perf_counter() - started
    for response in (lisbon, oslo):
        print(f"[{response.session_id}] {response.text} ({response.turns} model calls)")
    one_alone = 2 * MODEL_LATENCY + 0.1
    print(f"two sessions took {elapsed:.2f} s together; one alone waits about {one_alone:.1f} s")
    print(f"sessions stored in the file: {', '.join(sorted(store.session_ids()))}")


async def one_session_streamed(agent: Agent[None]) -> None:
    print("\nstreaming a third session:")
    async with agent.stream(params=(Task("Nairobi"),), session="nairobi") as events:
        async for event in events:
            if isinstance(event, TextDelta):
                print(event.text, end="", flush=True)
            elif isinstance(event, ToolCallReady):
                print(f"\n-> {event.call.name}({event.call.arguments_json()})", flush=True)
            elif isinstance(event, ToolResultStored):
                print(f"<- {event.call.name}: {event.content}", flush=True)
    print()


async def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        store = Store.open(Path(folder) / "sessions.db")
        agent = Agent(FunctionAdapter(fake_model), template=TEMPLATE, store=store)
        try:
            await two_sessions_at_once(agent, store)
            await one_session_streamed(agent)
        finally:
            store.close()


if __name__ == "__main__":
    asyncio.run(main())
