"""Evaluators: the answer, the tool trajectory read from the transcript, the limits, the LLM judge."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import attrs
import pytest

from evals_support import Forecast, make_agent
from weakprompt.adapters.testing import ScriptedAdapter, text_turn
from weakprompt.budget import TokenPrices
from weakprompt.errors import ConfigurationError
from weakprompt.evals import (
    Called,
    CalledBefore,
    ExpectedOutput,
    JudgeVerdict,
    LLMJudge,
    MaxCost,
    MaxLatency,
    MaxTokens,
    MaxTurns,
    NeverCalled,
    Observation,
    Outcome,
    OutputEquals,
    OutputSatisfies,
)
from weakprompt.messages import Usage
from weakprompt.store import Store
from weakprompt.transcript import Transcript


@pytest.fixture
def observed() -> Iterator[Observation[Forecast]]:
    """A real run of the weather agent on Lisbon: one lookup, then the answer (two model calls)."""
    with Store.open("sqlite://") as store:
        response = make_agent().run_sync("Lisbon", session="s", store=store)
        yield Observation(
            case_name="Lisbon",
            input="Lisbon",
            expected=Forecast("Lisbon", "sunny"),
            output=response.output,
            text=response.text,
            usage=Usage(input_tokens=1000, output_tokens=100, model_calls=2),
            turns=response.turns,
            duration=0.5,
            session_id="s",
            transcript=Transcript(store, "s"),
        )


def judge(evaluator: object, observation: Observation[Forecast]) -> Outcome:
    return asyncio.run(evaluator.evaluate(observation))  # type: ignore[attr-defined]


def test_the_trajectory_is_read_from_the_transcript(observed: Observation[Forecast]) -> None:
    assert observed.tool_names == ("lookup",)
    assert observed.tool_calls[0].decoded_arguments == {"city": "Lisbon"}


def test_expected_output_and_output_checks(observed: Observation[Forecast]) -> None:
    assert judge(ExpectedOutput(), observed).passed
    wrong = attrs.evolve(observed, expected=Forecast("Lisbon", "rainy"))
    outcome = judge(ExpectedOutput(), wrong)
    assert not outcome.passed and "rainy" in outcome.reason and outcome.score == 0.0
    nothing = attrs.evolve(observed, expected=None)
    assert judge(ExpectedOutput(), nothing).reason == "no expected output"
    assert judge(OutputEquals(Forecast("Lisbon", "sunny")), observed).passed
    assert not judge(OutputEquals(Forecast("Porto", "sunny")), observed).passed

    def is_sunny(forecast: Forecast) -> bool:
        return forecast.sky == "sunny"

    satisfied = judge(OutputSatisfies(is_sunny), observed)
    assert satisfied.passed and satisfied.evaluator == "is_sunny"
    failed = judge(OutputSatisfies(lambda f: f.sky == "rainy", name="rainy"), observed)
    assert not failed.passed and failed.evaluator == "rainy"


def test_called_checks_argument_subsets_predicates_and_counts(observed: Observation[Forecast]) -> None:
    assert judge(Called("lookup"), observed).passed
    assert judge(Called("lookup", {"city": "Lisbon"}), observed).passed
    assert judge(Called("lookup", lambda args: str(args["city"]).startswith("L")), observed).passed
    assert judge(Called("lookup", times=1), observed).passed
    wrong_args = judge(Called("lookup", {"city": "Porto"}), observed)
    assert not wrong_args.passed
    assert "0 matching call(s) of 1" in wrong_args.reason and "Lisbon" in wrong_args.reason
    assert not judge(Called("lookup", times=2), observed).passed
    assert not judge(Called("delete"), observed).passed
    assert Called("lookup").name == "called:lookup"


def test_never_called_and_called_before(observed: Observation[Forecast]) -> None:
    assert judge(NeverCalled("delete"), observed).passed
    never = judge(NeverCalled("lookup"), observed)
    assert not never.passed and "called 1 time" in never.reason
    missing = judge(CalledBefore("lookup", "book"), observed)
    assert not missing.passed and "'book' never called" in missing.reason
    assert CalledBefore("a", "b").name == "called_before:a<b"


def test_called_before_reads_the_order_of_the_calls() -> None:
    from weakprompt.adapters.testing import tool_call, tool_call_turn
    from weakprompt.agent import Agent
    from weakprompt.tools import tool

    @tool
    def first() -> str:
        """One."""
        return "1"

    @tool
    def second() -> str:
        """Two."""
        return "2"

    adapter = ScriptedAdapter(
        [tool_call_turn(tool_call("second")), tool_call_turn(tool_call("first")), text_turn("done")]
    )
    with Store.open("sqlite://") as store:
        response = Agent(adapter, instructions="Go.", tools=[first, second]).run_sync(
            "go", session="o", store=store
        )
        seen = Observation(
            case_name="o",
            input="go",
            expected=None,
            output=response.text,
            text=response.text,
            usage=response.usage,
            turns=response.turns,
            duration=0.0,
            session_id="o",
            transcript=Transcript(store, "o"),
        )
        assert seen.tool_names == ("second", "first")
        assert judge(CalledBefore("second", "first"), seen).passed  # type: ignore[arg-type]
        backwards = judge(CalledBefore("first", "second"), seen)  # type: ignore[arg-type]
        assert not backwards.passed and "'second' was called before 'first'" in backwards.reason


def test_limits_on_turns_latency_tokens_and_cost(observed: Observation[Forecast]) -> None:
    assert judge(MaxTurns(2), observed).passed
    turns = judge(MaxTurns(1), observed)
    assert not turns.passed and turns.reason == "2 turn(s) of at most 1 turn(s)"
    assert judge(MaxLatency(1.0), observed).passed
    assert not judge(MaxLatency(0.1), observed).passed
    assert judge(MaxTokens(1100), observed).passed
    assert not judge(MaxTokens(1099), observed).passed
    prices = TokenPrices(input_per_million=1.0, output_per_million=10.0)  # 0.001 + 0.001 = 0.002
    assert judge(MaxCost(0.002, prices), observed).passed
    over = judge(MaxCost(0.0019, prices), observed)
    assert not over.passed and over.reason.startswith("cost 0.002")


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: MaxTurns(-1), "MaxTurns.limit must be a number >= 0"),
        (lambda: MaxLatency(True), "MaxLatency.seconds must be a number >= 0"),  # type: ignore[arg-type]
        (lambda: MaxTokens(-5), "MaxTokens.limit"),
        (lambda: MaxCost(-1, TokenPrices(input_per_million=1, output_per_million=1)), "MaxCost.limit"),
        (lambda: Called(""), "Called: the tool name is empty"),
        (lambda: Called("x", times=-1), "times must be >= 0"),
        (lambda: NeverCalled(""), "NeverCalled"),
        (lambda: CalledBefore("a", ""), "CalledBefore"),
    ],
)
def test_bad_evaluator_settings_are_refused_by_name(build: object, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        build()  # type: ignore[operator]


def test_outcomes_round_trip_through_json() -> None:
    outcome = Outcome(evaluator="judge", passed=True, reason="fine", score=0.75)
    assert Outcome.from_json(outcome.to_json()) == outcome
    assert Outcome.from_json({"evaluator": "x", "passed": "yes", "score": True}) == Outcome(
        evaluator="x", passed=False
    )


# -- the LLM judge ---------------------------------------------------------------------------------


def verdict(passed: bool, score: float, reason: str) -> str:
    return f'{{"passed": {str(passed).lower()}, "score": {score}, "reason": "{reason}"}}'


def test_the_judge_sends_the_rubric_input_expected_and_answer_and_reads_its_verdict(
    observed: Observation[Forecast],
) -> None:
    adapter = ScriptedAdapter([text_turn(verdict(True, 0.9, "names the sky"))])
    outcome = judge(LLMJudge(adapter, rubric="The answer names the sky."), observed)
    assert outcome == Outcome(evaluator="judge", passed=True, reason="names the sky", score=0.9)
    (request,) = adapter.requests
    system, user = request.context.messages[0].content, request.context.messages[-1].content
    assert "Rubric:\nThe answer names the sky." in system
    assert user.startswith("Input:\nLisbon")
    assert 'Expected answer:\n{"city": "Lisbon", "sky": "sunny"}' in user
    assert 'Answer:\n{"city": "Lisbon", "sky": "sunny"}' in user


def test_the_judge_fails_below_its_threshold_and_clamps_the_score(observed: Observation[Forecast]) -> None:
    low = judge(
        LLMJudge(ScriptedAdapter([text_turn(verdict(True, 0.4, "meh"))]), "r", threshold=0.5), observed
    )
    assert not low.passed and low.score == 0.4
    high = judge(LLMJudge(ScriptedAdapter([text_turn(verdict(True, 7, "wow"))]), "r"), observed)
    assert high.passed and high.score == 1.0
    said_no = judge(LLMJudge(ScriptedAdapter([text_turn(verdict(False, 1.0, "wrong city"))]), "r"), observed)
    assert not said_no.passed and said_no.reason == "wrong city"


def test_a_broken_judge_fails_the_case_with_its_error(observed: Observation[Forecast]) -> None:
    outcome = judge(LLMJudge(ScriptedAdapter([]), "r", name="strict"), observed)
    assert not outcome.passed and outcome.evaluator == "strict"
    assert outcome.reason.startswith("the judge failed: AdapterError")


def test_a_judge_shows_a_value_it_cannot_dump_by_its_repr(observed: Observation[Forecast]) -> None:
    odd = attrs.evolve(observed, output=object(), input=None, expected=None)
    text = LLMJudge(ScriptedAdapter([]), "r").request_text(odd)
    assert text.startswith("Input:\n(none)\n\nAnswer:\n<object object at")
    assert "Expected" not in text


@pytest.mark.parametrize(
    ("rubric", "threshold", "message"), [(" ", 0.0, "rubric is empty"), ("r", 1.5, "threshold")]
)
def test_bad_judge_settings_are_refused(rubric: str, threshold: float, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        LLMJudge(ScriptedAdapter([]), rubric, threshold=threshold)


def test_judge_verdict_is_a_frozen_typed_record() -> None:
    assert JudgeVerdict(passed=True, score=1.0, reason="r").passed


def test_a_judge_is_sent_a_text_answer_as_it_is(observed: Observation[Forecast]) -> None:
    text = attrs.evolve(observed, output="It is sunny.", expected="Sunny.")
    sent = LLMJudge(ScriptedAdapter([]), "r").request_text(text)  # type: ignore[arg-type]
    assert sent == "Input:\nLisbon\n\nExpected answer:\nSunny.\n\nAnswer:\nIt is sunny."
