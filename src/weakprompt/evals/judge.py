"""An LLM judge: any adapter grades the answer against a rubric, as a typed verdict.

The judge is itself an :class:`~weakprompt.agent.Agent` with
``output_type=JudgeVerdict``: its reply is parsed and checked like any typed
answer (a malformed verdict gets the usual corrective turn), and it runs on
whatever adapter it is given, a scripted one in tests.
"""

from __future__ import annotations

import json

import attrs

from ..agent import Agent
from ..errors import ConfigurationError, WeakpromptError
from ..model import ProviderAdapter
from ..safetext import type_name
from ..serde import dump
from .evaluators import Observation, Outcome

__all__ = ["JUDGE_INSTRUCTIONS", "JudgeVerdict", "LLMJudge"]

JUDGE_INSTRUCTIONS = (
    "You grade an assistant's answer against a rubric. Read the user's input, the expected answer "
    "when one is given, and the answer. Reply with a verdict: passed (does the answer meet the "
    "rubric), score (from 0 to 1) and a one-sentence reason.\n\nRubric:\n"
)


@attrs.frozen
class JudgeVerdict:
    """What the judge answers: whether the answer meets the rubric, a score in [0, 1], and why."""

    passed: bool
    score: float
    reason: str


def _shown(value: object) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(dump(value), ensure_ascii=False)
    except Exception:  # not dumpable: its repr is what the judge gets
        return repr(value)


@attrs.frozen
class LLMJudge:
    """Grade each answer with the model behind ``adapter`` against ``rubric``.

    The case passes when the verdict says so and its score is at least
    ``threshold``. A judge whose run fails (the adapter raised, or no
    verdict parsed after its retries) fails the case with the error as the
    reason: a broken judge never passes anything.
    """

    adapter: ProviderAdapter
    rubric: str
    threshold: float = 0.0
    name: str = "judge"
    _agent: Agent[JudgeVerdict] = attrs.field(init=False, repr=False)

    def __attrs_post_init__(self) -> None:
        if not self.rubric.strip():
            raise ConfigurationError("LLMJudge: the rubric is empty; say what a good answer is")
        if not 0.0 <= self.threshold <= 1.0:
            raise ConfigurationError(f"LLMJudge: threshold must be within [0, 1], got {self.threshold!r}")
        agent = Agent(
            self.adapter,
            instructions=JUDGE_INSTRUCTIONS + self.rubric,
            output_type=JudgeVerdict,
            name="llm_judge",
        )
        object.__setattr__(self, "_agent", agent)

    def request_text(self, observation: Observation[object]) -> str:
        """The user message the judge is sent for ``observation``."""
        lines = [f"Input:\n{observation.input or '(none)'}"]
        if observation.expected is not None:
            lines.append(f"Expected answer:\n{_shown(observation.expected)}")
        lines.append(f"Answer:\n{_shown(observation.output)}")
        return "\n\n".join(lines)

    async def evaluate(self, observation: Observation[object], /) -> Outcome:
        try:
            response = await self._agent.run(self.request_text(observation))
        except WeakpromptError as exc:
            return Outcome(
                evaluator=self.name, passed=False, reason=f"the judge failed: {type_name(exc)}: {exc}"
            )
        verdict = response.output
        score = min(1.0, max(0.0, verdict.score))
        return Outcome(
            evaluator=self.name,
            passed=verdict.passed and score >= self.threshold,
            score=score,
            reason=verdict.reason,
        )
