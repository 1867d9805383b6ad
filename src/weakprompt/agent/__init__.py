"""The agent: a prompt, a model and the default settings of its runs, frozen and reused.

See ``specs/AGENT.md``. A first agent::

    agent = Agent(adapter, instructions="You answer weather questions.", tools=[lookup_weather])
    print(agent.run_sync("How warm is Lisbon?").text)
"""

from __future__ import annotations

from .agent import Agent
from .guardrail_agents import GuardrailAnswer, agent_guardrail
from .options import AgentDefaults, RunOverrides

__all__ = ["Agent", "AgentDefaults", "GuardrailAnswer", "RunOverrides", "agent_guardrail"]
