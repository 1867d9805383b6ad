"""The extraction's metering wrapper keeps its checks and accounting on a streamed call."""

from __future__ import annotations

import pytest

from adapters_support import USER, make_request
from stream_support import collect, final_turn, of_type
from weakprompt.adapters.testing import ScriptedAdapter, StreamScript
from weakprompt.budget import Budget, BudgetTracker
from weakprompt.clock import FakeClock
from weakprompt.deadlines import Deadline
from weakprompt.errors import BudgetExceededError, DeadlineExceededError
from weakprompt.messages import AssistantTurn, Usage
from weakprompt.model import ProviderAdapter, TextDelta, UsageReported, assemble
from weakprompt.runtime.results.extraction.metering import MeteredAdapter

REQUEST = make_request([USER])


def test_streamed_usage_is_recorded_and_a_call_without_one_counts_as_one() -> None:
    tracker = BudgetTracker(Budget(max_model_calls=10))
    uncounted = StreamScript([TextDelta("a"), UsageReported(Usage(input_tokens=5, output_tokens=2))])
    counted = AssistantTurn(text="b", usage=Usage(input_tokens=3, output_tokens=1, model_calls=1))
    metered = MeteredAdapter(ScriptedAdapter([uncounted, counted]), budget_tracker=tracker)
    assert isinstance(metered, ProviderAdapter)

    first = collect(metered, REQUEST)
    second = collect(metered, REQUEST)

    corrected = Usage(input_tokens=5, output_tokens=2, model_calls=1)
    assert of_type(first, UsageReported) == [UsageReported(corrected)]
    assert final_turn(first).usage == corrected
    assert assemble(first) == final_turn(first)  # the corrected stream still keeps the contract
    assert final_turn(second) == counted
    assert metered.usage == Usage(input_tokens=8, output_tokens=3, model_calls=2)
    assert tracker.usage == metered.usage


def test_a_streamed_call_is_refused_past_the_deadline_or_the_budget() -> None:
    clock = FakeClock()
    deadline = Deadline.after(1, clock=clock)
    clock.advance(2)
    inner = ScriptedAdapter(["never"])

    with pytest.raises(DeadlineExceededError):
        collect(MeteredAdapter(inner, deadline=deadline), REQUEST)

    spent = BudgetTracker(Budget(max_model_calls=1))
    spent.record(Usage(model_calls=1))
    with pytest.raises(BudgetExceededError):
        collect(MeteredAdapter(inner, budget_tracker=spent), REQUEST)
    assert inner.requests == ()


def test_without_limits_a_streamed_call_is_only_counted() -> None:
    metered = MeteredAdapter(
        ScriptedAdapter([AssistantTurn(text="x", usage=Usage(output_tokens=2, model_calls=1))])
    )

    assert final_turn(collect(metered, REQUEST)).text == "x"
    assert metered.usage == Usage(output_tokens=2, model_calls=1)
