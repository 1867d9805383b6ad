"""Each case as a pytest test: parametrize a test over a dataset, and assert one case passes.

::

    @pytest.mark.parametrize("case", case_params(dataset))
    def test_agent(case: Case[object, str]) -> None:
        assert_case(agent, dataset, case)

pytest is imported only when :func:`case_params` is called.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar, overload

from ..store import Store
from .cases import Case, Dataset
from .report import format_report
from .runner import run_experiment_sync

if TYPE_CHECKING:
    from _pytest.mark.structures import ParameterSet

    from ..agent import Agent
    from .results import ExperimentResult

__all__ = ["assert_case", "case_params"]

InputT = TypeVar("InputT")
OutputT = TypeVar("OutputT")


def case_params(dataset: Dataset[InputT, OutputT]) -> list[ParameterSet]:
    """One ``pytest.param`` per case, its id the case's name (for ``@pytest.mark.parametrize``)."""
    import pytest

    return [pytest.param(case, id=case.name) for case in dataset.cases]


@overload
def assert_case(
    agent: Agent[None],
    dataset: Dataset[InputT, str],
    case: Case[InputT, str],
    *,
    store: Store | None = None,
    repeat: int = 1,
    min_pass_rate: float = 1.0,
) -> ExperimentResult: ...
@overload
def assert_case(
    agent: Agent[OutputT],
    dataset: Dataset[InputT, OutputT],
    case: Case[InputT, OutputT],
    *,
    store: Store | None = None,
    repeat: int = 1,
    min_pass_rate: float = 1.0,
) -> ExperimentResult: ...
def assert_case(
    agent: Agent[Any],
    dataset: Dataset[Any, Any],
    case: Case[Any, Any],
    *,
    store: Store | None = None,
    repeat: int = 1,
    min_pass_rate: float = 1.0,
) -> ExperimentResult:
    """Run ``case`` with the dataset's evaluators (stored in ``store``, or a store in memory); raise
    ``AssertionError`` with the report when it does not pass."""
    one = Dataset(name=dataset.name, cases=[case], evaluators=dataset.evaluators)
    owned = store is None
    used = Store.open("sqlite://") if store is None else store
    try:
        result = run_experiment_sync(
            agent,
            one,
            store=used,
            name=f"{dataset.name}:{case.name}",
            repeat=repeat,
            min_pass_rate=min_pass_rate,
        )
    finally:
        if owned:
            used.close()
    if not result.passed:
        raise AssertionError(format_report(result))
    return result
