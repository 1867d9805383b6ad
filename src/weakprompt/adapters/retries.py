"""Retrying a model call on transient failures: exponential backoff with jitter, ``retry-after`` honoured.

The SDK adapters turn their SDK's own retries off (``max_retries=0`` on the
clients) and retry here instead, so the two never multiply, every retry is
published as a :class:`~weakprompt.events.ModelCallRetried` event, and the
waits count against the run's deadline: a wait that would end past the
deadline is not started (the run stops with ``DeadlineExceededError``).

Only a failure *before* the reply started is retried: usage reports are
held back until the first text, tool call or completion (:func:`opening`),
so an error that comes before any of those (an overloaded provider answers
200, reports usage, then sends an error event) is retried, and the failed
attempt's usage reports are dropped with it. Once text or a tool call has
reached the caller, a failure ends the call: the caller has seen part of a
reply, and a second reply would not continue it. The policy is tenacity's (the
engine under stamina), because it lets the sleep and the clock be injected:
tests move a fake clock instead of sleeping.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TypeVar

import attrs
import tenacity

from ..errors import (
    AdapterError,
    ConfigurationError,
    DeadlineExceededError,
    ProviderConnectionError,
    RateLimitError,
)
from ..events import ModelCallRetried, publish
from ..model import ModelEvent, ModelRequest, UsageReported
from ..runtime.tracing import report_retry
from .error_mapping import classified_status
from .output_modes import is_format_refusal

__all__ = ["DEFAULT_RETRIES", "NO_RETRIES", "RetryPolicy", "Retrier", "is_transient", "opening"]

logger = logging.getLogger(__name__)

_T = TypeVar("_T")
# Request timeout, conflict (a lock), rate limit, and every server-side failure incl. 529 overloaded.
_TRANSIENT_STATUSES = frozenset({408, 409, 429})


def is_transient(error: AdapterError) -> bool:
    """Worth trying again: a rate limit, overload, a 5xx, a timeout or a connection that failed.

    An error sent inside a stream counts as the status its type stands for
    (``overloaded_error`` as 529). A server refusing the output format is not
    transient (``auto`` changes the mode instead), nor is anything else about
    the request itself.
    """
    if isinstance(error, RateLimitError | ProviderConnectionError):
        return True
    status = classified_status(error)
    if status is None:
        return False
    return (status in _TRANSIENT_STATUSES or status >= 500) and not is_format_refusal(error)


async def opening(events: AsyncIterator[ModelEvent]) -> list[ModelEvent]:
    """The events up to the first one a caller acts on (text, a tool call, the completion), that one included.

    Usage reports before it are held with it: until then nothing of the reply
    has been seen, and a failure may still be retried or handed to another
    adapter. Empty when the stream ended without any event.
    """
    held: list[ModelEvent] = []
    async for event in events:
        held.append(event)
        if not isinstance(event, UsageReported):
            break
    return held


def _positive(_: object, attribute: attrs.Attribute[float], value: float) -> None:
    if not value >= 0:
        raise ValueError(f"RetryPolicy.{attribute.name} must be >= 0, got {value!r}")


def _at_least_one(_: object, attribute: attrs.Attribute[int], value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"RetryPolicy.{attribute.name} must be an int >= 1, got {value!r}")


@attrs.frozen(kw_only=True)
class RetryPolicy:
    """How often and how patiently a model call is retried.

    ``attempts`` counts the first try. Attempt ``n`` failing waits
    ``min(max_wait, initial_wait * exp_base ** (n - 1) + uniform(0, jitter))``
    seconds, or what the provider's ``retry-after`` asked for, up to
    ``max_retry_after`` (a longer wait is not waited: the error is raised).
    """

    attempts: int = attrs.field(default=3, validator=_at_least_one)
    initial_wait: float = attrs.field(default=0.5, validator=_positive)
    max_wait: float = attrs.field(default=30.0, validator=_positive)
    exp_base: float = attrs.field(default=2.0, validator=_positive)
    jitter: float = attrs.field(default=1.0, validator=_positive)
    max_retry_after: float = attrs.field(default=120.0, validator=_positive)

    @classmethod
    def with_retries(cls, retries: int) -> RetryPolicy:
        """The default policy with ``retries`` retries after the first attempt."""
        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
            raise ValueError(f"retries must be an int >= 0, got {retries!r}")
        return cls(attempts=retries + 1)

    def backoff(self, attempt: int, draw: Callable[[float, float], float] = random.uniform) -> float:
        """The wait after attempt number ``attempt`` failed, without a ``retry-after``."""
        jitter = draw(0.0, self.jitter) if self.jitter else 0.0
        try:
            return min(self.max_wait, self.initial_wait * self.exp_base ** (attempt - 1) + jitter)
        except OverflowError:
            return self.max_wait


DEFAULT_RETRIES = RetryPolicy()
NO_RETRIES = RetryPolicy(attempts=1)


class Retrier:
    """Runs one model call under a :class:`RetryPolicy`, on an injectable sleep."""

    def __init__(
        self,
        policy: RetryPolicy,
        *,
        provider: str,
        model: str,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        sync_sleep: Callable[[float], None] = time.sleep,
        draw: Callable[[float, float], float] = random.uniform,
    ) -> None:
        self.policy = policy
        self._provider = provider
        self._model = model
        self._sleep = sleep
        self._sync_sleep = sync_sleep
        self._draw = draw

    async def stream(
        self, request: ModelRequest, open_stream: Callable[[ModelRequest], AsyncIterator[ModelEvent]]
    ) -> AsyncIterator[ModelEvent]:
        """``open_stream(request)``, opened again after a transient failure before its :func:`opening`."""
        cut = _Cut()
        retry, wait, stop, before_sleep = self._hooks(request, cut)
        retrying = tenacity.AsyncRetrying(
            sleep=self._sleep, retry=retry, wait=wait, stop=stop, before_sleep=before_sleep, reraise=True
        )
        events: AsyncIterator[ModelEvent] | None = None
        held: list[ModelEvent] = []
        try:
            async for attempt in retrying:
                with attempt:
                    events = open_stream(request)
                    held = await opening(events)
        except AdapterError as exc:
            final = self._final(exc, cut, request)
            if final is exc:
                raise
            raise final from exc
        assert events is not None  # tenacity made at least one attempt
        for event in held:
            yield event
        async for event in events:
            yield event

    def complete(self, request: ModelRequest, call: Callable[[ModelRequest], _T]) -> _T:
        """``call(request)``, called again after a transient failure."""
        cut = _Cut()
        retry, wait, stop, before_sleep = self._hooks(request, cut)
        retrying = tenacity.Retrying(
            sleep=self._sync_sleep, retry=retry, wait=wait, stop=stop, before_sleep=before_sleep, reraise=True
        )
        try:
            return retrying(call, request)
        except AdapterError as exc:
            final = self._final(exc, cut, request)
            if final is exc:
                raise
            raise final from exc

    # -- tenacity wiring ------------------------------------------------------------------------

    def _hooks(
        self, request: ModelRequest, cut: _Cut
    ) -> tuple[
        tenacity.retry_base,
        Callable[[tenacity.RetryCallState], float],
        Callable[[tenacity.RetryCallState], bool],
        Callable[[tenacity.RetryCallState], None],
    ]:
        policy = self.policy

        def wait(state: tenacity.RetryCallState) -> float:
            error = _error(state)
            if error is not None and error.retry_after is not None:
                return error.retry_after
            return policy.backoff(state.attempt_number, self._draw)

        def stop(state: tenacity.RetryCallState) -> bool:
            error = _error(state)
            if error is not None:
                error.attempts = state.attempt_number
            if state.attempt_number >= policy.attempts:
                return True
            if (
                error is not None
                and error.retry_after is not None
                and error.retry_after > policy.max_retry_after
            ):
                cut.reason = (
                    f"the provider asked to wait {error.retry_after:g}s "
                    f"(max_retry_after={policy.max_retry_after:g}s)"
                )
                return True
            deadline = request.deadline
            if deadline is not None and deadline.remaining().total_seconds() < state.upcoming_sleep:
                cut.deadline = True
                return True
            return False

        def before_sleep(state: tenacity.RetryCallState) -> None:
            error = _error(state)
            assert error is not None
            logger.info(
                "%s: attempt %d failed (%s); retrying in %.3fs",
                self._provider,
                state.attempt_number,
                error,
                state.upcoming_sleep,
            )
            report_retry(state.attempt_number, error, state.upcoming_sleep)  # a span event when traced
            if request.bus is not None:
                event = ModelCallRetried(
                    provider=self._provider,
                    model=self._model,
                    attempt=state.attempt_number,
                    wait_seconds=state.upcoming_sleep,
                    error_type=type(error).__name__,
                    error=str(error),
                    status_code=error.status_code,
                    retry_after=error.retry_after,
                )
                publish(request.bus, event, logger=logger, about="a model call retry")

        retry = tenacity.retry_if_exception(lambda exc: isinstance(exc, AdapterError) and is_transient(exc))
        return retry, wait, stop, before_sleep

    def _final(self, error: AdapterError, cut: _Cut, request: ModelRequest) -> Exception:
        """The error to raise once retrying stops, with a note saying why it stopped."""
        if cut.deadline:
            assert request.deadline is not None
            return DeadlineExceededError(
                f"{self._provider}: no retry after attempt {error.attempts} "
                f"({type(error).__name__}: {error}): the deadline "
                f"{request.deadline.expires_at.isoformat()} would pass during the wait"
            )
        if cut.reason:
            error.add_note(f"{self._provider}: not retried: {cut.reason}")
        elif error.attempts > 1:
            error.add_note(f"{self._provider}: gave up after {error.attempts} attempts")
        return error


@attrs.define
class _Cut:
    """Why retrying stopped early, when it did."""

    deadline: bool = False
    reason: str = ""


def _error(state: tenacity.RetryCallState) -> AdapterError | None:
    outcome = state.outcome
    if outcome is None or not outcome.failed:  # pragma: no cover - tenacity asks only after a failure
        return None
    exc = outcome.exception()
    return exc if isinstance(exc, AdapterError) else None


RetrySetting = RetryPolicy | Retrier | int | None
"""What an adapter's ``retries=`` takes: a policy, a ready retrier, a number of retries, or None."""


def adapter_retrier(
    adapter: str,
    *,
    provider: str,
    model: str,
    retries: RetrySetting,
    max_retries: int | None,
    client_retries: int | None,
) -> Retrier:
    """The retrier an SDK adapter uses: from ``retries``, else ``max_retries``, else the given client's own.

    ``max_retries`` is the older spelling of ``retries=<int>``; giving both
    is refused. A ready client's ``max_retries`` becomes the policy (its SDK
    retries are then turned off), so the client's setting still holds.
    """
    if retries is not None and max_retries is not None:
        raise ConfigurationError(f"{adapter}: pass retries= or max_retries=, not both")
    if isinstance(retries, Retrier):
        return retries
    if retries is None:
        retries = max_retries if max_retries is not None else client_retries
    try:
        policy = (
            DEFAULT_RETRIES
            if retries is None
            else retries
            if isinstance(retries, RetryPolicy)
            else RetryPolicy.with_retries(retries)
        )
    except ValueError as exc:
        raise ConfigurationError(f"{adapter}: {exc}") from exc
    return Retrier(policy, provider=provider, model=model)
