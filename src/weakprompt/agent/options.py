"""The settings an agent keeps for its runs, and the ones a single call may change.

Both are ``TypedDict``\\ s, so ``Agent(...)`` and ``agent.run(...)`` take them
as plain keyword arguments that a type checker knows by name and type (no
untyped ``**options``). Each key is the
:class:`~weakprompt.runtime.run_settings.RunSettings` field of that name; see
:func:`~weakprompt.runtime.loop.run` for what each one does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypedDict

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..budget import Budget, BudgetTracker
    from ..deadlines import Deadline
    from ..messages import Message
    from ..model import CompactionSettings, ModelSettings, ProviderAdapter, ToolChoice
    from ..resources import ResourceRegistry
    from ..runtime.approval import InlineApprover
    from ..runtime.guardrails import Guardrail
    from ..runtime.redaction import Redactor
    from ..runtime.results import Retention, ToolOutputSettings
    from ..runtime.run_events import EventCallback
    from ..runtime.tracing import Tracing
    from ..store import Store
    from ..transcript.lazy import LoadToolResults

__all__ = ["AgentDefaults", "RunOverrides"]


class AgentDefaults(TypedDict, total=False):
    """What ``Agent(...)`` keeps for every run (each defaults as in :func:`~weakprompt.runtime.loop.run`).

    ``budget`` as a :class:`~weakprompt.budget.Budget` limits each run on its
    own; a :class:`~weakprompt.budget.BudgetTracker` is shared by every run
    of the agent. ``tool_choice`` applies to a run's first model call only
    (a resumed run starts with ``"auto"`` unless its call says otherwise).
    ``guardrails`` add up: a call's run after the agent's (``specs/GUARDRAILS.md``).
    """

    store: Store | None
    budget: Budget | BudgetTracker | None
    max_turns: int
    tool_choice: ToolChoice
    output_retries: int
    max_expansions: int
    resources: ResourceRegistry | None
    max_output_tokens: int | None
    load_tool_results: LoadToolResults
    retention: Retention
    tool_outputs: ToolOutputSettings | None
    redact: Redactor
    concurrent_tools: bool
    on_event: EventCallback | None
    tracing: Tracing | None
    approve: InlineApprover | None
    model_settings: ModelSettings | None
    guardrails: Sequence[Guardrail]
    strict_verdict: bool
    compaction: CompactionSettings | None


class RunOverrides(AgentDefaults, total=False):
    """What one call may set: any of :class:`AgentDefaults` (it wins over the agent's), plus these.

    ``adapter`` runs this call on another model; ``deadline`` is a moment,
    so it belongs to a call, never to the agent; ``message_history`` (the
    ``response.messages`` of an earlier call) continues a conversation with
    no store.
    """

    adapter: ProviderAdapter
    deadline: Deadline | None
    message_history: Sequence[Message] | None
