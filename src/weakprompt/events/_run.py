"""Events of a running evaluation: its model turns, stored turns, expansions, rejected answers, its end.

Published on the session's bus (``ModelTurnCompleted``, ``SectionsExpanded``,
``OutputRejected``) or handed to ``stream()`` / ``on_event=`` (``TurnCommitted``,
``RunFinished``); the loop in ``weakprompt.runtime`` builds them, only for
someone who listens.
"""

from __future__ import annotations

from datetime import datetime
from typing import Generic, TypeVar

import attrs

from ..messages import FinishReason, ToolCall, Usage
from ._types import new_event_id

__all__ = ["ModelTurnCompleted", "OutputRejected", "RunFinished", "SectionsExpanded", "TurnCommitted"]

ResponseT = TypeVar("ResponseT")


@attrs.frozen(kw_only=True)
class ModelTurnCompleted:
    """The model replied and the reply is committed to the transcript.

    ``turn`` counts model calls from 1. Tool calls listed here run right
    after this event; each then publishes its own ``ToolInvoked``.
    """

    prompt_name: str
    adapter: str
    model: str
    turn: int
    text: str
    tool_calls: tuple[ToolCall, ...]
    usage: Usage
    finish_reason: FinishReason
    commit_hash: str
    session_id: str
    created_at: datetime
    event_id: str = attrs.field(factory=new_event_id)


@attrs.frozen(kw_only=True)
class SectionsExpanded:
    """The model opened summarized sections; the prompt was rendered again."""

    prompt_name: str
    section_keys: tuple[str, ...]
    reason: str
    tool_names: tuple[str, ...]
    """The tool set offered after the expansion."""
    session_id: str
    created_at: datetime
    event_id: str = attrs.field(factory=new_event_id)


@attrs.frozen(kw_only=True)
class OutputRejected:
    """A final answer did not parse as the prompt's output type, or an output validator rejected it.

    ``retrying`` tells whether the model gets a corrective turn; when it is
    false the evaluation raises ``OutputParseError`` (or the validator's
    ``OutputValidationError``) next.
    """

    prompt_name: str
    turn: int
    text: str
    errors: str
    retrying: bool
    session_id: str
    created_at: datetime
    event_id: str = attrs.field(factory=new_event_id)


@attrs.frozen
class TurnCommitted:
    """A model turn (the reply and all its tool results) is stored; ``head`` is its last commit."""

    turn: int
    head: str | None
    commit_hashes: tuple[str, ...]


@attrs.frozen
class RunFinished(Generic[ResponseT]):
    """The last event of a successful run, with its response (a ``PromptResponse``)."""

    response: ResponseT
