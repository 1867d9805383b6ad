"""pydantic models as tool params and results and as a prompt's output type, with no casts."""

from __future__ import annotations

from typing import assert_type

from pydantic import BaseModel, Field

from weakprompt import (
    MarkdownSection,
    Prompt,
    PromptTemplate,
    Session,
    Tool,
    ToolContext,
    ToolResult,
    evaluate,
    tool,
)
from weakprompt.adapters.testing import ScriptedAdapter
from weakprompt.messages import Message


class Forecast(BaseModel):
    city: str = Field(description="City name")
    days: int = Field(default=1, ge=1, le=7)


class Weather(BaseModel):
    city: str
    celsius: float


@tool
def forecast(params: Forecast, *, context: ToolContext) -> ToolResult[Weather]:
    """The weather in a city."""
    return ToolResult.ok(Weather(city=params.city, celsius=21.0))


assert_type(forecast, Tool[Forecast, Weather])


@tool(name="plain_forecast", description="The weather, as a plain value.")
def plain_forecast(params: Forecast) -> Weather:
    return Weather(city=params.city, celsius=19.5)


assert_type(plain_forecast, Tool[Forecast, Weather])


@tool
async def async_forecast(params: Forecast) -> Weather:
    """The weather, looked up asynchronously."""
    return Weather(city=params.city, celsius=18.0)


assert_type(async_forecast, Tool[Forecast, Weather])


def forecast_handler(params: Forecast, *, context: ToolContext) -> ToolResult[Weather]:
    return ToolResult.ok(Weather(city=params.city, celsius=20.0))


built = Tool(name="built", description="d", handler=forecast_handler)
assert_type(built, Tool[Forecast, Weather])

template = PromptTemplate(
    ns="typing",
    key="pydantic",
    output_type=Weather,
    sections=[
        MarkdownSection(title="Task", key="task", template="Forecast.", tools=[forecast, plain_forecast])
    ],
)
assert_type(template, PromptTemplate[Weather])


def check(answer: Weather) -> None:
    assert answer.celsius > -90


response = evaluate(
    Prompt(template),
    adapter=ScriptedAdapter(['{"city": "Lisbon", "celsius": 20}']),
    session=Session(),
    output_validators=(check,),
)
assert_type(response.output, Weather)
celsius: float = response.output.celsius


async def check_async(answer: Weather) -> None:
    assert answer.city


again = evaluate(
    Prompt(template),
    adapter=ScriptedAdapter(['{"city": "Porto", "celsius": 22}']),
    session=Session(),
    output_validators=[check, check_async],
    message_history=response.messages,
)
assert_type(again.new_messages, tuple[Message, ...])
