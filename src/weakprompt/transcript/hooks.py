"""The hook registry of one Transcript object, and what an evaluation lends it.

A handler registered with ``transcript.on("tool_result", handler)`` sees
every tool result before it is committed (see :class:`PendingToolResult`).
There is one handler per event: registering another replaces it, which is
how a custom handler overrides ``configure_tool_summarization()``.

Summaries need a model. The registry's own ``summarizer`` wins; otherwise,
while :meth:`ToolResultHooks.evaluation` is active (the evaluation loop
enters it), the evaluation's adapter is used, its budget tracker is charged
and its session dispatcher receives the events. Hooks live in the Python
object, not in the database: another ``Transcript`` of the same session has
its own.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Generator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Literal, TypeAlias

import attrs

from ..budget import BudgetTracker
from ..errors import BudgetExceededError, ConfigurationError, TranscriptError
from ..events import EventBus, publish
from ..messages import Usage
from .summarize import SummaryAttempt, check_target_tokens, request_summary, summarizer_label

if TYPE_CHECKING:
    from ..model import ProviderAdapter
    from ..tokens import TokenCounter
    from .pending import PendingToolResult

__all__ = [
    "HOOK_EVENTS",
    "EvaluationBinding",
    "HookEvent",
    "ToolResultHandler",
    "ToolResultHookError",
    "ToolResultHooks",
    "ToolResultRejected",
]

logger = logging.getLogger(__name__)

HookEvent: TypeAlias = Literal["tool_result"]
HOOK_EVENTS: tuple[HookEvent, ...] = ("tool_result",)

ToolResultHandler: TypeAlias = Callable[["PendingToolResult"], object]
"""Called with each pending tool result; its return value is ignored."""


class ToolResultHookError(TranscriptError):
    """A hook handler used a :class:`PendingToolResult` in a way that cannot work."""


class ToolResultRejected(TranscriptError):
    """A ``tool_result`` hook rejected the result, so nothing was committed.

    ``tool_result()`` raises this instead of returning, because every other
    outcome is a commit; a caller that must still answer the tool call (the
    evaluation loop does) catches it and records a placeholder.
    """

    def __init__(self, tool_call_id: str, tool_name: str, reason: str, triggered_by: str) -> None:
        why = f": {reason}" if reason else ""
        super().__init__(
            f"the tool_result hook ({triggered_by}) rejected the result of call {tool_call_id!r} "
            f"({tool_name}){why}; nothing was committed"
        )
        self.tool_call_id = tool_call_id
        self.tool_name = tool_name
        self.reason = reason
        self.triggered_by = triggered_by


@attrs.frozen
class EvaluationBinding:
    """What a running evaluation lends the hooks: its model, budget and events.

    ``on_usage`` is told every summarizer call's usage, so the evaluation
    can add it to its own totals (the tracker is charged separately).
    """

    adapter: ProviderAdapter
    budget_tracker: BudgetTracker | None = None
    dispatcher: EventBus | None = None
    on_usage: Callable[[Usage], object] | None = None


def handler_name(handler: Callable[..., object]) -> str:
    """``hook:module.qualname`` of a handler, the default ``triggered_by``."""
    module = getattr(handler, "__module__", None)
    qualname = getattr(handler, "__qualname__", None) or type(handler).__qualname__
    return f"hook:{module}.{qualname}" if module else f"hook:{qualname}"


class ToolResultHooks:
    """Handlers per event plus the summarizer, budget and event wiring for summaries."""

    def __init__(self) -> None:
        self._handlers: dict[HookEvent, ToolResultHandler] = {}
        self._summarizer: ProviderAdapter | None = None
        self._dispatcher: EventBus | None = None
        self._budget_tracker: BudgetTracker | None = None
        self._bindings: list[EvaluationBinding] = []
        self._lock = threading.Lock()
        self._firing = threading.local()

    # -- handlers -----------------------------------------------------------------------------------

    def on(self, event: HookEvent, handler: ToolResultHandler) -> None:
        """Register ``handler`` for ``event``, replacing any handler registered before."""
        _check_event(event)
        if not callable(handler):
            raise ConfigurationError(f"a {event!r} hook handler must be callable, got {handler!r}")
        with self._lock:
            self._handlers[event] = handler

    def off(self, event: HookEvent, handler: ToolResultHandler | None = None) -> bool:
        """Remove the handler of ``event`` (only if it is ``handler``, when given); True if removed."""
        _check_event(event)
        with self._lock:
            current = self._handlers.get(event)
            if current is None or (handler is not None and current is not handler):
                return False
            del self._handlers[event]
            return True

    def handler(self, event: HookEvent = "tool_result") -> ToolResultHandler | None:
        """The handler registered for ``event``, if any."""
        _check_event(event)
        with self._lock:
            return self._handlers.get(event)

    def should_fire(self, event: HookEvent) -> bool:
        """A handler is registered and this thread is not already inside one.

        Results committed from inside a handler (or by the hook machinery
        itself) are committed directly, so a handler never re-enters itself.
        """
        return not getattr(self._firing, "active", False) and self.handler(event) is not None

    @contextmanager
    def firing(self) -> Generator[None, None, None]:
        """Mark this thread as running a hook (see :meth:`should_fire`)."""
        previous = getattr(self._firing, "active", False)
        self._firing.active = True
        try:
            yield
        finally:
            self._firing.active = previous

    # -- summarizer wiring --------------------------------------------------------------------------

    @property
    def summarizer(self) -> ProviderAdapter | None:
        """The adapter that writes summaries; None means "the running evaluation's adapter"."""
        return self._summarizer

    @summarizer.setter
    def summarizer(self, adapter: ProviderAdapter | None) -> None:
        _check_adapter(adapter, "summarizer")
        self._summarizer = adapter

    @property
    def dispatcher(self) -> EventBus | None:
        """Where ``ToolResultSummarized`` events go; None means the running evaluation's session."""
        return self._dispatcher

    @dispatcher.setter
    def dispatcher(self, dispatcher: EventBus | None) -> None:
        if dispatcher is not None and not isinstance(dispatcher, EventBus):
            raise ConfigurationError(f"dispatcher must be a weakprompt EventBus, got {dispatcher!r}")
        self._dispatcher = dispatcher

    @property
    def budget_tracker(self) -> BudgetTracker | None:
        """A tracker charged with every summary, besides the running evaluation's own."""
        return self._budget_tracker

    @budget_tracker.setter
    def budget_tracker(self, tracker: BudgetTracker | None) -> None:
        if tracker is not None and not isinstance(tracker, BudgetTracker):
            raise ConfigurationError(f"budget_tracker must be a BudgetTracker, got {tracker!r}")
        self._budget_tracker = tracker

    @contextmanager
    def evaluation(
        self,
        *,
        adapter: ProviderAdapter,
        budget_tracker: BudgetTracker | None = None,
        dispatcher: EventBus | None = None,
        on_usage: Callable[[Usage], object] | None = None,
    ) -> Generator[EvaluationBinding, None, None]:
        """Lend an evaluation's adapter, budget and events to the hooks while it runs.

        Nested evaluations stack; the innermost one is used. Visible from
        every thread, since tools may commit results from worker threads.
        """
        _check_adapter(adapter, "adapter")
        binding = EvaluationBinding(adapter, budget_tracker, dispatcher, on_usage)
        with self._lock:
            self._bindings.append(binding)
        try:
            yield binding
        finally:
            with self._lock:
                self._bindings.remove(binding)

    def current_evaluation(self) -> EvaluationBinding | None:
        with self._lock:
            return self._bindings[-1] if self._bindings else None

    def resolve_summarizer(self, explicit: ProviderAdapter | None = None) -> ProviderAdapter:
        """``explicit``, else the registry's summarizer, else the running evaluation's adapter."""
        if explicit is not None:
            _check_adapter(explicit, "summarizer")
            return explicit
        if self._summarizer is not None:
            return self._summarizer
        binding = self.current_evaluation()
        if binding is not None:
            return binding.adapter
        raise ConfigurationError(
            "no summarizer for tool results: pass summarizer= (to summarize(), "
            "configure_tool_summarization() or compress_tool_calls()), set transcript.hooks.summarizer, "
            "or run inside evaluate(), which lends its adapter"
        )

    def summarize_text(
        self,
        adapter: ProviderAdapter,
        *,
        tool_name: str,
        content: str,
        instructions: str | None,
        target_tokens: int | None,
        token_counter: TokenCounter,
    ) -> SummaryAttempt:
        """One summary, within budget, charged to it; a summary that is not shorter counts as failed.

        No call is made for an empty text or when a budget is exhausted.
        """
        check_target_tokens(target_tokens)
        reason = "the result is empty" if not content.strip() else self._budget_exhausted()
        if reason is not None:
            return SummaryAttempt(
                text=None,
                error=f"not summarized: {reason}",
                usage=Usage(),
                summarizer=summarizer_label(adapter),
            )
        attempt = request_summary(
            adapter,
            tool_name=tool_name,
            content=content,
            instructions=instructions,
            target_tokens=target_tokens,
            token_counter=token_counter,
        )
        self._charge(attempt.usage)
        if attempt.text is not None:
            before, after = token_counter.count(content), token_counter.count(attempt.text)
            if after >= before:
                return attrs.evolve(
                    attempt,
                    text=None,
                    error=f"the summary ({after} tokens) was not shorter than the result ({before} tokens)",
                )
        return attempt

    def _trackers(self) -> list[BudgetTracker]:
        binding = self.current_evaluation()
        found = [self._budget_tracker, None if binding is None else binding.budget_tracker]
        unique: list[BudgetTracker] = []
        for tracker in found:
            if tracker is not None and all(tracker is not seen for seen in unique):
                unique.append(tracker)
        return unique

    def _budget_exhausted(self) -> str | None:
        for tracker in self._trackers():
            try:
                tracker.check()
            except BudgetExceededError as exc:
                return str(exc)
        return None

    def _charge(self, usage: Usage) -> None:
        if usage == Usage():
            return
        for tracker in self._trackers():
            tracker.record(usage)
        binding = self.current_evaluation()
        if binding is not None and binding.on_usage is not None:
            binding.on_usage(usage)

    def publish(self, event: object) -> None:
        """Send ``event`` to the registry's dispatcher, else the running evaluation's, if any."""
        dispatcher = self._dispatcher
        if dispatcher is None:
            binding = self.current_evaluation()
            dispatcher = None if binding is None else binding.dispatcher
        if dispatcher is not None:
            publish(dispatcher, event, logger=logger)


def _check_event(event: str) -> None:
    if event not in HOOK_EVENTS:
        raise ConfigurationError(f"unknown hook event {event!r}; known events: {', '.join(HOOK_EVENTS)}")


def _check_adapter(adapter: object, what: str) -> None:
    if adapter is not None and not callable(getattr(adapter, "complete", None)):
        raise ConfigurationError(
            f"{what} must be a ProviderAdapter (an object with complete(request)), got {adapter!r}"
        )
