"""``weakprompt eval``: run a dataset against an agent, print the report, exit 1 when a case fails."""

from __future__ import annotations

from typing import Any, cast

import click

from ..agent import Agent
from ..errors import ConfigurationError, WeakpromptError
from ..evals import Dataset, compare_experiments, format_comparison, format_report, load_experiment
from ..evals.runner import run_experiment_sync
from ..store import Store
from .loading import load_attributes

__all__ = ["eval_command"]


def _resolve(value: object, reference: str, kind: type[object], what: str) -> object:
    """The object ``reference`` named: an instance of ``kind``, or a zero-argument factory of one."""
    if not isinstance(value, kind) and callable(value) and not isinstance(value, type):
        value = value()
    if not isinstance(value, kind):
        raise ConfigurationError(
            f"{reference} is a {type(value).__name__}; {what} must be a {kind.__name__} or a function "
            f"with no arguments returning one"
        )
    return value


@click.command("eval")
@click.argument("dataset_ref", metavar="DATASET")
@click.argument("agent_ref", metavar="AGENT")
@click.option("--db", help="The store to keep the results in (SQLite file or URL; default: in memory).")
@click.option("--name", help="The experiment's name (default: the dataset's).")
@click.option("--repeat", default=1, show_default=True, type=click.IntRange(min=1), help="Runs per case.")
@click.option("--concurrency", default=4, show_default=True, type=click.IntRange(min=1), help="Runs at once.")
@click.option(
    "--min-pass-rate",
    default=1.0,
    show_default=True,
    type=click.FloatRange(0.0, 1.0),
    help="Share of a case's runs that must pass for the case to pass.",
)
@click.option(
    "--compare",
    "baseline",
    metavar="EXPERIMENT",
    help="Compare this run, case by case, with a stored experiment (its id or name; needs --db).",
)
def eval_command(
    *,
    dataset_ref: str,
    agent_ref: str,
    db: str | None,
    name: str | None,
    repeat: int,
    concurrency: int,
    min_pass_rate: float,
    baseline: str | None,
) -> None:
    """Run DATASET (module:attr) against AGENT (module:attr): each is the object or a factory of it.

    Prints the report; exits 1 when a case's pass rate is below --min-pass-rate.
    """
    if baseline is not None and db is None:
        raise click.UsageError("--compare reads a stored experiment: give the store with --db")
    try:
        # One import of a module both name: its classes are the same for the answers and the cases.
        found_dataset, found_agent = load_attributes(dataset_ref, agent_ref)
        dataset = cast("Dataset[Any, Any]", _resolve(found_dataset, dataset_ref, Dataset, "DATASET"))
        agent = cast("Agent[Any]", _resolve(found_agent, agent_ref, Agent, "AGENT"))
        with Store.open(db or "sqlite://") as store:
            before = (
                None if baseline is None else load_experiment(store, baseline, min_pass_rate=min_pass_rate)
            )
            result = run_experiment_sync(
                agent,
                dataset,
                store=store,
                name=name,
                repeat=repeat,
                concurrency=concurrency,
                min_pass_rate=min_pass_rate,
            )
    except WeakpromptError as exc:
        raise click.ClickException(f"{type(exc).__name__}: {exc}") from exc
    click.echo(format_report(result))
    if before is not None:
        click.echo("")
        click.echo(format_comparison(compare_experiments(before, result)))
    if not result.passed:
        raise SystemExit(1)
