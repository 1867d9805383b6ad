"""Usage limits (tokens, model calls, tool calls, cost) and a thread-safe tracker of what has been spent.

The evaluation loop records each model call's usage and calls ``check()``
before the next one, so no call is made once a limit is reached; it asks
``take_tool_calls(n)`` before running a reply's tool calls, so no tool call
runs past ``max_tool_calls``. The tool-result pipeline asks
``remaining_tokens()`` to decide whether an output still fits.
"""

from __future__ import annotations

import math
import threading

import attrs

from .errors import BudgetExceededError
from .usage import Usage

__all__ = ["Budget", "BudgetTracker", "TokenPrices"]


def _non_negative(_: object, attribute: attrs.Attribute[int | None], value: int | None) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"Budget.{attribute.name} must be an int or None, got {type(value).__name__}")
    if value < 0:
        raise ValueError(f"Budget.{attribute.name} must be >= 0, got {value}")


def _check_price(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")


def _price(_: object, attribute: attrs.Attribute[float | None], value: float | None) -> None:
    if value is not None:
        _check_price(attribute.name, value)


def _set_price(_: object, attribute: attrs.Attribute[float], value: float) -> None:
    _check_price(attribute.name, value)


@attrs.frozen(kw_only=True)
class TokenPrices:
    """What tokens cost, per million (the unit providers quote); cached input defaults to the input price."""

    input_per_million: float = attrs.field(validator=_set_price)
    output_per_million: float = attrs.field(validator=_set_price)
    cached_input_per_million: float | None = attrs.field(default=None, validator=_price)

    def cost(self, usage: Usage) -> float:
        """The price of ``usage``: cached input at its own price, other input and output at theirs."""
        cached_price = (
            self.input_per_million if self.cached_input_per_million is None else self.cached_input_per_million
        )
        cached = min(usage.cached_input_tokens, usage.input_tokens)
        fresh = usage.input_tokens - cached
        return (
            fresh * self.input_per_million
            + cached * cached_price
            + usage.output_tokens * self.output_per_million
        ) / 1_000_000


@attrs.frozen(kw_only=True)
class Budget:
    """Upper limits for one evaluation; ``None`` means unlimited.

    ``max_model_calls`` limits requests to the model; ``max_tool_calls`` the
    tool calls run; ``max_cost`` the price of the usage at ``prices`` (which
    it needs).
    """

    max_input_tokens: int | None = attrs.field(default=None, validator=_non_negative)
    max_output_tokens: int | None = attrs.field(default=None, validator=_non_negative)
    max_total_tokens: int | None = attrs.field(default=None, validator=_non_negative)
    max_model_calls: int | None = attrs.field(default=None, validator=_non_negative)
    max_tool_calls: int | None = attrs.field(default=None, validator=_non_negative)
    max_cost: float | None = attrs.field(default=None, validator=_price)
    prices: TokenPrices | None = None

    def __attrs_post_init__(self) -> None:
        if self.max_cost is not None and self.prices is None:
            raise ValueError("Budget.max_cost needs prices=TokenPrices(...) to know what tokens cost")


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
        self._tool_calls = 0
        self._lock = threading.Lock()

    @property
    def budget(self) -> Budget:
        return self._budget

    @property
    def usage(self) -> Usage:
        """Everything recorded so far."""
        return self._usage

    @property
    def tool_calls(self) -> int:
        """Tool calls taken so far (:meth:`take_tool_calls`)."""
        return self._tool_calls

    @property
    def cost(self) -> float | None:
        """The price of everything recorded, when the budget has prices."""
        prices = self._budget.prices
        return None if prices is None else prices.cost(self._usage)

    def take_tool_calls(self, count: int) -> None:
        """Count ``count`` tool calls about to run, or raise if they would pass ``max_tool_calls``.

        Nothing is counted when it raises: the calls do not run.
        """
        limit = self._budget.max_tool_calls
        with self._lock:
            if limit is not None and self._tool_calls + count > limit:
                raise BudgetExceededError(
                    f"budget exhausted: the model asked for {count} tool call(s) with {self._tool_calls} "
                    f"already run, past max_tool_calls={limit}"
                )
            self._tool_calls += count

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
        reached = [
            f"{label} {spent} reached {field}={limit}"
            for field, label, spent, limit in checks
            if limit is not None and spent >= limit
        ]
        cost = self.cost
        if budget.max_cost is not None and cost is not None and cost >= budget.max_cost:
            reached.append(f"cost {cost:.6g} reached max_cost={budget.max_cost:g}")
        return tuple(reached)

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
