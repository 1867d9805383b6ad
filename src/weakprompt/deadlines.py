"""Deadlines: a point in time after which an evaluation must stop.

A deadline is a value (the expiry instant) plus the clock that judges it, so
tests move time with a ``FakeClock`` instead of sleeping.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta

import attrs

from .clock import SYSTEM_CLOCK, Clock
from .errors import DeadlineExceededError

__all__ = ["Deadline"]

_ZERO = timedelta(0)


def _aware(_: object, attribute: attrs.Attribute[datetime], value: datetime) -> None:
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(
            f"Deadline.{attribute.name} must be timezone-aware (clocks return UTC), got naive {value!r}"
        )


@attrs.frozen
class Deadline:
    """An absolute expiry time judged by an injectable clock."""

    expires_at: datetime = attrs.field(validator=_aware)
    clock: Clock = attrs.field(default=SYSTEM_CLOCK, eq=False, repr=False, kw_only=True)

    @classmethod
    def after(cls, seconds: float, *, clock: Clock = SYSTEM_CLOCK) -> Deadline:
        """A deadline ``seconds`` from the clock's current time."""
        if math.isnan(seconds):  # NaN would make every comparison false
            raise ValueError("Deadline.after: seconds must be a number, got NaN")
        return cls(clock.now() + timedelta(seconds=seconds), clock=clock)

    def remaining(self) -> timedelta:
        """Time left; zero once the deadline has passed (never negative)."""
        left = self.expires_at - self.clock.now()
        return left if left > _ZERO else _ZERO

    def expired(self) -> bool:
        """True from the expiry instant on."""
        return self.clock.now() >= self.expires_at

    def check(self) -> None:
        """Raise :class:`DeadlineExceededError` if the deadline has passed."""
        now = self.clock.now()
        if now >= self.expires_at:
            overdue = (now - self.expires_at).total_seconds()
            raise DeadlineExceededError(
                f"deadline {self.expires_at.isoformat()} has passed ({overdue:.3f}s ago)"
            )
