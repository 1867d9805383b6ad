"""Publishing an event where a failing subscriber must never stop the work that produced it."""

from __future__ import annotations

import logging

from ._bus import DispatchResult, EventBus

__all__ = ["publish"]

_LOGGER = logging.getLogger("weakprompt.events")


def publish(
    bus: EventBus, event: object, *, logger: logging.Logger | None = None, about: str = ""
) -> DispatchResult:
    """Dispatch ``event`` and log every subscriber that raised; never raises itself.

    ``logger`` is the publisher's own (so the log says who published),
    ``about`` a few words naming the subject ("for call c1"). The result is
    returned for a publisher that also reports the failures elsewhere.
    """
    outcome = bus.dispatch(event)
    if outcome.errors:
        log = logger or _LOGGER
        suffix = f" {about}" if about else ""
        for failure in outcome.errors:
            log.error(
                "subscriber %s raised on %s%s",
                failure.handler,
                type(event).__name__,
                suffix,
                exc_info=failure.exception,
            )
    return outcome
