"""What a running evaluation reports as it goes: one typed union, for ``stream()`` and ``on_event=``.

A streamed run and a run with an ``on_event`` callback see the same events
in the same order. They are progress reports, not the record: the
transcript is the record, and every ``TurnCommitted`` names commits that
are already stored.

The events are the ones of :mod:`weakprompt.events`, the same classes an
adapter streams and the same objects the session's bus carries: a model
reply's pieces (``TextDelta``, ``ReasoningDelta``, ``ToolCallStarted``, ``ToolCallDelta``,
``ToolCallReady``, ``UsageReported``, with ``turn`` set), each finished tool
call's ``ToolInvoked``, each stored result's ``ToolResultStored``, then
``TurnCommitted`` for the turn, and ``RunFinished`` last.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeAlias, TypeVar, Union

from ..events import (
    ChildEvent,
    ReasoningDelta,
    RunFinished,
    TextDelta,
    ToolCallDelta,
    ToolCallReady,
    ToolCallStarted,
    ToolInvoked,
    ToolResultStored,
    TurnCommitted,
    UsageReported,
)
from ..lazy import lazy_exports
from .response import PromptResponse

__all__ = [
    "ChildEvent",
    "EventCallback",
    "ReasoningDelta",
    "RunEvent",
    "RunFinished",
    "TextDelta",
    "ToolCallDelta",
    "ToolCallReady",
    "ToolCallStarted",
    "ToolInvoked",
    "ToolResultStored",
    "TurnCommitted",
    "UsageReported",
]

OutputT = TypeVar("OutputT")

RunEvent: TypeAlias = Union[  # noqa: UP007 - a generic alias
    TextDelta,
    ReasoningDelta,
    ToolCallStarted,
    ToolCallDelta,
    ToolCallReady,
    ToolInvoked,
    ToolResultStored,
    TurnCommitted,
    UsageReported,
    RunFinished[PromptResponse[OutputT]],
    ChildEvent,
]
"""Every event a run reports; ``RunFinished`` comes last, only when the run succeeded.

A ``ChildEvent`` carries an event of an agent this run called as a tool (``specs/SUBAGENTS.md``)."""

EventCallback: TypeAlias = Callable[[RunEvent[Any]], object]
"""``on_event=`` of a run: called with every run event; an awaitable it returns is awaited."""

# Names of the run's own copies of events, before the run streamed the events themselves.
RENAMED: dict[str, str] = {
    "ToolCallArgumentsDelta": "weakprompt.events.ToolCallDelta",
    "ToolCallCompleted": "weakprompt.events.ToolCallReady",
    "ToolResultReady": "weakprompt.events.ToolResultStored",
}

__getattr__, __dir__ = lazy_exports(__name__, {}, __all__, renamed=RENAMED)
