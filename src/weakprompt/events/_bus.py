"""The in-process, synchronous event bus.

Handlers run in subscription order on the dispatching thread. A handler that
raises never stops the others: its exception is collected on the
:class:`DispatchResult`, so the publisher decides whether a failure matters
instead of a telemetry bug silently aborting real work.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar, cast

import attrs

from ..errors import WeakpromptError

__all__ = [
    "DispatchResult",
    "EventBus",
    "EventHandler",
    "EventHandlerError",
    "HandlerFailure",
]

E = TypeVar("E")

EventHandler = Callable[[E], object]
"""A subscriber: called with each matching event; its return value is ignored."""


@attrs.frozen
class HandlerFailure:
    """One handler raised while an event was dispatched."""

    handler: str
    exception: Exception


class EventHandlerError(WeakpromptError):
    """Raised by :meth:`DispatchResult.raise_if_errors`; wraps every failure.

    The first handler's exception is chained as ``__cause__``; all of them
    are on ``failures``.
    """

    def __init__(self, event: object, failures: tuple[HandlerFailure, ...]) -> None:
        details = "; ".join(f"{f.handler}: {type(f.exception).__name__}: {f.exception}" for f in failures)
        super().__init__(f"{len(failures)} handler(s) failed on {type(event).__name__}: {details}")
        self.event = event
        self.failures = failures


@attrs.frozen
class DispatchResult:
    """What happened when one event was dispatched."""

    event: object
    handlers_invoked: int
    errors: tuple[HandlerFailure, ...] = ()

    @property
    def ok(self) -> bool:
        """True when every handler returned normally."""
        return not self.errors

    def raise_if_errors(self) -> None:
        """Raise :class:`EventHandlerError` if any handler failed."""
        if self.errors:
            raise EventHandlerError(self.event, self.errors) from self.errors[0].exception


@attrs.frozen
class _Subscription:
    event_type: type[object]
    handler: Callable[[object], object]
    name: str


def _handler_name(handler: Callable[..., object]) -> str:
    name = getattr(handler, "__qualname__", None)
    return name if isinstance(name, str) else repr(handler)


class EventBus:
    """Routes events to the handlers subscribed to their type.

    (Not the tool dispatcher, ``runtime.ToolDispatcher``, which runs tool calls.)

    A handler subscribed to a class also receives instances of its
    subclasses; :meth:`subscribe_all` (the same as subscribing to
    ``object``) receives every event. Subscribing the same handler to the
    same type twice has no effect, so a handler is never called twice for
    one event. Safe to use from several threads; handlers run outside the
    internal lock and may themselves subscribe or dispatch.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._subscriptions: tuple[_Subscription, ...] = ()
        # Per concrete event type: the matching subscriptions in order. Rebuilt
        # lazily after every (un)subscribe, so dispatch is a dict lookup.
        self._routes: dict[type[object], tuple[_Subscription, ...]] = {}

    def subscribe(self, event_type: type[E], handler: EventHandler[E], *, name: str | None = None) -> None:
        """Call ``handler`` for every dispatched instance of ``event_type``.

        ``name`` labels the handler in :class:`HandlerFailure`; it defaults to
        the handler's qualified name.
        """
        if not isinstance(event_type, type):
            raise TypeError(f"subscribe: event_type must be a class, got {event_type!r}")
        if not callable(handler):
            raise TypeError(f"subscribe: handler for {event_type.__name__} is not callable: {handler!r}")
        sub = _Subscription(
            event_type=cast("type[object]", event_type),
            handler=cast("Callable[[object], object]", handler),
            name=name or _handler_name(handler),
        )
        with self._lock:
            if any(s.event_type is sub.event_type and s.handler == handler for s in self._subscriptions):
                return
            self._subscriptions = (*self._subscriptions, sub)
            self._routes = {}

    def subscribe_all(self, handler: EventHandler[object], *, name: str | None = None) -> None:
        """Call ``handler`` for every event; undo with ``unsubscribe(object, handler)``."""
        self.subscribe(object, handler, name=name)

    def unsubscribe(self, event_type: type[E], handler: EventHandler[E]) -> bool:
        """Remove a subscription; returns whether it existed."""
        with self._lock:
            kept = tuple(
                s for s in self._subscriptions if not (s.event_type is event_type and s.handler == handler)
            )
            removed = len(kept) != len(self._subscriptions)
            if removed:
                self._subscriptions = kept
                self._routes = {}
            return removed

    def handler_count(self, event_type: type[object] | None = None) -> int:
        """How many handlers an event of ``event_type`` would reach (all when None)."""
        if event_type is None:
            return len(self._subscriptions)
        return len(self._route(event_type))

    def wants(self, event_type: type[object]) -> bool:
        """Whether an event of ``event_type`` would reach any handler now.

        A publisher whose event costs something to build (a record per
        turn, a timestamp, an id) asks first and builds nothing when no one
        listens.
        """
        return bool(self._route(event_type))

    def dispatch(self, event: object) -> DispatchResult:
        """Deliver ``event`` to every matching handler and report the outcome."""
        subs = self._route(type(event))
        errors: list[HandlerFailure] = []
        for sub in subs:
            try:
                sub.handler(event)
            except Exception as exc:  # collected, never lost: see DispatchResult
                errors.append(HandlerFailure(handler=sub.name, exception=exc))
        return DispatchResult(event=event, handlers_invoked=len(subs), errors=tuple(errors))

    def _route(self, event_type: type[object]) -> tuple[_Subscription, ...]:
        routes = self._routes
        found = routes.get(event_type)
        if found is not None:
            return found
        with self._lock:
            found = tuple(s for s in self._subscriptions if issubclass(event_type, s.event_type))
            self._routes[event_type] = found
            return found
