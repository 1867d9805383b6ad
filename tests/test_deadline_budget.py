"""Deadline (with a fake clock) and Budget / BudgetTracker."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from weakprompt.budget import Budget, BudgetTracker
from weakprompt.clock import SYSTEM_CLOCK, FakeClock
from weakprompt.deadlines import Deadline
from weakprompt.errors import BudgetExceededError, DeadlineExceededError
from weakprompt.messages import Usage

# -- Deadline -------------------------------------------------------------


def test_deadline_after_counts_from_the_clock() -> None:
    clock = FakeClock()
    deadline = Deadline.after(10, clock=clock)
    assert deadline.expires_at == clock.now() + timedelta(seconds=10)
    assert deadline.remaining() == timedelta(seconds=10)
    assert not deadline.expired()
    deadline.check()
    clock.advance(4)
    assert deadline.remaining() == timedelta(seconds=6)


def test_deadline_expires_at_the_instant_and_check_raises_with_detail() -> None:
    clock = FakeClock()
    deadline = Deadline.after(5, clock=clock)
    clock.advance(5)
    assert deadline.expired()
    assert deadline.remaining() == timedelta(0)
    clock.advance(1.5)
    with pytest.raises(
        DeadlineExceededError, match=r"deadline 2026-01-01T00:00:05\+00:00 has passed \(1\.500s ago\)"
    ):
        deadline.check()
    assert deadline.remaining() == timedelta(0)  # never negative


@given(st.floats(min_value=-1e6, max_value=1e6), st.floats(min_value=0, max_value=2e6))
def test_deadline_expired_iff_clock_reached_expiry(offset: float, elapsed: float) -> None:
    clock = FakeClock()
    deadline = Deadline.after(offset, clock=clock)
    clock.advance(elapsed)
    expired = clock.now() >= deadline.expires_at
    assert deadline.expired() is expired
    assert (deadline.remaining() == timedelta(0)) is (clock.now() >= deadline.expires_at)
    if expired:
        with pytest.raises(DeadlineExceededError):
            deadline.check()
    else:
        deadline.check()


def test_deadline_rejects_naive_datetimes_and_nan() -> None:
    with pytest.raises(ValueError, match="expires_at must be timezone-aware"):
        Deadline(datetime(2026, 1, 1))
    with pytest.raises(ValueError, match="NaN"):
        Deadline.after(float("nan"))


def test_deadline_defaults_to_the_system_clock_and_ignores_clock_in_equality() -> None:
    when = datetime(2030, 1, 1, tzinfo=UTC)
    a = Deadline(when)
    assert a.clock is SYSTEM_CLOCK
    assert a == Deadline(when, clock=FakeClock())
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        a.expires_at = when  # type: ignore[misc]


# -- Budget ---------------------------------------------------------------


def test_budget_fields_are_optional_and_validated() -> None:
    assert Budget() == Budget(
        max_input_tokens=None, max_output_tokens=None, max_total_tokens=None, max_model_calls=None
    )
    with pytest.raises(ValueError, match="max_total_tokens must be >= 0, got -1"):
        Budget(max_total_tokens=-1)
    with pytest.raises(TypeError, match="max_model_calls must be an int or None, got float"):
        Budget(max_model_calls=1.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="got bool"):
        Budget(max_input_tokens=True)


def test_tracker_adds_up_usage() -> None:
    tracker = BudgetTracker(Budget())
    tracker.record(Usage(input_tokens=3, output_tokens=2, model_calls=1))
    tracker.record(Usage(input_tokens=1, cached_input_tokens=1, model_calls=1))
    assert tracker.usage == Usage(input_tokens=4, output_tokens=2, cached_input_tokens=1, model_calls=2)
    tracker.check()
    assert tracker.remaining_tokens() is None
    assert tracker.budget == Budget()


def test_tracker_rejects_wrong_inputs() -> None:
    with pytest.raises(TypeError, match="needs a Budget"):
        BudgetTracker({"max_total_tokens": 3})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="takes a Usage, got int"):
        BudgetTracker(Budget()).record(5)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("budget", "usage", "named"),
    [
        (Budget(max_input_tokens=10), Usage(input_tokens=10), "input tokens 10 reached max_input_tokens=10"),
        (Budget(max_output_tokens=5), Usage(output_tokens=6), "output tokens 6 reached max_output_tokens=5"),
        (
            Budget(max_total_tokens=8),
            Usage(input_tokens=4, output_tokens=4),
            "total tokens 8 reached max_total_tokens=8",
        ),
        (Budget(max_model_calls=2), Usage(model_calls=2), "model calls 2 reached max_model_calls=2"),
    ],
)
def test_check_names_the_limit_that_was_reached(budget: Budget, usage: Usage, named: str) -> None:
    tracker = BudgetTracker(budget)
    tracker.record(usage)
    with pytest.raises(BudgetExceededError) as info:
        tracker.check()
    assert named in str(info.value)
    assert tracker.exceeded() == (named,)


def test_check_names_every_limit_reached() -> None:
    tracker = BudgetTracker(Budget(max_input_tokens=1, max_model_calls=1, max_output_tokens=100))
    tracker.record(Usage(input_tokens=1, model_calls=1))
    with pytest.raises(BudgetExceededError, match=r"input tokens.*; model calls"):
        tracker.check()


def test_below_every_limit_check_passes() -> None:
    tracker = BudgetTracker(Budget(max_total_tokens=10, max_model_calls=3))
    tracker.record(Usage(input_tokens=4, output_tokens=5, model_calls=2))
    tracker.check()
    assert tracker.exceeded() == ()


def test_remaining_tokens_is_the_tightest_headroom_and_never_negative() -> None:
    tracker = BudgetTracker(Budget(max_input_tokens=100, max_output_tokens=30, max_total_tokens=120))
    assert tracker.remaining_tokens() == 30
    tracker.record(Usage(input_tokens=80, output_tokens=10))
    assert tracker.remaining_tokens() == 20  # input: 20, output: 20, total: 30
    tracker.record(Usage(input_tokens=50))
    assert tracker.remaining_tokens() == 0


@given(
    st.lists(st.tuples(st.integers(0, 50), st.integers(0, 50)), max_size=20),
    st.integers(0, 500),
)
def test_remaining_tokens_matches_total_limit(usages: list[tuple[int, int]], limit: int) -> None:
    tracker = BudgetTracker(Budget(max_total_tokens=limit))
    for inp, out in usages:
        tracker.record(Usage(input_tokens=inp, output_tokens=out, model_calls=1))
    spent = sum(i + o for i, o in usages)
    assert tracker.remaining_tokens() == max(0, limit - spent)
    if spent >= limit:
        with pytest.raises(BudgetExceededError):
            tracker.check()
    else:
        tracker.check()


def test_tracker_is_thread_safe_under_concurrent_records() -> None:
    tracker = BudgetTracker(Budget(max_total_tokens=10**9))
    threads_n, per_thread = 8, 2000
    barrier = threading.Barrier(threads_n)

    def worker() -> None:
        barrier.wait()
        for _ in range(per_thread):
            tracker.record(Usage(input_tokens=1, output_tokens=2, model_calls=1))

    threads = [threading.Thread(target=worker) for _ in range(threads_n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    total = threads_n * per_thread
    assert tracker.usage == Usage(input_tokens=total, output_tokens=2 * total, model_calls=total)
    assert tracker.remaining_tokens() == 10**9 - 3 * total
