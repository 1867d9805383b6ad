"""The contract between the one evaluation loop and every provider adapter.

An adapter translates a :class:`ModelRequest` into its provider's request and
the reply back into a neutral :class:`AssistantTurn`. Nothing else: adapters
never run tools, loop, or touch the transcript.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, Protocol, TypeAlias, runtime_checkable

import attrs

from ..jsontypes import JSONObject
from ..messages import AssistantTurn
from ..tokens import TokenCounter
from ..tools import AnyTool

if TYPE_CHECKING:  # the transcript package is only needed to type the field
    from ..transcript.compiled import CompiledContext

__all__ = ["ForceTool", "ModelRequest", "ProviderAdapter", "ToolChoice"]


@attrs.frozen
class ForceTool:
    """Force the model to call this one tool on this turn."""

    name: str


ToolChoice: TypeAlias = Literal["auto", "required", "none"] | ForceTool


@attrs.frozen
class ModelRequest:
    """Everything an adapter needs for one model call."""

    context: CompiledContext
    tools: tuple[AnyTool, ...] = ()
    tool_choice: ToolChoice = "auto"
    output_schema: JSONObject | None = None
    output_name: str | None = None
    max_output_tokens: int | None = None


@runtime_checkable
class ProviderAdapter(Protocol):
    """A model provider seen through one method."""

    @property
    def name(self) -> str:
        """Provider name as it appears in events ("openai", "local", ...)."""
        ...

    @property
    def model(self) -> str: ...

    @property
    def context_window(self) -> int | None:
        """Model context size in tokens, when known (used to size extraction chunks)."""
        ...

    @property
    def token_counter(self) -> TokenCounter | None:
        """Exact counter for this model when one exists locally."""
        ...

    def complete(self, request: ModelRequest) -> AssistantTurn: ...
