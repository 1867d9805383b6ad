"""Fanning an experiment out on a DBOS queue: each run of a case is a durable evaluation.

Every run is submitted as one durable job (``weakprompt[dbos]``,
``specs/DURABLE.md``) whose session and workflow id are the run's
(``eval-<experiment>-<case index>-<repeat>``), so any number of workers
take them, and a worker that dies leaves its runs to the others, which
finish them without repeating the calls already made. This process only
submits, waits for the results, judges each run from its transcript in the
shared store and stores the verdict, as the in-process runner does. A job
carries JSON only: the prompt and the adapter are references the workers
serve, and a case gives its user input (not params objects).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar, overload

from ..errors import ConfigurationError
from ..runtime.blocking import block_on
from ..safetext import type_name
from ..serde import parse
from ..transcript import Transcript
from .evaluators import Evaluator, Observation
from .results import ExperimentResult, RunResult
from .runner import (
    check_run_options,
    claim_experiment_id,
    evaluate_run,
    failed_run,
    judged_run,
    session_usage,
    store_run,
)

if TYPE_CHECKING:
    from ..durable import DurableClient, DurableResult
    from ..store import Store
    from .cases import Case, Dataset

__all__ = ["run_experiment_durable"]

InputT = TypeVar("InputT")
OutputT = TypeVar("OutputT")


@overload
def run_experiment_durable(
    dataset: Dataset[InputT, str],
    *,
    client: DurableClient,
    queue: str,
    prompt: str,
    adapter: str,
    store: Store,
    output_type: None = None,
    name: str | None = None,
    repeat: int = 1,
    min_pass_rate: float = 1.0,
    experiment_id: str | None = None,
    max_turns: int = 16,
    timeout: float | None = None,
) -> ExperimentResult: ...
@overload
def run_experiment_durable(
    dataset: Dataset[InputT, OutputT],
    *,
    client: DurableClient,
    queue: str,
    prompt: str,
    adapter: str,
    store: Store,
    output_type: type[OutputT],
    name: str | None = None,
    repeat: int = 1,
    min_pass_rate: float = 1.0,
    experiment_id: str | None = None,
    max_turns: int = 16,
    timeout: float | None = None,
) -> ExperimentResult: ...
def run_experiment_durable(
    dataset: Dataset[Any, Any],
    *,
    client: DurableClient,
    queue: str,
    prompt: str,
    adapter: str,
    store: Store,
    output_type: type[Any] | None = None,
    name: str | None = None,
    repeat: int = 1,
    min_pass_rate: float = 1.0,
    experiment_id: str | None = None,
    max_turns: int = 16,
    timeout: float | None = None,
) -> ExperimentResult:
    """Queue every run of ``dataset`` on ``queue`` as a durable evaluation, then judge and store each.

    ``prompt`` and ``adapter`` are references the workers serve
    (``package.module:name``); ``store`` is the store the workers write to
    (the same database). ``output_type`` parses each run's answer (its text
    is judged without one). ``timeout`` bounds the wait for each run's
    result, in seconds; a run that fails, times out or pauses fails its case
    with the error.
    """
    check_run_options(repeat=repeat, concurrency=1, min_pass_rate=min_pass_rate)
    with_params = [case.name for case in dataset.cases if case.params]
    if with_params:
        raise ConfigurationError(
            f"run_experiment_durable: a queued job carries the user input only, and case(s) "
            f"{', '.join(repr(n) for n in with_params[:5])} have params objects; run them with run_experiment"
        )
    experiment = claim_experiment_id(store, experiment_id)
    label = name or dataset.name
    submitted: list[tuple[int, Case[Any, Any], int, str, str]] = []
    for index, case in enumerate(dataset.cases):
        for repeat_no in range(repeat):
            session_id = f"eval-{experiment}-{index}-{repeat_no}"
            started_at = store.clock.now().isoformat()
            client.submit_sync(
                queue, prompt, adapter=adapter, session_id=session_id, input=case.input, max_turns=max_turns
            )
            submitted.append((index, case, repeat_no, session_id, started_at))
    evaluators_of = dataset.evaluators
    runs: list[RunResult] = []
    for index, case, repeat_no, session_id, started_at in submitted:
        transcript = Transcript(store, session_id)
        try:
            result = client.result_sync(session_id, timeout=timeout)
        except Exception as exc:
            error = f"{type_name(exc)}: {exc}"
            run = failed_run(
                case.name, index, repeat_no, session_id, transcript, error, started_at, _seconds(transcript)
            )
        else:
            run = _judged(result, case, index, repeat_no, transcript, started_at, output_type, evaluators_of)
        store_run(store, run, experiment_id=experiment, name=label, dataset=dataset.name)
        runs.append(run)
    return ExperimentResult(
        experiment_id=experiment,
        name=label,
        dataset=dataset.name,
        runs=tuple(runs),
        min_pass_rate=min_pass_rate,
    )


def _seconds(transcript: Transcript) -> float:
    """The run's time in the worker: from its first stored commit to its last (0 with none)."""
    log = transcript.log()
    return (log[-1].created_at - log[0].created_at).total_seconds() if log else 0.0


def _judged(  # noqa: PLR0917 - the run's identity, its result and how to judge it
    result: DurableResult,
    case: Case[Any, Any],
    index: int,
    repeat_no: int,
    transcript: Transcript,
    started_at: str,
    output_type: type[Any] | None,
    evaluators_of: tuple[Evaluator[Any], ...],
) -> RunResult:
    seconds = _seconds(transcript)
    if result.paused is not None:
        error = f"the run paused for approval of {len(result.paused.pending)} call(s)"
        return failed_run(
            case.name, index, repeat_no, result.session_id, transcript, error, started_at, seconds
        )
    try:
        output: object = result.text if output_type is None else parse(output_type, result.output)
    except Exception as exc:
        error = f"the answer does not parse as {output_type!r}: {type_name(exc)}: {exc}"
        return failed_run(
            case.name, index, repeat_no, result.session_id, transcript, error, started_at, seconds
        )
    usage, turns = session_usage(transcript)
    observation: Observation[object] = Observation(
        case_name=case.name,
        input=case.input,
        expected=case.expected,
        output=output,
        text=result.text,
        usage=usage,
        turns=turns,
        duration=seconds,
        session_id=result.session_id,
        transcript=transcript,
        metadata=case.metadata,
    )
    evaluators: tuple[Evaluator[object], ...] = (*evaluators_of, *case.evaluators)
    outcomes = block_on(lambda: evaluate_run(evaluators, observation))
    return judged_run(observation, index, repeat_no, outcomes, started_at)
