"""``weakprompt worker``: a process that drains a DBOS queue of durable evaluations."""

from __future__ import annotations

import signal
import sys
import threading
from typing import TYPE_CHECKING

import click

from ..errors import ConfigurationError

if TYPE_CHECKING:
    from ..durable import Served


@click.command()
@click.option("--db", required=True, help="The weakprompt store: a SQLite file or a PostgreSQL URL.")
@click.option("--queue", "queue_name", required=True, help="The DBOS queue to drain.")
@click.option(
    "--concurrency",
    type=click.IntRange(min=1),
    help="Runs this worker takes at once (the queue's worker concurrency).",
)
@click.option("--global-concurrency", type=click.IntRange(min=1), help="Runs at once across all workers.")
@click.option(
    "--rate",
    type=(click.IntRange(min=1), click.FloatRange(min=0, min_open=True)),
    help="At most LIMIT runs start per PERIOD seconds (e.g. --rate 50 60).",
)
@click.option(
    "--poll",
    "polling_interval",
    default=0.2,
    show_default=True,
    type=click.FloatRange(min=0.01),
    help="Seconds between this worker's looks at the queue for runs to take.",
)
@click.option("--executor-id", help="This worker's name; a worker restarted with it recovers its runs.")
@click.option("--system-db", help="DBOS system database (default: beside or inside --db).")
@click.option(
    "--allow-module",
    "modules",
    multiple=True,
    metavar="PREFIX",
    help="Serve prompts and adapters from this module and the ones under it (repeatable).",
)
@click.option(
    "--serve",
    "names",
    multiple=True,
    metavar="[NAME=]MODULE:ATTR",
    help="Serve this one object, imported at start, to jobs that name it NAME (repeatable).",
)
@click.option("--path", "paths", multiple=True, help="Put this directory on sys.path (repeatable).")
@click.option("--shutdown-timeout", default=10, show_default=True, type=click.IntRange(min=0))
def worker(
    *,
    db: str,
    queue_name: str,
    concurrency: int | None,
    global_concurrency: int | None,
    rate: tuple[int, float] | None,
    polling_interval: float,
    executor_id: str | None,
    system_db: str | None,
    modules: tuple[str, ...],
    names: tuple[str, ...],
    paths: tuple[str, ...],
    shutdown_timeout: int,
) -> None:
    """Run queued evaluations until SIGTERM or SIGINT (needs weakprompt[dbos]).

    A job names its prompt and adapter by reference; the worker runs only
    those it serves: references under an --allow-module prefix (matched by
    whole dotted names), and the names given with --serve. Any other job
    fails before anything is imported, its refusal stored as its error. On
    SIGTERM the worker stops taking runs and waits up to
    --shutdown-timeout seconds for the ones in hand; those still going stay
    pending and are recovered when a worker with the same --executor-id
    starts.
    """
    try:
        from ..durable import DurableApp, QueueLimits
    except ImportError as exc:  # pragma: no cover - the extra is part of the dev install
        raise click.ClickException(f"weakprompt worker needs the extra weakprompt[dbos]: {exc}") from exc
    if not modules and not names:
        raise click.UsageError("declare what this worker serves: --allow-module PREFIX or --serve REFERENCE")
    sys.path[:0] = list(paths)
    served = _served(modules, names)
    app = DurableApp(
        db,
        system_database=system_db,
        executor_id=executor_id,
        queues=[
            QueueLimits(
                queue_name,
                worker_concurrency=concurrency,
                global_concurrency=global_concurrency,
                rate_limit=rate,
                polling_interval=polling_interval,
            )
        ],
        serves=served,
    )
    stop = threading.Event()

    def on_signal(signum: int, _frame: object) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    app.launch()
    click.echo(
        f"weakprompt worker {app.executor_id}: serving queue {queue_name!r} ({served.describe()})", err=True
    )
    try:
        while not stop.wait(0.5):
            pass
    finally:
        click.echo(f"weakprompt worker {app.executor_id}: stopping", err=True)
        app.shutdown(timeout=shutdown_timeout)


def _served(modules: tuple[str, ...], names: tuple[str, ...]) -> Served:
    """What the worker serves: the module prefixes, and each --serve object imported now."""
    from ..durable import DurableJobError, Served, load_reference

    objects: dict[str, object] = {}
    for given in names:
        name, equals, reference = given.partition("=")
        if not equals:
            name, reference = given, given
        if not name or name in objects:
            raise click.BadParameter(f"{given!r}: an empty or repeated name", param_hint="--serve")
        try:
            objects[name] = load_reference(reference, "served")
        except DurableJobError as exc:
            raise click.BadParameter(str(exc), param_hint="--serve") from exc
    try:
        return Served(objects, modules)
    except ConfigurationError as exc:
        raise click.BadParameter(str(exc), param_hint="--allow-module") from exc
