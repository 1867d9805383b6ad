"""In-process events: every event weakprompt reports, and the bus that carries them.

Events are frozen records of what happened; the :class:`EventBus` hands them
to subscribers and reports handler failures on a :class:`DispatchResult`
instead of raising. :func:`publish` is how the framework sends its own
events: dispatch, then log any subscriber that raised.

One vocabulary (``specs/EVENTS.md``): a model reply streams as ``TextDelta``,
``ToolCallStarted``, ``ToolCallDelta``, ``ToolCallReady``, ``UsageReported``
(the same classes from an adapter and from a run), and a reasoning model's
thinking as ``ReasoningDelta``; a finished tool call is
one ``ToolInvoked``, and its stored result one ``ToolResultStored``.
Every event is importable from here; the packages that publish them
(``weakprompt.model``, ``weakprompt.runtime``) re-export the same classes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports
from ._bus import (
    DispatchResult,
    EventBus,
    EventHandler,
    EventHandlerError,
    HandlerFailure,
)
from ._publish import publish
from ._types import (
    PendingKind,
    PromptExecuted,
    PromptRendered,
    ToolInvoked,
    ToolResultStored,
    new_event_id,
)

if TYPE_CHECKING:
    from ._cache import CacheBustCause, CacheBusted, CacheBustKind
    from ._children import ChildEvent
    from ._compaction import Compacted, CompactionTier
    from ._output_events import ToolOutputExtracted, ToolResultSummarized
    from ._pause import DecisionKind, PendingCall, RunPaused, RunResumed, ToolCallDecided
    from ._provider import AdapterFellBack, ModelCallRetried
    from ._reasoning import ReasoningDelta
    from ._run import ModelTurnCompleted, OutputRejected, RunFinished, SectionsExpanded, TurnCommitted
    from ._stream import (
        ReplyCompleted,
        TextDelta,
        ToolCallDelta,
        ToolCallReady,
        ToolCallStarted,
        UsageReported,
    )

# Events that only some parts publish resolve on first access: provider retries and fallbacks
# (those adapters), extraction answers and summaries (the tool-output pipeline, the transcript),
# a reply's stream (the model contract), a run's progress and its pauses (the loop).
_LAZY: dict[str, str] = {
    "CacheBustCause": "._cache",
    "CacheBustKind": "._cache",
    "CacheBusted": "._cache",
    "AdapterFellBack": "._provider",
    "ChildEvent": "._children",
    "Compacted": "._compaction",
    "CompactionTier": "._compaction",
    "ModelCallRetried": "._provider",
    "ToolOutputExtracted": "._output_events",
    "ToolResultSummarized": "._output_events",
    "DecisionKind": "._pause",
    "PendingCall": "._pause",
    "RunPaused": "._pause",
    "RunResumed": "._pause",
    "ToolCallDecided": "._pause",
    "ModelTurnCompleted": "._run",
    "OutputRejected": "._run",
    "RunFinished": "._run",
    "SectionsExpanded": "._run",
    "TurnCommitted": "._run",
    "ReasoningDelta": "._reasoning",
    "ReplyCompleted": "._stream",
    "TextDelta": "._stream",
    "ToolCallDelta": "._stream",
    "ToolCallReady": "._stream",
    "ToolCallStarted": "._stream",
    "UsageReported": "._stream",
}

# The bus was called ``Dispatcher``, which is also what runs tool calls (``runtime.ToolDispatcher``).
_RENAMED: dict[str, str] = {"Dispatcher": "EventBus"}

__all__ = [
    "AdapterFellBack",
    "ChildEvent",
    "CacheBustCause",
    "CacheBustKind",
    "CacheBusted",
    "Compacted",
    "CompactionTier",
    "DecisionKind",
    "DispatchResult",
    "EventBus",
    "EventHandler",
    "EventHandlerError",
    "HandlerFailure",
    "ModelCallRetried",
    "ModelTurnCompleted",
    "OutputRejected",
    "PendingCall",
    "PendingKind",
    "PromptExecuted",
    "PromptRendered",
    "ReasoningDelta",
    "ReplyCompleted",
    "RunFinished",
    "RunPaused",
    "RunResumed",
    "SectionsExpanded",
    "TextDelta",
    "ToolCallDecided",
    "ToolCallDelta",
    "ToolCallReady",
    "ToolCallStarted",
    "ToolInvoked",
    "ToolOutputExtracted",
    "ToolResultStored",
    "ToolResultSummarized",
    "TurnCommitted",
    "UsageReported",
    "new_event_id",
    "publish",
]


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__, renamed=_RENAMED)
