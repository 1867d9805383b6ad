"""The contract between the one evaluation loop and every provider adapter.

An adapter translates a :class:`ModelRequest` into its provider's request and
the reply back into a neutral :class:`AssistantTurn`. Nothing else: adapters
never run tools, loop, or touch the transcript. The protocol sits in the core
layer so that everything that needs a model (the loop, tool-result summaries,
extraction, a tool handler) is handed one instead of importing an adapter.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from ..messages import AssistantTurn
from ..tokens import TokenCounter
from .request import ModelRequest

__all__ = ["ProviderAdapter"]


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
