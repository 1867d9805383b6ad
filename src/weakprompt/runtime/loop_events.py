"""Events the evaluation loop publishes besides the core ``PromptRendered``/``PromptExecuted``.

They let a caller follow an evaluation as it happens (the CLI prints from
them) without wrapping the adapter: one event per model reply, one per tool
result committed, one per section expansion, one per rejected structured
answer.
"""

from __future__ import annotations

from datetime import datetime

import attrs

from ..events import new_event_id
from ..messages import FinishReason, ToolCall, Usage

__all__ = ["ModelTurnCompleted", "OutputRejected", "SectionsExpanded", "ToolResultCommitted"]


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
class ToolResultCommitted:
    """A tool call's result, exactly as the model will read it, is in the transcript.

    Unlike ``ToolInvoked`` (published by the dispatcher for every execution)
    this also covers ``open_sections`` requests, which the loop answers itself.
    """

    prompt_name: str
    turn: int
    call: ToolCall
    content: str
    is_error: bool
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
