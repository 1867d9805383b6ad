"""Running an agent over a dataset: each case in its own session, N times, judged and stored.

Every run of a case gets a session of its own in the one store given
(``eval-<experiment>-<case index>-<repeat>``), so its whole conversation is
in the transcript; the evaluators judge what it left (:class:`Observation`)
and the verdict is stored as one ``eval_results`` row naming that session,
as soon as the run is judged (``specs/EVALS.md``). Runs go concurrently, at
most ``concurrency`` at a time. A run that raises or pauses fails its case
with the error; the experiment goes on.
"""

from __future__ import annotations

import asyncio
import re
import time
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypeVar, cast, overload

from ..errors import ConfigurationError
from ..messages import Usage
from ..runtime.blocking import block_on
from ..safetext import type_name
from ..store.eval_rows import insert_eval_rows, read_eval_rows
from ..transcript import Transcript
from .evaluators import Evaluator, Observation, Outcome
from .results import ExperimentResult, RunResult

if TYPE_CHECKING:
    from ..agent import Agent
    from ..store import Store
    from .cases import Case, Dataset

__all__ = [
    "check_run_options",
    "claim_experiment_id",
    "evaluate_run",
    "failed_run",
    "judged_run",
    "new_experiment_id",
    "run_experiment",
    "run_experiment_sync",
    "session_usage",
    "store_run",
]

InputT = TypeVar("InputT")
OutputT = TypeVar("OutputT")


def new_experiment_id() -> str:
    return uuid.uuid4().hex[:16]


_EXPERIMENT_ID = re.compile(r"[A-Za-z0-9_.-]{1,64}")


def claim_experiment_id(store: Store, experiment_id: str | None) -> str:
    """A new id, or the one given once checked: well formed, and not used by a stored experiment.

    Reusing an id would continue the earlier runs' sessions instead of starting new ones.
    """
    if experiment_id is None:
        return new_experiment_id()
    if not _EXPERIMENT_ID.fullmatch(experiment_id):
        raise ConfigurationError(
            f"experiment_id must be 1 to 64 letters, digits, '_', '.' or '-', got {experiment_id!r}"
        )
    with store.read() as conn:
        if read_eval_rows(conn, experiment_id):
            raise ConfigurationError(
                f"experiment_id {experiment_id!r} is taken by a stored experiment: give a new one "
                "(or none, for a random one)"
            )
    return experiment_id


def check_run_options(*, repeat: int, concurrency: int, min_pass_rate: float) -> None:
    """Refuse bad runner options by name."""
    if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 1:
        raise ConfigurationError(f"repeat must be an int >= 1, got {repeat!r}")
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ConfigurationError(f"concurrency must be an int >= 1, got {concurrency!r}")
    if not 0.0 <= min_pass_rate <= 1.0:
        raise ConfigurationError(f"min_pass_rate must be within [0, 1], got {min_pass_rate!r}")


def session_usage(transcript: Transcript) -> tuple[Usage, int]:
    """The usage recorded on a session's replies, and how many replies (model calls) it stored."""
    total, turns = Usage(), 0
    for commit in transcript.log():
        if commit.role == "assistant":
            turns += 1
            total = total + (commit.usage or Usage(model_calls=1))
    return total, turns


async def evaluate_run(
    evaluators: Sequence[Evaluator[OutputT]], observation: Observation[OutputT]
) -> tuple[Outcome, ...]:
    """Every evaluator's outcome; one that raises fails with its error (a broken check passes nothing)."""
    outcomes: list[Outcome] = []
    for evaluator in evaluators:
        try:
            outcomes.append(await evaluator.evaluate(observation))
        except Exception as exc:
            name = getattr(evaluator, "name", type_name(evaluator))
            outcomes.append(
                Outcome(
                    evaluator=str(name), passed=False, reason=f"the evaluator raised {type_name(exc)}: {exc}"
                )
            )
    return tuple(outcomes)


def failed_run(  # noqa: PLR0917 - one call site shape: the run's identity, then what it left
    case_name: str,
    case_index: int,
    repeat: int,
    session_id: str,
    transcript: Transcript,
    error: str,
    started_at: str,
    seconds: float,
) -> RunResult:
    """A run that did not end with an answer: its error, and the usage its stored replies record."""
    usage, turns = session_usage(transcript)
    return RunResult(
        case_name=case_name,
        case_index=case_index,
        repeat=repeat,
        session_id=session_id,
        passed=False,
        outcomes=(),
        usage=usage,
        turns=turns,
        duration_ms=round(seconds * 1000),
        started_at=started_at,
        error=error,
    )


def judged_run(
    observation: Observation[object],
    case_index: int,
    repeat: int,
    outcomes: tuple[Outcome, ...],
    started_at: str,
) -> RunResult:
    return RunResult(
        case_name=observation.case_name,
        case_index=case_index,
        repeat=repeat,
        session_id=observation.session_id,
        passed=all(o.passed for o in outcomes),
        outcomes=outcomes,
        usage=observation.usage,
        turns=observation.turns,
        duration_ms=round(observation.duration * 1000),
        started_at=started_at,
    )


def store_run(store: Store, result: RunResult, *, experiment_id: str, name: str, dataset: str) -> None:
    with store.write() as conn:
        insert_eval_rows(
            conn, [result.row(experiment_id=experiment_id, experiment_name=name, dataset=dataset)]
        )


@overload
async def run_experiment(
    agent: Agent[None],
    dataset: Dataset[InputT, str],
    *,
    store: Store,
    name: str | None = None,
    repeat: int = 1,
    concurrency: int = 4,
    min_pass_rate: float = 1.0,
    experiment_id: str | None = None,
) -> ExperimentResult: ...
@overload
async def run_experiment(
    agent: Agent[OutputT],
    dataset: Dataset[InputT, OutputT],
    *,
    store: Store,
    name: str | None = None,
    repeat: int = 1,
    concurrency: int = 4,
    min_pass_rate: float = 1.0,
    experiment_id: str | None = None,
) -> ExperimentResult: ...
async def run_experiment(
    agent: Agent[Any],
    dataset: Dataset[Any, Any],
    *,
    store: Store,
    name: str | None = None,
    repeat: int = 1,
    concurrency: int = 4,
    min_pass_rate: float = 1.0,
    experiment_id: str | None = None,
) -> ExperimentResult:
    """Run ``agent`` on every case of ``dataset``, ``repeat`` times each, and store the verdicts.

    The answer judged is the typed output of an agent with an
    ``output_type``, the reply's text otherwise (an ``Agent[None]`` goes
    with a ``Dataset[..., str]``). ``name`` labels the experiment (default:
    the dataset's name); ``min_pass_rate`` is the share of a case's runs
    that must pass for the case to pass.
    """
    check_run_options(repeat=repeat, concurrency=concurrency, min_pass_rate=min_pass_rate)
    experiment = claim_experiment_id(store, experiment_id)
    label = name or dataset.name
    typed = agent.template.output_type is not None
    gate = asyncio.Semaphore(concurrency)

    async def one(index: int, case: Case[Any, Any], repeat_no: int) -> RunResult:
        async with gate:
            session_id = f"eval-{experiment}-{index}-{repeat_no}"
            started_at = store.clock.now().isoformat()
            began = time.perf_counter()
            try:
                response = await agent.run(case.input, params=case.params, session=session_id, store=store)
            except Exception as exc:
                transcript = Transcript(store, session_id)
                error = f"{type_name(exc)}: {exc}"
                result = failed_run(
                    case.name,
                    index,
                    repeat_no,
                    session_id,
                    transcript,
                    error,
                    started_at,
                    time.perf_counter() - began,
                )
            else:
                seconds = time.perf_counter() - began
                transcript = Transcript(store, session_id)
                if response.paused is not None:
                    error = f"the run paused for approval of {len(response.paused.pending)} call(s)"
                    result = failed_run(
                        case.name, index, repeat_no, session_id, transcript, error, started_at, seconds
                    )
                else:
                    observation: Observation[object] = Observation(
                        case_name=case.name,
                        input=case.input,
                        expected=case.expected,
                        output=response.output if typed else response.text,
                        text=response.text,
                        usage=response.usage,
                        turns=response.turns,
                        duration=seconds,
                        session_id=session_id,
                        transcript=transcript,
                        metadata=case.metadata,
                    )
                    evaluators = cast(
                        "tuple[Evaluator[object], ...]", (*dataset.evaluators, *case.evaluators)
                    )
                    outcomes = await evaluate_run(evaluators, observation)
                    result = judged_run(observation, index, repeat_no, outcomes, started_at)
            store_run(store, result, experiment_id=experiment, name=label, dataset=dataset.name)
            return result

    runs = await asyncio.gather(
        *(one(index, case, r) for index, case in enumerate(dataset.cases) for r in range(repeat))
    )
    return ExperimentResult(
        experiment_id=experiment,
        name=label,
        dataset=dataset.name,
        runs=tuple(runs),
        min_pass_rate=min_pass_rate,
    )


@overload
def run_experiment_sync(
    agent: Agent[None],
    dataset: Dataset[InputT, str],
    *,
    store: Store,
    name: str | None = None,
    repeat: int = 1,
    concurrency: int = 4,
    min_pass_rate: float = 1.0,
    experiment_id: str | None = None,
) -> ExperimentResult: ...
@overload
def run_experiment_sync(
    agent: Agent[OutputT],
    dataset: Dataset[InputT, OutputT],
    *,
    store: Store,
    name: str | None = None,
    repeat: int = 1,
    concurrency: int = 4,
    min_pass_rate: float = 1.0,
    experiment_id: str | None = None,
) -> ExperimentResult: ...
def run_experiment_sync(
    agent: Agent[Any],
    dataset: Dataset[Any, Any],
    *,
    store: Store,
    name: str | None = None,
    repeat: int = 1,
    concurrency: int = 4,
    min_pass_rate: float = 1.0,
    experiment_id: str | None = None,
) -> ExperimentResult:
    """:func:`run_experiment` from blocking code."""
    return block_on(
        lambda: run_experiment(
            agent,
            dataset,
            store=store,
            name=name,
            repeat=repeat,
            concurrency=concurrency,
            min_pass_rate=min_pass_rate,
            experiment_id=experiment_id,
        )
    )
