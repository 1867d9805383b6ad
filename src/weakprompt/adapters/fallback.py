"""``FallbackAdapter``: several adapters in order, the next one answering when the current one fails.

Each adapter keeps its own retries; the fallback moves on only once an
adapter has given up with an error the user's ``fall_back_on`` accepts (by
default: a transient failure its retries could not get past, any 5xx, and a
request the provider or adapter does not support). A streamed reply can
switch only before its first text, tool call or completion (usage reports
before that are held back, see :func:`~weakprompt.adapters.retries.opening`):
once text has reached the loop, a failure ends the call.

Which adapter answered is part of the reply: ``AssistantTurn.metadata["adapter"]``
(name, model, position, and the adapters that failed before it, with their
errors), which the loop keeps in the assistant commit's metadata. Each
switch is published as :class:`~weakprompt.events.AdapterFellBack` on the
run's event bus.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Sequence

import attrs

from ..errors import AdapterError, ConfigurationError
from ..events import AdapterFellBack, publish
from ..jsontypes import JSONObject, JSONValue
from ..messages import AssistantTurn
from ..model import ModelEvent, ModelRequest, ProviderAdapter, ReplyCompleted
from ..tokens import TokenCounter
from .error_mapping import classified_status
from .output_modes import UnsupportedOutputModeError, is_format_refusal
from .retries import is_transient, opening

__all__ = ["FallbackAdapter", "default_fall_back_on"]

logger = logging.getLogger(__name__)

FallBackOn = Callable[[Exception], bool]


def default_fall_back_on(error: Exception) -> bool:
    """Move to the next adapter after exhausted retries, a 5xx, or something not supported."""
    if isinstance(error, UnsupportedOutputModeError):
        return True
    if not isinstance(error, AdapterError):
        return False
    status = classified_status(error)  # an in-stream error counts as the status its type stands for
    return is_transient(error) or (status is not None and status >= 500) or is_format_refusal(error)


@attrs.frozen
class _Failure:
    adapter: str
    model: str
    error: Exception

    def record(self) -> JSONObject:
        return {
            "name": self.adapter,
            "model": self.model,
            "error": f"{type(self.error).__name__}: {self.error}",
        }


class FallbackAdapter:
    """A :class:`~weakprompt.model.ProviderAdapter` that tries ``adapters`` in order, per model call."""

    def __init__(
        self,
        adapters: Sequence[ProviderAdapter],
        *,
        fall_back_on: FallBackOn = default_fall_back_on,
        name: str = "fallback",
    ) -> None:
        adapters = tuple(adapters)
        if not adapters:
            raise ConfigurationError("FallbackAdapter needs at least one adapter")
        for position, adapter in enumerate(adapters):
            if not isinstance(adapter, ProviderAdapter):
                raise ConfigurationError(
                    f"FallbackAdapter: adapter #{position} is a {type(adapter).__name__}, "
                    "not a ProviderAdapter"
                )
        self.adapters = adapters
        self._fall_back_on = fall_back_on
        self._name = name

    @property
    def name(self) -> str:
        return self._name

    @property
    def model(self) -> str:
        """The first adapter's model (the one that answers when all is well)."""
        return self.adapters[0].model

    @property
    def context_window(self) -> int | None:
        """The smallest known window: a context that fits it fits every adapter that states one."""
        windows = [a.context_window for a in self.adapters if a.context_window is not None]
        return min(windows) if windows else None

    @property
    def token_counter(self) -> TokenCounter | None:
        return self.adapters[0].token_counter

    def complete(self, request: ModelRequest) -> AssistantTurn:
        failures: list[_Failure] = []
        for position, adapter in enumerate(self.adapters):
            try:
                turn = adapter.complete(request)
            except Exception as exc:
                self._give_up_or_switch(request, position, exc, failures)
                continue
            return _answered_by(turn, adapter, position, failures)
        raise AssertionError("unreachable: the last adapter's error is raised")  # pragma: no cover

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        failures: list[_Failure] = []
        for position, adapter in enumerate(self.adapters):
            events = adapter.stream(request)
            try:
                try:
                    held = await opening(events)
                except Exception as exc:  # nothing of this reply has reached the caller yet
                    self._give_up_or_switch(request, position, exc, failures)
                    continue
                for event in held:
                    yield _answered_event(event, adapter, position, failures)
                async for event in events:
                    yield _answered_event(event, adapter, position, failures)
            finally:
                aclose = getattr(events, "aclose", None)
                if aclose is not None:
                    await aclose()
            return

    def _give_up_or_switch(
        self, request: ModelRequest, position: int, error: Exception, failures: list[_Failure]
    ) -> None:
        """Re-raise ``error`` unless it is one to fall back on with an adapter left; else note the switch."""
        adapter = self.adapters[position]
        last = position + 1 >= len(self.adapters)
        if last or not self._fall_back_on(error):
            if failures:
                tried = ", ".join(f"{f.adapter} ({type(f.error).__name__})" for f in failures)
                error.add_note(f"{self._name}: the adapters before {adapter.name} failed too: {tried}")
            raise error
        failures.append(_Failure(adapter.name, adapter.model, error))
        following = self.adapters[position + 1]
        logger.warning("%s: %s failed (%s); trying %s", self._name, adapter.name, error, following.name)
        if request.bus is not None:
            event = AdapterFellBack(
                from_adapter=adapter.name,
                from_model=adapter.model,
                to_adapter=following.name,
                to_model=following.model,
                error_type=type(error).__name__,
                error=str(error),
            )
            publish(request.bus, event, logger=logger, about="an adapter fallback")


def _answered_event(
    event: ModelEvent, adapter: ProviderAdapter, position: int, failures: Sequence[_Failure]
) -> ModelEvent:
    if isinstance(event, ReplyCompleted):
        return ReplyCompleted(_answered_by(event.turn, adapter, position, failures))
    return event


def _answered_by(
    turn: AssistantTurn, adapter: ProviderAdapter, position: int, failures: Sequence[_Failure]
) -> AssistantTurn:
    """``turn`` with the record of who answered it in its metadata."""
    record: JSONObject = {
        "name": adapter.name,
        "model": adapter.model,
        "position": position,
        "fell_back_from": list[JSONValue]([f.record() for f in failures]),
    }
    return attrs.evolve(turn, metadata={**turn.metadata, "adapter": record})
