"""Evals: typed datasets, evaluators read from the transcript, experiments stored and compared.

See ``specs/EVALS.md`` and the guide's "Evals" page. Not imported by
``import weakprompt``: ``from weakprompt.evals import ...`` loads it (and the
store) when asked. The DBOS fan-out (:func:`run_experiment_durable`) needs
``weakprompt[dbos]``.
"""

from __future__ import annotations

from .as_tests import assert_case, case_params
from .cases import Case, Dataset, dataset_from_sessions
from .evaluators import (
    Called,
    CalledBefore,
    Evaluator,
    ExpectedOutput,
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
from .fanout import run_experiment_durable
from .judge import JudgeVerdict, LLMJudge
from .report import format_comparison, format_report
from .results import (
    CaseComparison,
    CaseSummary,
    Change,
    Comparison,
    ExperimentResult,
    RunResult,
    compare_experiments,
    list_experiments,
    load_experiment,
)
from .runner import run_experiment, run_experiment_sync

__all__ = [
    "Called",
    "CalledBefore",
    "Case",
    "CaseComparison",
    "CaseSummary",
    "Change",
    "Comparison",
    "Dataset",
    "Evaluator",
    "ExpectedOutput",
    "ExperimentResult",
    "JudgeVerdict",
    "LLMJudge",
    "MaxCost",
    "MaxLatency",
    "MaxTokens",
    "MaxTurns",
    "NeverCalled",
    "Observation",
    "Outcome",
    "OutputEquals",
    "OutputSatisfies",
    "RunResult",
    "assert_case",
    "case_params",
    "compare_experiments",
    "dataset_from_sessions",
    "format_comparison",
    "format_report",
    "list_experiments",
    "load_experiment",
    "run_experiment",
    "run_experiment_durable",
    "run_experiment_sync",
]
