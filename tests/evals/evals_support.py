"""A small weather agent on a function model and a dataset for it (the eval tests and the CLI test)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from weakprompt.adapters.testing import FunctionAdapter, text_turn, tool_call, tool_call_turn
from weakprompt.agent import Agent
from weakprompt.evals import Called, Case, Dataset, MaxTurns, NeverCalled
from weakprompt.messages import AssistantTurn
from weakprompt.model import ModelRequest
from weakprompt.tools import tool

FORECASTS = {"Lisbon": "sunny", "Porto": "rainy", "Faro": "sunny"}


@dataclass(frozen=True)
class Forecast:
    city: str
    sky: str


@tool
def lookup(city: str) -> str:
    """The sky over ``city`` today."""
    return FORECASTS.get(city, "unknown")


def weather_model(request: ModelRequest) -> AssistantTurn:
    """Looks the city up, then answers with the forecast; says 'cloudy' for Faro when told to guess."""
    messages = request.context.messages
    last = messages[-1]
    if last.role == "user":
        return tool_call_turn(tool_call("lookup", {"city": last.content}))
    city = next(m.content for m in reversed(messages) if m.role == "user")
    system = messages[0].content
    sky = "cloudy" if "Guess" in system and city == "Faro" else last.content.strip('"')
    return text_turn(f'{{"city": "{city}", "sky": "{sky}"}}')


def make_agent(instructions: str = "You report the weather. Look it up.") -> Agent[Forecast]:
    return Agent(
        FunctionAdapter(weather_model), instructions=instructions, tools=[lookup], output_type=Forecast
    )


def guessing_agent() -> Agent[Forecast]:
    return make_agent("You report the weather. Guess when unsure.")


def dataset() -> Dataset[object, Forecast]:
    return Dataset(
        name="weather",
        cases=[
            Case(
                name=city,
                input=city,
                expected=Forecast(city, sky),
                evaluators=[Called("lookup", {"city": city}), MaxTurns(3), NeverCalled("delete")],
                metadata={"region": "pt"},
            )
            for city, sky in FORECASTS.items()
        ],
    )


def flaky_text_agent(every: int = 2) -> Agent[None]:
    """An Agent[None] whose every ``every``-th answer is wrong: pass rates below 1."""
    counter = itertools.count(1)

    def model(request: ModelRequest) -> AssistantTurn:
        return text_turn("wrong" if next(counter) % every == 0 else "right")

    return Agent(FunctionAdapter(model), instructions="Answer.")
