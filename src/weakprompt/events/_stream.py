"""The events of a model reply as it streams, one vocabulary for adapters and runs alike.

An adapter's ``stream`` yields them with ``turn`` left at 0 (it does not know
the run); a run hands each on to ``stream()`` and ``on_event=`` as the same
class with ``turn`` set to the model call it belongs to (counted from 1).
So ``isinstance(event, TextDelta)`` matches with either import path:
``weakprompt.events``, ``weakprompt.model`` or ``weakprompt.runtime``.
The rules a stream follows are in :mod:`weakprompt.model.stream`.
"""

from __future__ import annotations

import attrs

from ..messages import AssistantTurn, ToolCall
from ..usage import Usage

__all__ = [
    "ReplyCompleted",
    "TextDelta",
    "ToolCallDelta",
    "ToolCallReady",
    "ToolCallStarted",
    "UsageReported",
]


@attrs.frozen
class TextDelta:
    """The next piece of the reply's text."""

    text: str
    turn: int = attrs.field(default=0, kw_only=True)
    """The run's model call this piece belongs to (from 1); 0 straight from an adapter."""


@attrs.frozen
class ToolCallStarted:
    """The model began tool call number ``index`` (its id and name are known, its arguments not yet)."""

    index: int
    call_id: str
    name: str
    turn: int = attrs.field(default=0, kw_only=True)


@attrs.frozen
class ToolCallDelta:
    """The next piece of the arguments of tool call number ``index``, as the provider wrote it."""

    index: int
    arguments_delta: str
    turn: int = attrs.field(default=0, kw_only=True)


@attrs.frozen
class ToolCallReady:
    """Tool call number ``index`` is complete: ``call`` is exactly what the turn holds and the run runs."""

    index: int
    call: ToolCall
    turn: int = attrs.field(default=0, kw_only=True)


def _same_usage(event: UsageReported) -> Usage:
    return event.usage


@attrs.frozen
class UsageReported:
    """Usage: from an adapter, the reply's so far (a later report replaces it); from a run, one model call's.

    ``total`` is the run's usage so far, counted once the call is recorded;
    straight from an adapter it is the reply's own (``usage``).
    """

    usage: Usage
    turn: int = attrs.field(default=0, kw_only=True)
    total: Usage = attrs.field(default=attrs.Factory(_same_usage, takes_self=True), kw_only=True)


@attrs.frozen
class ReplyCompleted:
    """The reply is over; ``turn`` is what the non-streamed call would have returned. Always last.

    Only in an adapter's stream: a run records the turn and reports ``TurnCommitted`` once it is stored.
    """

    turn: AssistantTurn
