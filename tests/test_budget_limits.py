"""Usage limits: every limit stops the run before the call that would pass it; the transcript is kept.

The property runs the loop on scripted replies with random usages and tool
calls under random limits, and compares with a plain model of the rules:
before each model call, stop if any of tokens (input, output, total), model
calls or cost has *reached* its limit; before a reply's tool calls run, stop
if they would pass ``max_tool_calls``.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loop_support import arithmetic_prompt
from weakprompt.adapters.testing import ScriptedAdapter, tool_call, tool_call_turn
from weakprompt.budget import Budget, BudgetTracker, TokenPrices
from weakprompt.errors import BudgetExceededError
from weakprompt.messages import AssistantTurn, Usage
from weakprompt.runtime.loop import evaluate
from weakprompt.session import Session
from weakprompt.store import Store
from weakprompt.transcript import Transcript

# One dollar per input token and two per output token: costs are whole numbers.
PRICES = TokenPrices(input_per_million=1_000_000, output_per_million=2_000_000)

limit = st.none() | st.integers(0, 120)
budgets = st.builds(
    Budget,
    max_input_tokens=limit,
    max_output_tokens=limit,
    max_total_tokens=limit,
    max_model_calls=st.none() | st.integers(0, 6),
    max_tool_calls=st.none() | st.integers(0, 8),
    max_cost=st.none() | st.integers(0, 200).map(float),
    prices=st.just(PRICES),
)
usages = st.builds(
    Usage, input_tokens=st.integers(0, 40), output_tokens=st.integers(0, 15), model_calls=st.just(1)
)
tool_turns = st.lists(st.tuples(usages, st.integers(1, 3)), max_size=5)


def expected(budget: Budget, script: list[tuple[Usage, int]], final: Usage) -> tuple[bool, int, int]:
    """(succeeds, model calls made, assistant turns stored) by the rules, computed by hand."""
    spent, tools, calls = Usage(), 0, 0
    for usage, count in [*script, (final, 0)]:
        cost = PRICES.cost(spent)
        reached = [
            (budget.max_input_tokens, spent.input_tokens),
            (budget.max_output_tokens, spent.output_tokens),
            (budget.max_total_tokens, spent.total_tokens),
            (budget.max_model_calls, spent.model_calls),
            (budget.max_cost, cost),
        ]
        if any(limit is not None and used >= limit for limit, used in reached):
            return False, calls, calls
        calls += 1
        spent = spent + usage
        if count == 0:
            return True, calls, calls
        if budget.max_tool_calls is not None and tools + count > budget.max_tool_calls:
            return False, calls, calls - 1  # the reply whose calls were refused is not stored
        tools += count
    raise AssertionError("unreachable")  # pragma: no cover


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(budget=budgets, script=tool_turns, final=usages)
def test_each_limit_stops_the_run_before_the_call_that_would_pass_it(
    budget: Budget, script: list[tuple[Usage, int]], final: Usage
) -> None:
    replies: list[AssistantTurn | str] = [
        tool_call_turn(*(tool_call("add", {"a": 1, "b": i}) for i in range(count)), usage=usage)
        for usage, count in script
    ]
    replies.append(AssistantTurn(text="done", usage=final))
    adapter = ScriptedAdapter(replies)
    session = Session()
    store = Store.open("sqlite://")
    tracker = BudgetTracker(budget)
    succeeds, calls, stored = expected(budget, script, final)

    if succeeds:
        response = evaluate(
            arithmetic_prompt(), adapter=adapter, session=session, store=store, budget=tracker
        )
        assert response.text == "done"
    else:
        with pytest.raises(BudgetExceededError, match="budget exhausted") as info:
            evaluate(arithmetic_prompt(), adapter=adapter, session=session, store=store, budget=tracker)
        assert "model call(s)" in "\n".join(info.value.__notes__)  # the loop's note: where the record is

    assert len(adapter.requests) == calls
    log = Transcript(store, session.session_id).log()
    assert sum(c.content.role == "assistant" for c in log) == stored
    assert tracker.tool_calls <= (budget.max_tool_calls if budget.max_tool_calls is not None else 10**9)


def test_a_cost_limit_names_the_cost() -> None:
    tracker = BudgetTracker(
        Budget(max_cost=0.5, prices=TokenPrices(input_per_million=2.0, output_per_million=10.0))
    )
    tracker.record(Usage(input_tokens=100_000, output_tokens=40_000, model_calls=1))
    assert tracker.cost == pytest.approx(0.6)
    with pytest.raises(BudgetExceededError, match=r"cost 0\.6 reached max_cost=0\.5"):
        tracker.check()


def test_cached_input_has_its_own_price() -> None:
    prices = TokenPrices(input_per_million=3.0, output_per_million=15.0, cached_input_per_million=0.3)
    usage = Usage(input_tokens=1_000_000, cached_input_tokens=400_000, output_tokens=0)
    assert prices.cost(usage) == pytest.approx(0.6 * 3.0 + 0.4 * 0.3)
    assert BudgetTracker(Budget()).cost is None


def test_tool_calls_are_counted_only_when_they_may_run() -> None:
    tracker = BudgetTracker(Budget(max_tool_calls=3))
    tracker.take_tool_calls(2)
    with pytest.raises(
        BudgetExceededError, match=r"asked for 2 tool call.* 2 already run, past max_tool_calls=3"
    ):
        tracker.take_tool_calls(2)
    assert tracker.tool_calls == 2
    tracker.take_tool_calls(1)
    assert tracker.tool_calls == 3


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"max_cost": 1.0}, "max_cost needs prices"),
        ({"max_cost": -1.0, "prices": PRICES}, "max_cost must be a finite number >= 0"),
        ({"max_tool_calls": -1}, "max_tool_calls must be >= 0"),
    ],
)
def test_bad_limits_are_refused(options: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Budget(**options)  # type: ignore[arg-type]


def test_bad_prices_are_refused() -> None:
    with pytest.raises(ValueError, match="input_per_million must be a finite number"):
        TokenPrices(input_per_million=float("nan"), output_per_million=1.0)
    with pytest.raises(ValueError, match="cached_input_per_million must be a finite number"):
        TokenPrices(input_per_million=1.0, output_per_million=1.0, cached_input_per_million=-2.0)
