"""Evaluators: what a case's run is judged by, each giving an :class:`Outcome`.

An evaluator looks at one :class:`Observation`: the answer, the reply's
text, the usage, the turns, the wall time, and the run's transcript, from
which the tool trajectory is read (:attr:`Observation.tool_calls`, built
with :meth:`~weakprompt.transcript.Transcript.find_tool_turns`). No
tracing backend is needed: the transcript already records every call.

Kinds here: the answer (:class:`ExpectedOutput`, :class:`OutputEquals`,
:class:`OutputSatisfies`), the trajectory (:class:`Called`,
:class:`NeverCalled`, :class:`CalledBefore`), limits (:class:`MaxTurns`,
:class:`MaxLatency`, :class:`MaxCost`, :class:`MaxTokens`). The LLM judge
is :class:`~weakprompt.evals.LLMJudge`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

import attrs

from ..budget import TokenPrices
from ..errors import ConfigurationError
from ..jsontypes import JSONValue
from ..messages import ToolCall, Usage
from ..safetext import type_name

if TYPE_CHECKING:
    from ..transcript import Transcript

__all__ = [
    "Called",
    "CalledBefore",
    "Evaluator",
    "ExpectedOutput",
    "MaxCost",
    "MaxLatency",
    "MaxTokens",
    "MaxTurns",
    "NeverCalled",
    "Observation",
    "Outcome",
    "OutputEquals",
    "OutputSatisfies",
]

OutputT = TypeVar("OutputT")
OutputT_co = TypeVar("OutputT_co", covariant=True)
OutputT_contra = TypeVar("OutputT_contra", contravariant=True)


@attrs.frozen(kw_only=True)
class Outcome:
    """One evaluator's verdict on one run: passed or not, an optional score in [0, 1], and why."""

    evaluator: str
    passed: bool
    reason: str = ""
    score: float | None = None

    def to_json(self) -> dict[str, JSONValue]:
        return {
            "evaluator": self.evaluator,
            "passed": self.passed,
            "reason": self.reason,
            "score": self.score,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, JSONValue]) -> Outcome:
        score = data.get("score")
        return cls(
            evaluator=str(data.get("evaluator", "")),
            passed=data.get("passed") is True,
            reason=str(data.get("reason", "")),
            score=float(score) if isinstance(score, int | float) and not isinstance(score, bool) else None,
        )


@attrs.frozen(kw_only=True, eq=False)
class Observation(Generic[OutputT_co]):
    """What one run of a case left: its answer, usage, turns, time, and its transcript.

    ``output`` is the typed answer (the reply's text for an agent without an
    ``output_type``); ``expected`` is the case's. ``duration`` is the run's
    wall time in seconds, measured by the runner.
    """

    case_name: str
    input: str | None
    expected: OutputT_co | None
    output: OutputT_co
    text: str
    usage: Usage
    turns: int
    duration: float
    session_id: str
    transcript: Transcript
    metadata: Mapping[str, JSONValue] = attrs.field(factory=dict[str, JSONValue])

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        """Every tool call the model made, in order (read from the transcript's tool turns)."""
        return tuple(
            call for turn in self.transcript.find_tool_turns() for call in turn.call.content.tool_calls
        )

    @property
    def tool_names(self) -> tuple[str, ...]:
        return tuple(call.name for call in self.tool_calls)


class Evaluator(Protocol[OutputT_contra]):
    """Judges one run. ``name`` keys its outcome in the stored results (unique within a case)."""

    @property
    def name(self) -> str: ...

    async def evaluate(self, observation: Observation[OutputT_contra], /) -> Outcome: ...


def _named(evaluator: object, default: str) -> None:
    """Give an evaluator built without a ``name`` its default one (the instance is frozen)."""
    if not getattr(evaluator, "name", ""):
        object.__setattr__(evaluator, "name", default)


def _short(value: object, limit: int = 120) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# -- the answer ------------------------------------------------------------------------------------


@attrs.frozen
class ExpectedOutput:
    """The answer equals the case's ``expected`` one; a case without one passes (nothing to compare)."""

    name: str = "expected_output"

    async def evaluate(self, observation: Observation[object], /) -> Outcome:
        if observation.expected is None:
            return Outcome(evaluator=self.name, passed=True, reason="no expected output")
        if observation.output == observation.expected:
            return Outcome(evaluator=self.name, passed=True, score=1.0)
        return Outcome(
            evaluator=self.name,
            passed=False,
            score=0.0,
            reason=f"expected {_short(observation.expected)}, got {_short(observation.output)}",
        )


@attrs.frozen
class OutputEquals(Generic[OutputT]):
    """The answer equals ``value``."""

    value: OutputT
    name: str = "output_equals"

    async def evaluate(self, observation: Observation[OutputT], /) -> Outcome:
        passed = observation.output == self.value
        reason = "" if passed else f"expected {_short(self.value)}, got {_short(observation.output)}"
        return Outcome(evaluator=self.name, passed=passed, reason=reason, score=1.0 if passed else 0.0)


@attrs.frozen
class OutputSatisfies(Generic[OutputT]):
    """``predicate(answer)`` is true; ``name`` defaults to the predicate's."""

    predicate: Callable[[OutputT], bool]
    name: str = ""
    """Defaults to the evaluator's kind and tool."""

    def _default_name(self) -> str:
        return str(getattr(self.predicate, "__name__", "output_satisfies"))

    def __attrs_post_init__(self) -> None:
        _named(self, self._default_name())

    async def evaluate(self, observation: Observation[OutputT], /) -> Outcome:
        passed = bool(self.predicate(observation.output))
        reason = "" if passed else f"{self.name} is false for {_short(observation.output)}"
        return Outcome(evaluator=self.name, passed=passed, reason=reason)


# -- the tool trajectory ---------------------------------------------------------------------------


ArgumentCheck = Mapping[str, JSONValue] | Callable[[Mapping[str, JSONValue]], bool]
"""A subset the call's arguments must contain (equal values), or a predicate of the arguments."""


def _arguments(call: ToolCall) -> Mapping[str, JSONValue] | None:
    decoded = call.decoded_arguments
    return decoded if isinstance(decoded, dict) else None


def _matches(call: ToolCall, check: ArgumentCheck | None) -> bool:
    if check is None:
        return True
    arguments = _arguments(call)
    if arguments is None:
        return False
    if callable(check):
        return bool(check(arguments))
    return all(key in arguments and arguments[key] == value for key, value in check.items())


def _check_tool(name: str, what: str) -> None:
    if not name:
        raise ConfigurationError(f"{what}: the tool name is empty")


@attrs.frozen
class Called:
    """The model called ``tool``: at least once, or exactly ``times``; with ``arguments`` matching.

    ``arguments`` is a subset the call's arguments must contain, or a
    predicate of them; only calls that match count.
    """

    tool: str
    arguments: ArgumentCheck | None = None
    times: int | None = None
    name: str = ""
    """Defaults to the evaluator's kind and tool."""

    def _default_name(self) -> str:
        return f"called:{self.tool}"

    def __attrs_post_init__(self) -> None:
        _named(self, self._default_name())
        _check_tool(self.tool, "Called")
        if self.times is not None and self.times < 0:
            raise ConfigurationError(f"Called({self.tool!r}): times must be >= 0, got {self.times}")

    async def evaluate(self, observation: Observation[object], /) -> Outcome:
        calls = [call for call in observation.tool_calls if call.name == self.tool]
        matching = [call for call in calls if _matches(call, self.arguments)]
        count = len(matching)
        passed = count == self.times if self.times is not None else count > 0
        if passed:
            return Outcome(evaluator=self.name, passed=True)
        wanted = f"{self.times} time(s)" if self.times is not None else "at least once"
        detail = f"{count} matching call(s) of {len(calls)} to {self.tool!r}"
        if calls and count < len(calls):
            detail += f"; arguments seen: {', '.join(_short(c.decoded_arguments, 60) for c in calls[:3])}"
        return Outcome(evaluator=self.name, passed=False, reason=f"expected {wanted}, found {detail}")


@attrs.frozen
class NeverCalled:
    """The model never called ``tool``."""

    tool: str
    name: str = ""
    """Defaults to the evaluator's kind and tool."""

    def _default_name(self) -> str:
        return f"never_called:{self.tool}"

    def __attrs_post_init__(self) -> None:
        _named(self, self._default_name())
        _check_tool(self.tool, "NeverCalled")

    async def evaluate(self, observation: Observation[object], /) -> Outcome:
        count = observation.tool_names.count(self.tool)
        reason = "" if count == 0 else f"{self.tool!r} was called {count} time(s)"
        return Outcome(evaluator=self.name, passed=count == 0, reason=reason)


@attrs.frozen
class CalledBefore:
    """``first`` was called, and before any call of ``then`` (which must be called too)."""

    first: str
    then: str
    name: str = ""
    """Defaults to the evaluator's kind and tool."""

    def _default_name(self) -> str:
        return f"called_before:{self.first}<{self.then}"

    def __attrs_post_init__(self) -> None:
        _named(self, self._default_name())
        _check_tool(self.first, "CalledBefore")
        _check_tool(self.then, "CalledBefore")

    async def evaluate(self, observation: Observation[object], /) -> Outcome:
        names = observation.tool_names
        missing = [tool for tool in (self.first, self.then) if tool not in names]
        if missing:
            return Outcome(
                evaluator=self.name,
                passed=False,
                reason=f"{' and '.join(repr(m) for m in missing)} never called (calls: {list(names)})",
            )
        passed = names.index(self.first) < names.index(self.then)
        reason = "" if passed else f"{self.then!r} was called before {self.first!r} (calls: {list(names)})"
        return Outcome(evaluator=self.name, passed=passed, reason=reason)


# -- limits ----------------------------------------------------------------------------------------


def _limit(value: float, what: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise ConfigurationError(f"{what} must be a number >= 0, got {value!r} ({type_name(value)})")


def _within(name: str, measured: float, limit: float, unit: str) -> Outcome:
    passed = measured <= limit
    reason = f"{measured:g}{unit} of at most {limit:g}{unit}"
    return Outcome(evaluator=name, passed=passed, reason="" if passed else reason)


@attrs.frozen
class MaxTurns:
    """At most ``limit`` model calls in the run."""

    limit: int
    name: str = "max_turns"

    def __attrs_post_init__(self) -> None:
        _limit(self.limit, "MaxTurns.limit")

    async def evaluate(self, observation: Observation[object], /) -> Outcome:
        return _within(self.name, observation.turns, self.limit, " turn(s)")


@attrs.frozen
class MaxLatency:
    """The run took at most ``seconds`` of wall time."""

    seconds: float
    name: str = "max_latency"

    def __attrs_post_init__(self) -> None:
        _limit(self.seconds, "MaxLatency.seconds")

    async def evaluate(self, observation: Observation[object], /) -> Outcome:
        return _within(self.name, round(observation.duration, 3), self.seconds, " s")


@attrs.frozen
class MaxTokens:
    """At most ``limit`` tokens in and out over the run's model calls."""

    limit: int
    name: str = "max_tokens"

    def __attrs_post_init__(self) -> None:
        _limit(self.limit, "MaxTokens.limit")

    async def evaluate(self, observation: Observation[object], /) -> Outcome:
        return _within(self.name, observation.usage.total_tokens, self.limit, " token(s)")


@attrs.frozen
class MaxCost:
    """The run's usage costs at most ``limit`` at ``prices`` (:class:`~weakprompt.budget.TokenPrices`)."""

    limit: float
    prices: TokenPrices
    name: str = "max_cost"

    def __attrs_post_init__(self) -> None:
        _limit(self.limit, "MaxCost.limit")

    async def evaluate(self, observation: Observation[object], /) -> Outcome:
        cost = self.prices.cost(observation.usage)
        outcome = _within(self.name, round(cost, 6), self.limit, "")
        return attrs.evolve(outcome, reason=outcome.reason and f"cost {outcome.reason}")
