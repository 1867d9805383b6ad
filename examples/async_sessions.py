"""Two sessions at once on the async loop, then a third one streamed as it happens.

Run: ``.venv/bin/python examples/async_sessions.py``

Everything here runs offline. The "model" is an async function that waits
0.2 s per call, as a remote provider keeps a request waiting, and the tool
waits 0.1 s, as a slow service would. ``await run(...)`` gives the event loop
back during both waits, so two sessions started together with
``asyncio.gather`` take about as long as one. Both write their transcripts to
one SQLite file. ``stream(...)`` then runs a third session and hands over
the answer's text and the tool calls while they happen.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from weakprompt import (
    AssistantTurn,
    FunctionAdapter,
    MarkdownSection,
    ModelRequest,
    Prompt,
    PromptTemplate,
    Session,
    Store,
    ToolCall,
    ToolResult,
    tool,
)
from weakprompt.runtime import TextDelta, ToolCallCompleted, ToolResultReady, run, stream

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


def prompt_for(city: str) -> Prompt[None]:
    return Prompt(TEMPLATE).bind(Task(city))


async def two_sessions_at_once(store: Store) -> None:
    adapter = FunctionAdapter(fake_model)
    started = time.perf_counter()
    lisbon, oslo = await asyncio.gather(
        run(prompt_for("Lisbon"), adapter=adapter, session=Session(session_id="lisbon"), store=store),
        run(prompt_for("Oslo"), adapter=adapter, session=Session(session_id="oslo"), store=store),
    )
    elapsed = time.perf_counter() - started
    for response in (lisbon, oslo):
        print(f"[{response.session_id}] {response.text} ({response.turns} model calls)")
    one_alone = 2 * MODEL_LATENCY + 0.1
    print(f"two sessions took {elapsed:.2f} s together; one alone waits about {one_alone:.1f} s")
    print(f"sessions stored in the file: {', '.join(sorted(store.session_ids()))}")


async def one_session_streamed(store: Store) -> None:
    print("\nstreaming a third session:")
    adapter = FunctionAdapter(fake_model)
    session = Session(session_id="nairobi")
    async with stream(prompt_for("Nairobi"), adapter=adapter, session=session, store=store) as events:
        async for event in events:
            if isinstance(event, TextDelta):
                print(event.text, end="", flush=True)
            elif isinstance(event, ToolCallCompleted):
                print(f"\n-> {event.call.name}({event.call.arguments_json()})", flush=True)
            elif isinstance(event, ToolResultReady):
                print(f"<- {event.call.name}: {event.content}", flush=True)
    print()


async def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        store = Store.open(Path(folder) / "sessions.db")
        try:
            await two_sessions_at_once(store)
            await one_session_streamed(store)
        finally:
            store.close()


if __name__ == "__main__":
    asyncio.run(main())
