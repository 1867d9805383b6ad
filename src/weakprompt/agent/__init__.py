"""The agent: a prompt, a model and the default settings of its runs, frozen and reused.

See ``specs/AGENT.md``. A first agent::

    agent = Agent(adapter, instructions="You answer weather questions.", tools=[lookup_weather])
    print(agent.run_sync("How warm is Lisbon?").text)
"""

from __future__ import annotations

from ..runtime.handoff_runs import without_tool_calls
from .agent import Agent
from .guardrail_agents import GuardrailAnswer, agent_guardrail
from .handoffs import Handoff, TransferParams
from .options import AgentDefaults, RunOverrides

__all__ = [
    "Agent",
    "AgentDefaults",
    "GuardrailAnswer",
    "Handoff",
    "RunOverrides",
    "TransferParams",
    "agent_guardrail",
    "without_tool_calls",
]
