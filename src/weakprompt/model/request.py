"""One model call as the loop asks for it: the context, the tools on offer, the tool choice."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Literal, TypeAlias

import attrs

from ..jsontypes import JSONObject
from ..model_settings import ModelSettings
from ..tools import AnyTool
from .context import CompiledContext
from .output_mode import OutputMode

if TYPE_CHECKING:
    from ..deadlines import Deadline
    from ..events import EventBus

__all__ = ["TURN_CONTEXT_KEY", "CacheHints", "ForceTool", "ModelRequest", "ToolChoice"]

TURN_CONTEXT_KEY = "turn_context"
"""Metadata key of the turn sections' text (``specs/CACHING.md``).

``True`` on the trailing user message the loop appends to a request (after
the last conversation message; never a commit of the transcript); the
text itself on the assistant commit that request produced.
"""


@attrs.frozen
class CacheHints:
    """Where a request's cacheable prefix ends, for adapters that mark it (``specs/CACHING.md``).

    ``key`` names the template version (``RenderedPrompt.cache_key``);
    ``stable_system_chars`` is how many leading characters of the first
    system message are the same in every session of that version.
    """

    key: str
    stable_system_chars: int | None = None


@attrs.frozen
class ForceTool:
    """Force the model to call this one tool on this turn."""

    name: str


ToolChoice: TypeAlias = Literal["auto", "required", "none"] | ForceTool


@attrs.frozen
class ModelRequest:
    """Everything an adapter needs for one model call.

    ``output_mode`` says how to ask for a structured answer (``None``: the
    adapter's configured mode). ``settings`` are the prompt's and the run's
    model settings, merged (the adapter puts them over its own defaults;
    ``max_output_tokens`` is the one the loop resolved). ``deadline`` bounds
    the adapter's own retries, and ``bus`` (an event bus) receives what it
    reports about the call (retries, a fallback); the loop sets both from the run.
    """

    context: CompiledContext
    tools: tuple[AnyTool, ...] = ()
    tool_choice: ToolChoice = "auto"
    output_schema: JSONObject | None = None
    output_name: str | None = None
    max_output_tokens: int | None = None
    output_mode: OutputMode | None = None
    settings: ModelSettings = attrs.field(factory=ModelSettings)
    cache: CacheHints | None = None
    """Where the cacheable prefix ends (set by the loop from the rendered prompt)."""
    deadline: Deadline | None = attrs.field(default=None, eq=False, repr=False)
    bus: EventBus | None = attrs.field(default=None, eq=False, repr=False)

    @property
    def dispatcher(self) -> EventBus | None:
        """Deprecated: the event bus's old name; use :attr:`bus` ("dispatcher" is the tool dispatcher)."""
        warnings.warn(
            "ModelRequest.dispatcher is deprecated and will be removed in the next release; "
            "use ModelRequest.bus",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.bus
