"""The contract between the one evaluation loop and every provider adapter.

An adapter translates a :class:`ModelRequest` into its provider's request and
the reply back into a neutral :class:`AssistantTurn`, either whole
(``complete``) or as it arrives (``stream``, a stream of neutral events that
ends with the same turn). Nothing else: adapters
never run tools, loop, or touch the transcript. The protocol sits in the core
layer so that everything that needs a model (the loop, tool-result summaries,
extraction, a tool handler) is handed one instead of importing an adapter.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol, runtime_checkable

from ..messages import AssistantTurn
from ..tokens import TokenCounter
from .request import ModelRequest
from .stream import ModelEvent

__all__ = ["ProviderAdapter", "WholeReplyAdapter"]


@runtime_checkable
class ProviderAdapter(Protocol):
    """A model provider seen through two methods: one reply whole, or streamed."""

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

    def complete(self, request: ModelRequest) -> AssistantTurn:
        """The whole reply, blocking until it is there."""
        ...

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """The reply as it arrives (an async generator), ending with exactly one ``ReplyCompleted``.

        Its turn equals what ``complete`` returns for the same reply; see
        :mod:`weakprompt.model.stream` for the rules.
        """
        ...


@runtime_checkable
class WholeReplyAdapter(Protocol):
    """An adapter that can also give a reply whole without blocking: ``complete``, awaited.

    Optional. When nobody listens to a run's stream events, the loop asks
    for the reply whole this way instead of folding a stream of events, as
    the peers' non-streaming calls do. The turn must equal what ``stream``
    completes with.
    """

    async def complete_async(self, request: ModelRequest) -> AssistantTurn:
        """The whole reply, awaited."""
        ...
