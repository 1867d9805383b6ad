"""What a running evaluation reports as it goes: one typed union, for ``stream()`` and ``on_event=``.

A streamed run and a run with an ``on_event`` callback see the same events
in the same order. They are progress reports, not the record: the
transcript is the record, and every ``TurnCommitted`` names commits that
are already stored.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, TypeAlias, TypeVar, Union

import attrs

from ..messages import ToolCall, Usage

if TYPE_CHECKING:
    from .response import PromptResponse

__all__ = [
    "EventCallback",
    "RunEvent",
    "RunFinished",
    "TextDelta",
    "ToolCallArgumentsDelta",
    "ToolCallCompleted",
    "ToolCallStarted",
    "ToolResultReady",
    "TurnCommitted",
    "UsageReported",
]

OutputT = TypeVar("OutputT")


@attrs.frozen
class TextDelta:
    """A piece of the model's reply text, in order."""

    turn: int
    text: str


@attrs.frozen
class ToolCallStarted:
    """The model began a tool call (``index`` is its position in the reply)."""

    turn: int
    index: int
    call_id: str
    name: str


@attrs.frozen
class ToolCallArgumentsDelta:
    """A piece of a tool call's argument text."""

    turn: int
    index: int
    arguments_delta: str


@attrs.frozen
class ToolCallCompleted:
    """A tool call as the dispatcher will receive it."""

    turn: int
    index: int
    call: ToolCall


@attrs.frozen
class ToolResultReady:
    """A call's result after the output pipeline: exactly the text the model will read."""

    turn: int
    call: ToolCall
    content: str
    is_error: bool


@attrs.frozen
class TurnCommitted:
    """A model turn (the reply and all its tool results) is stored; ``head`` is its last commit."""

    turn: int
    head: str | None
    commit_hashes: tuple[str, ...]


@attrs.frozen
class UsageReported:
    """The usage of one model call, and the evaluation's total so far."""

    turn: int
    usage: Usage
    total: Usage


@attrs.frozen
class RunFinished(Generic[OutputT]):
    """The last event of a successful run, with its response."""

    response: PromptResponse[OutputT]


RunEvent: TypeAlias = Union[  # noqa: UP007 - a generic alias
    TextDelta,
    ToolCallStarted,
    ToolCallArgumentsDelta,
    ToolCallCompleted,
    ToolResultReady,
    TurnCommitted,
    UsageReported,
    RunFinished[OutputT],
]
"""Every event a run reports; ``RunFinished`` comes last, only when the run succeeded."""

EventCallback: TypeAlias = Callable[[RunEvent[Any]], object]
"""``on_event=`` of a run: called with every run event; an awaitable it returns is awaited."""
