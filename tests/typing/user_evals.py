"""Evals as a strict user writes them: typed cases, typed checks, an experiment, a comparison."""

from __future__ import annotations

from dataclasses import dataclass
from typing import assert_type

from weakprompt import Agent, ScriptedAdapter, Store
from weakprompt.evals import (
    Called,
    Case,
    Comparison,
    Dataset,
    Evaluator,
    ExperimentResult,
    LLMJudge,
    MaxTurns,
    Observation,
    Outcome,
    OutputEquals,
    OutputSatisfies,
    compare_experiments,
    dataset_from_sessions,
    format_report,
    run_experiment_sync,
)


@dataclass(frozen=True)
class Answer:
    total: int


def is_positive(answer: Answer) -> bool:
    return answer.total > 0


class AtMostTen:
    """A user's own evaluator: typed by the answer it reads."""

    name = "at_most_ten"

    async def evaluate(self, observation: Observation[Answer], /) -> Outcome:
        return Outcome(evaluator=self.name, passed=observation.output.total <= 10)


case = Case(
    name="two plus two",
    input="2 + 2?",
    expected=Answer(4),
    evaluators=[OutputSatisfies(is_positive), Called("add", {"a": 2}), MaxTurns(3), AtMostTen()],
)
assert_type(case, Case[object, Answer])
assert_type(case.expected, Answer | None)

data = Dataset(name="sums", cases=[case, Case(name="one", input="1?", expected=Answer(1))])
assert_type(data, Dataset[object, Answer])
checks: list[Evaluator[Answer]] = [OutputEquals(Answer(4)), MaxTurns(2), AtMostTen()]

agent = Agent(ScriptedAdapter(['{"total": 4}']), instructions="Add.", output_type=Answer)
store = Store.open("sqlite://")
result = run_experiment_sync(agent, data, store=store, repeat=3, concurrency=2)
assert_type(result, ExperimentResult)
rate: float = result.case("one").pass_rate
print(format_report(result), rate, checks)

text_agent = Agent(ScriptedAdapter(["four"]), instructions="Say it.")
# Declared, so that "four" is a str answer rather than the literal type of this one text.
words: Dataset[object, str] = Dataset(
    name="words", cases=[Case(name="four", input="2 + 2?", expected="four")]
)
other = run_experiment_sync(text_agent, words, store=store)
comparison = compare_experiments(result, other)
assert_type(comparison, Comparison)

recorded = dataset_from_sessions(store, ["s1"], name="recorded", output_type=Answer)
assert_type(recorded, Dataset[object, Answer])
assert_type(dataset_from_sessions(store, ["s1"], name="recorded"), Dataset[object, str])
judge = LLMJudge(ScriptedAdapter([]), rubric="The total is right.")
graded = Dataset(name="graded", cases=[case], evaluators=[judge])

run_experiment_sync(text_agent, data, store=store)  # pyright: ignore[reportArgumentType, reportCallIssue]
