"""Token and call budgets, and a thread-safe tracker of what has been spent.

The evaluation loop records each model call's usage and calls ``check()``
before the next one; the tool-result pipeline asks ``remaining_tokens()``
to decide whether an output still fits.
"""

from __future__ import annotations

import threading

import attrs

from .errors import BudgetExceededError
from .usage import Usage

__all__ = ["Budget", "BudgetTracker"]


def _non_negative(_: object, attribute: attrs.Attribute[int | None], value: int | None) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"Budget.{attribute.name} must be an int or None, got {type(value).__name__}")
    if value < 0:
        raise ValueError(f"Budget.{attribute.name} must be >= 0, got {value}")


@attrs.frozen(kw_only=True)
class Budget:
    """Upper limits for one evaluation; ``None`` means unlimited."""

    max_input_tokens: int | None = attrs.field(default=None, validator=_non_negative)
    max_output_tokens: int | None = attrs.field(default=None, validator=_non_negative)
    max_total_tokens: int | None = attrs.field(default=None, validator=_non_negative)
    max_model_calls: int | None = attrs.field(default=None, validator=_non_negative)


class BudgetTracker:
    """Adds up usage against a :class:`Budget`; safe to share between threads.

    A limit counts as exceeded once it is *reached*: ``check()`` runs before
    spending more, and at the limit nothing is left to spend.
    """

    def __init__(self, budget: Budget) -> None:
        if not isinstance(budget, Budget):
            raise TypeError(f"BudgetTracker needs a Budget, got {type(budget).__name__}")
        self._budget = budget
        self._usage = Usage()
        self._lock = threading.Lock()

    @property
    def budget(self) -> Budget:
        return self._budget

    @property
    def usage(self) -> Usage:
        """Everything recorded so far."""
        return self._usage

    def record(self, usage: Usage) -> None:
        """Add one model call's (or several calls') usage."""
        if not isinstance(usage, Usage):
            raise TypeError(f"BudgetTracker.record takes a Usage, got {type(usage).__name__}")
        with self._lock:
            self._usage = self._usage + usage

    def exceeded(self) -> tuple[str, ...]:
        """Descriptions of every limit reached so far (empty when within budget)."""
        used = self._usage
        budget = self._budget
        checks = (
            ("max_input_tokens", "input tokens", used.input_tokens, budget.max_input_tokens),
            ("max_output_tokens", "output tokens", used.output_tokens, budget.max_output_tokens),
            ("max_total_tokens", "total tokens", used.total_tokens, budget.max_total_tokens),
            ("max_model_calls", "model calls", used.model_calls, budget.max_model_calls),
        )
        return tuple(
            f"{label} {spent} reached {field}={limit}"
            for field, label, spent, limit in checks
            if limit is not None and spent >= limit
        )

    def check(self) -> None:
        """Raise :class:`BudgetExceededError` naming every limit that was reached."""
        reached = self.exceeded()
        if reached:
            raise BudgetExceededError("budget exhausted: " + "; ".join(reached))

    def remaining_tokens(self) -> int | None:
        """Tokens that can still be spent before any token limit is reached.

        The smallest headroom among the token limits that are set, never
        negative; ``None`` when no token limit is set.
        """
        used = self._usage
        budget = self._budget
        headroom = [
            limit - spent
            for spent, limit in (
                (used.input_tokens, budget.max_input_tokens),
                (used.output_tokens, budget.max_output_tokens),
                (used.total_tokens, budget.max_total_tokens),
            )
            if limit is not None
        ]
        if not headroom:
            return None
        return max(0, min(headroom))
