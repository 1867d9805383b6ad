"""An adapter wrapper that counts, limits and records every extraction model call.

Extraction runs inside a tool call, outside the evaluation loop's own
accounting, so it charges its calls itself: each reply's usage goes into the
evaluation's budget tracker as it happens, and the total is reported on the
extraction result. A deadline or an exhausted budget stops the next call.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import attrs

from ....messages import AssistantTurn, Usage
from ....model import ModelEvent, ReplyCompleted, UsageReported

if TYPE_CHECKING:
    from ....budget import BudgetTracker
    from ....deadlines import Deadline
    from ....model import ModelRequest, ProviderAdapter
    from ....tokens import TokenCounter

__all__ = ["MeteredAdapter"]

_ONE_CALL = Usage(model_calls=1)


class MeteredAdapter:
    """Delegates to ``adapter``; checks limits before and records usage after each call.

    A reply that reports no model call is counted as one, as the evaluation
    loop does, and is passed on with that corrected usage so a loop that
    sees it does not count it again.
    """

    def __init__(
        self,
        adapter: ProviderAdapter,
        *,
        budget_tracker: BudgetTracker | None = None,
        deadline: Deadline | None = None,
    ) -> None:
        self._adapter = adapter
        self._tracker = budget_tracker
        self._deadline = deadline
        self._usage = Usage()
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return self._adapter.name

    @property
    def model(self) -> str:
        return self._adapter.model

    @property
    def context_window(self) -> int | None:
        return self._adapter.context_window

    @property
    def token_counter(self) -> TokenCounter | None:
        return self._adapter.token_counter

    @property
    def usage(self) -> Usage:
        """Everything spent through this wrapper so far."""
        return self._usage

    def complete(self, request: ModelRequest) -> AssistantTurn:
        if self._deadline is not None:
            self._deadline.check()
        if self._tracker is not None:
            self._tracker.check()
        reply = self._adapter.complete(request)
        usage = reply.usage
        if usage.model_calls == 0:
            usage = usage + _ONE_CALL
            reply = attrs.evolve(reply, usage=usage)
        with self._lock:
            self._usage = self._usage + usage
        if self._tracker is not None:
            self._tracker.record(usage)
        return reply

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """The same checks and accounting around a streamed call."""
        if self._deadline is not None:
            self._deadline.check()
        if self._tracker is not None:
            self._tracker.check()
        async for event in self._adapter.stream(request):
            if isinstance(event, UsageReported) and event.usage.model_calls == 0:
                yield UsageReported(event.usage + _ONE_CALL)
            elif isinstance(event, ReplyCompleted):
                usage = event.turn.usage
                counted = event
                if usage.model_calls == 0:
                    usage = usage + _ONE_CALL
                    counted = ReplyCompleted(attrs.evolve(event.turn, usage=usage))
                with self._lock:
                    self._usage = self._usage + usage
                if self._tracker is not None:
                    self._tracker.record(usage)
                yield counted
            else:
                yield event
