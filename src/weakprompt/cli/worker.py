"""``weakprompt worker``: a process that drains a DBOS queue of durable evaluations."""

from __future__ import annotations

import signal
import sys
import threading

import click


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
    paths: tuple[str, ...],
    shutdown_timeout: int,
) -> None:
    """Run queued evaluations until SIGTERM or SIGINT (needs weakprompt[dbos]).

    Prompts and adapters are imported by the references the jobs name. On
    SIGTERM the worker stops taking runs and waits up to
    --shutdown-timeout seconds for the ones in hand; those still going stay
    pending and are recovered when a worker with the same --executor-id
    starts.
    """
    try:
        from ..durable import DurableApp, QueueLimits
    except ImportError as exc:  # pragma: no cover - the extra is part of the dev install
        raise click.ClickException(f"weakprompt worker needs the extra weakprompt[dbos]: {exc}") from exc
    sys.path[:0] = list(paths)
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
    )
    stop = threading.Event()

    def on_signal(signum: int, _frame: object) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    app.launch()
    click.echo(f"weakprompt worker {app.executor_id}: serving queue {queue_name!r}", err=True)
    try:
        while not stop.wait(0.5):
            pass
    finally:
        click.echo(f"weakprompt worker {app.executor_id}: stopping", err=True)
        app.shutdown(timeout=shutdown_timeout)
