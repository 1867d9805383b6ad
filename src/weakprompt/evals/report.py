"""Plain-text reports of an experiment and of a comparison, safe for any terminal or CI log.

Case names, reasons and errors may come from a model or a tool: every one
goes through :func:`~weakprompt.safetext.terminal_text`, so no control
character reaches the terminal.
"""

from __future__ import annotations

from ..safetext import terminal_text
from .results import Comparison, ExperimentResult

__all__ = ["format_comparison", "format_report"]


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def _cut(text: str, width: int = 100) -> str:
    text = terminal_text(" ".join(text.split()))
    return text if len(text) <= width else text[: width - 3] + "..."


def format_report(result: ExperimentResult) -> str:
    """One line per case (pass rate, runs, mean time), each failure's reason, and the verdict."""
    lines = [
        f"experiment {_cut(result.name, 60)} ({result.experiment_id}) on dataset {_cut(result.dataset, 60)}",
    ]
    for case in result.cases:
        mean_ms = sum(r.duration_ms for r in case.runs) / len(case.runs)
        mark = "PASS" if case.pass_rate >= result.min_pass_rate else "FAIL"
        lines.append(
            f"  {mark}  {_cut(case.case_name, 50)}  {case.passes}/{len(case.runs)} ({_rate(case.pass_rate)})"
            f"  {mean_ms:.0f} ms"
        )
        if mark == "PASS":
            continue
        for run in case.runs:
            if run.error is not None:
                lines.append(f"        run {run.repeat}: error: {_cut(run.error)}")
            for outcome in run.failures:
                lines.append(
                    f"        run {run.repeat}: {_cut(outcome.evaluator, 40)}: {_cut(outcome.reason)}"
                )
    usage = result.usage
    failed = len(result.failed_cases)
    lines.append(
        f"{len(result.cases) - failed}/{len(result.cases)} case(s) passed, {_rate(result.pass_rate)} of "
        f"{len(result.runs)} run(s); {usage.model_calls} model call(s), {usage.total_tokens} token(s)"
    )
    lines.append(
        "passed" if result.passed else f"FAILED: {failed} case(s) below {_rate(result.min_pass_rate)}"
    )
    return "\n".join(lines)


def format_comparison(comparison: Comparison) -> str:
    """One line per case: A's and B's pass rates and what changed; the fixed and broken counted."""
    a, b = comparison.a, comparison.b
    lines = [f"A: {_cut(a.name, 60)} ({a.experiment_id})   B: {_cut(b.name, 60)} ({b.experiment_id})"]
    for row in comparison.cases:
        scores = sorted(set(row.scores_a) | set(row.scores_b))
        nan = float("nan")
        detail = "".join(
            f"  {_cut(s, 30)} {row.scores_a.get(s, nan):.2f}->{row.scores_b.get(s, nan):.2f}" for s in scores
        )
        lines.append(
            f"  {row.change:<7} {_cut(row.case_name, 50)}  {_rate(row.rate_a)} -> {_rate(row.rate_b)}{detail}"
        )
    counts = {change: len(comparison.changed(change)) for change in ("fixed", "broken", "better", "worse")}
    lines.append(
        ", ".join(f"{n} {change}" for change, n in counts.items())
        + f"; pass rate {_rate(a.pass_rate)} -> {_rate(b.pass_rate)}"
    )
    return "\n".join(lines)
