"""The agent: a prompt, a model and the default settings of its runs, frozen and reused.

See ``specs/AGENT.md``. A first agent::

    agent = Agent(adapter, instructions="You answer weather questions.", tools=[lookup_weather])
    print(agent.run_sync("How warm is Lisbon?").text)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports
from ..runtime.handoff_runs import without_tool_calls
from .agent import Agent
from .guardrail_agents import GuardrailAnswer, agent_guardrail
from .handoffs import Handoff, TransferParams
from .options import AgentDefaults, RunOverrides

if TYPE_CHECKING:
    from .as_tool import AgentInput
    from .nested import WaitingCall, waiting_calls

# What agents used as tools add (specs/SUBAGENTS.md): loaded on first use, with the store.
_LAZY = {"AgentInput": ".as_tool", "WaitingCall": ".nested", "waiting_calls": ".nested"}

__all__ = [
    "Agent",
    "AgentDefaults",
    "AgentInput",
    "GuardrailAnswer",
    "Handoff",
    "RunOverrides",
    "TransferParams",
    "WaitingCall",
    "agent_guardrail",
    "waiting_calls",
    "without_tool_calls",
]

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__)
