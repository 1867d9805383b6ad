"""A first agent: instructions, one tool, a typed answer. Runs offline: scripted replies play the model.

Run: ``.venv/bin/python examples/first_agent.py``. For a real model, make
``model`` an ``OpenAIAdapter("gpt-4o-mini")``, an ``AnthropicAdapter(...)`` or a
``LocalAdapter()``; nothing else changes.
"""

from dataclasses import dataclass

from weakprompt import Agent, AssistantTurn, ScriptedAdapter, ToolCall, tool


@dataclass(frozen=True)
class Weather:
    city: str
    celsius: float


@tool
def lookup_weather(city: str) -> Weather:
    """Current temperature for a city."""
    return Weather(city, 21.5)


# Scripted replies play the model: one tool call, then the answer in JSON.
call = ToolCall(id="call_1", name="lookup_weather", arguments={"city": "Lisbon"})
model = ScriptedAdapter([AssistantTurn(tool_calls=(call,)), '{"city": "Lisbon", "celsius": 21.5}'])

agent = Agent(model, instructions="Answer weather questions.", tools=[lookup_weather], output_type=Weather)
response = agent.run_sync("How warm is Lisbon?")
print(f"{response.output.city}: {response.output.celsius} °C ({response.turns} model calls)")
