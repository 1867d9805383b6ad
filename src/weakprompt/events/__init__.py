"""In-process events: what happened during rendering, tool calls and evaluation.

Events are frozen records; the :class:`Dispatcher` hands them to subscribers
and reports handler failures on a :class:`DispatchResult` instead of raising.
:func:`publish` is how the framework sends its own events: dispatch, then log
any subscriber that raised.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports
from ._dispatcher import (
    Dispatcher,
    DispatchResult,
    EventHandler,
    EventHandlerError,
    HandlerFailure,
)
from ._publish import publish
from ._types import (
    PromptExecuted,
    PromptRendered,
    ToolInvoked,
    ToolResultStored,
    new_event_id,
)

if TYPE_CHECKING:
    from ._output_events import ToolOutputExtracted, ToolResultSummarized
    from ._provider import AdapterFellBack, ModelCallRetried

# Events that only some parts publish resolve on first access: provider retries and fallbacks
# (those adapters), extraction answers and summaries (the tool-output pipeline, the transcript).
_LAZY: dict[str, str] = {
    "AdapterFellBack": "._provider",
    "ModelCallRetried": "._provider",
    "ToolOutputExtracted": "._output_events",
    "ToolResultSummarized": "._output_events",
}

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


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__)
