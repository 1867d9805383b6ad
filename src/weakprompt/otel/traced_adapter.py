"""An adapter that reports each call made through it as a ``chat`` span.

The runtime hands the tool-result hooks (summaries) and ``tool_output``
(extraction) their adapter through :meth:`RunSpan.traced_adapter`; calls
they make land under the span current at the time: the tool call's.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from ..messages import AssistantTurn
from ..model import ModelEvent, ModelRequest, ProviderAdapter, ReplyCompleted
from ..runtime.tracing import ModelCallPurpose, model_call_scope
from ..tokens import TokenCounter

if TYPE_CHECKING:
    from .tracing import RunSpan

__all__ = ["TracedAdapter"]


class TracedAdapter:
    """``inner``, with each call reported to ``run`` as a model call made for ``purpose``."""

    def __init__(self, inner: ProviderAdapter, run: RunSpan, purpose: ModelCallPurpose) -> None:
        self.inner = inner
        self._run = run
        self.purpose: ModelCallPurpose = purpose

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def model(self) -> str:
        return self.inner.model

    @property
    def context_window(self) -> int | None:
        return self.inner.context_window

    @property
    def token_counter(self) -> TokenCounter | None:
        return self.inner.token_counter

    def complete(self, request: ModelRequest) -> AssistantTurn:
        span = self._run.nested_model_call(request, self.inner, self.purpose)
        if span is None:
            return self.inner.complete(request)
        try:
            with span.activated(), model_call_scope(span):
                reply = self.inner.complete(request)
        except BaseException as exc:
            span.fail(exc)
            raise
        span.finish(reply, reply.usage)
        return reply

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        span = self._run.nested_model_call(request, self.inner, self.purpose)
        events = self.inner.stream(request)
        if span is None:
            async for event in events:
                yield event
            return
        reply: AssistantTurn | None = None
        failure: BaseException | None = None
        try:
            async for event in events:
                if isinstance(event, ReplyCompleted):
                    reply = event.turn
                yield event
        except BaseException as exc:
            failure = exc
            raise
        finally:
            if reply is not None:
                span.finish(reply, reply.usage)
            else:
                span.fail(failure if failure is not None else GeneratorExit())
