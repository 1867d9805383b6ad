"""Events about provider calls themselves: a retry after a transient failure, a switch to a fallback.

Adapters publish them on the run's event bus (``ModelRequest.bus``)
while a model call is still in progress, so a subscriber (a log, a trace, the
CLI) sees why a call is slow or which model ended up answering.
"""

from __future__ import annotations

import attrs

__all__ = ["AdapterFellBack", "ModelCallRetried"]


@attrs.frozen(kw_only=True)
class ModelCallRetried:
    """A model call failed transiently and will be tried again after ``wait_seconds``.

    ``attempt`` is the number of the attempt that failed (1 for the first);
    ``retry_after`` is the wait the provider asked for, when it asked.
    """

    provider: str
    model: str
    attempt: int
    wait_seconds: float
    error_type: str
    error: str
    status_code: int | None = None
    retry_after: float | None = None


@attrs.frozen(kw_only=True)
class AdapterFellBack:
    """A ``FallbackAdapter`` gave up on one adapter for this call and moves to the next."""

    from_adapter: str
    from_model: str
    to_adapter: str
    to_model: str
    error_type: str
    error: str
