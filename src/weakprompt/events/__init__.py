"""In-process events: what happened during rendering, tool calls and evaluation.

Events are frozen records; the :class:`Dispatcher` hands them to subscribers
and reports handler failures on a :class:`DispatchResult` instead of raising.
:func:`publish` is how the framework sends its own events: dispatch, then log
any subscriber that raised.
"""

from __future__ import annotations

from ._dispatcher import (
    Dispatcher,
    DispatchResult,
    EventHandler,
    EventHandlerError,
    HandlerFailure,
)
from ._provider import AdapterFellBack, ModelCallRetried
from ._publish import publish
from ._types import (
    PromptExecuted,
    PromptRendered,
    ToolInvoked,
    ToolOutputExtracted,
    ToolResultStored,
    ToolResultSummarized,
    new_event_id,
)

__all__ = [
    "AdapterFellBack",
    "DispatchResult",
    "Dispatcher",
    "EventHandler",
    "EventHandlerError",
    "HandlerFailure",
    "ModelCallRetried",
    "PromptExecuted",
    "PromptRendered",
    "ToolInvoked",
    "ToolOutputExtracted",
    "ToolResultStored",
    "ToolResultSummarized",
    "new_event_id",
    "publish",
]
