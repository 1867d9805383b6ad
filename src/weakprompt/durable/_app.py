"""Configure DBOS for weakprompt, run evaluations durably, serve and feed queues.

Names follow the library's rule: the coroutine has the plain name, its
blocking twin ends in ``_sync`` (``DurableApp.run`` / ``run_sync``). The
client's ``submit`` and ``result`` block in this release and warn: they
become coroutines in the next one (``submit_sync`` / ``result_sync`` block).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import socket
import threading
import uuid
from collections.abc import Sequence
from typing import Any, cast

import attrs
import sqlalchemy as sa
from dbos import DBOS, DBOSClient, DBOSConfig, EnqueueOptions, SetWorkflowID, WorkflowStatus, error
from sqlalchemy import event

from ..errors import ConfigurationError
from ..jsontypes import JSONObject, JSONValue
from ..lazy import deprecated_alias
from ..runtime.approval import Decision, PausedRun, decisions_to_json
from ..runtime.blocking import block_on
from ..runtime.pause_errors import ResumeError
from ..runtime.resume import check_decisions_for
from ..store import Store
from ..store.engine import normalize_url
from ._liveness import Liveness
from ._references import EvaluationJob, Served
from ._result import DurableResult
from ._workflow import WORKFLOW_NAME, bind_store, evaluation_workflow

__all__ = ["APPLICATION_VERSION", "DurableApp", "DurableClient", "QueueLimits", "system_database_url"]

APPLICATION_VERSION = "weakprompt-durable-1"
"""Every worker and client agrees on this DBOS application version, so any worker runs any job."""

_APP_NAME = "weakprompt"

logger = logging.getLogger(__name__)


def system_database_url(db: str) -> str:
    """The DBOS system database that goes with the weakprompt store ``db``.

    PostgreSQL: the same database (DBOS keeps its tables in its own schema,
    ``dbos``). SQLite: a file beside the store's (``<file>.dbos``): one
    writer at a time per SQLite file, so the two would wait on each other.
    """
    url = normalize_url(db)
    if url.startswith("postgresql"):
        return "postgresql://" + url.split("://", 1)[1]
    if url.startswith("sqlite:///") and len(url) > len("sqlite:///"):
        return url + ".dbos"
    raise ConfigurationError(
        f"durable runs need a database both processes can reach, not {db!r}: "
        "a SQLite file or a PostgreSQL URL"
    )


def _sqlite_engine(url: str) -> sa.Engine | None:
    """The engine for a SQLite system database: WAL, and no sync at each commit.

    DBOS would open the file with its rollback journal and a full sync per
    commit, and a step costs two commits. In WAL mode (a property of the
    file, set once) with ``synchronous=NORMAL``, a commit is not synced
    until the next checkpoint: a process that dies loses nothing; a machine
    that loses power may lose the last records, and the calls they recorded
    run again (as a call cut short by a crash does). The rest is as DBOS
    sets its own SQLite connections: IMMEDIATE transactions, a 30 s busy
    timeout, foreign keys on.
    """
    if not url.startswith("sqlite:///"):
        return None
    import sqlite3

    with contextlib.closing(sqlite3.connect(url.removeprefix("sqlite:///"), timeout=30)) as conn:
        conn.execute("PRAGMA journal_mode=WAL")
    engine = sa.create_engine(url)
    event.listen(engine, "connect", _configure_sqlite)
    return engine


def _configure_sqlite(dbapi_conn: Any, _record: object) -> None:
    dbapi_conn.isolation_level = "IMMEDIATE"
    dbapi_conn.execute("PRAGMA busy_timeout=30000")
    dbapi_conn.execute("PRAGMA foreign_keys=ON")
    dbapi_conn.execute("PRAGMA synchronous=NORMAL")


@attrs.frozen
class QueueLimits:
    """A queue and its limits: per worker, across all workers, a start rate (``limit`` per ``period`` s)."""

    name: str
    worker_concurrency: int | None = None
    global_concurrency: int | None = None
    rate_limit: tuple[int, float] | None = None
    polling_interval: float = 0.2


def _job(
    prompt: str,
    *,
    adapter: str,
    session_id: str,
    params: JSONObject | None,
    input: str | None,
    max_turns: int,
) -> EvaluationJob:
    return EvaluationJob(
        prompt=prompt,
        adapter=adapter,
        session_id=session_id,
        params=dict[str, JSONValue]() if params is None else params,
        input=input,
        max_turns=max_turns,
    )


def _decision_job(
    paused: DurableResult | PausedRun,
    decisions: Sequence[Decision],
    *,
    prompt: str,
    adapter: str,
    params: JSONObject | None,
    decided_by: str | None,
    max_turns: int,
) -> tuple[EvaluationJob, str]:
    pause = _pause_of(paused)
    job = attrs.evolve(
        _job(
            prompt,
            adapter=adapter,
            session_id=pause.session_id,
            params=params,
            input=None,
            max_turns=max_turns,
        ),
        decisions=decisions_to_json(decisions),
        decided_by=decided_by,
        pause_seq=pause.seq,
    )
    return job, f"{pause.session_id}:pause-{pause.seq}:{uuid.uuid4().hex[:16]}"


def _pause_of(paused: DurableResult | PausedRun) -> PausedRun:
    pause = paused.paused if isinstance(paused, DurableResult) else paused
    if pause is None:
        raise ConfigurationError("decide: the result given is not paused")
    return pause


class DurableClient:
    """Submit evaluations to a queue and read their results, from any process (runs nothing itself)."""

    def __init__(self, db: str, *, system_database: str | None = None) -> None:
        self._db = db
        self._client = DBOSClient(
            system_database_url=system_database or system_database_url(db), application_name=_APP_NAME
        )

    def close(self) -> None:
        self._client.destroy()

    def submit_sync(
        self,
        queue: str,
        prompt: str,
        *,
        adapter: str,
        session_id: str,
        params: JSONObject | None = None,
        input: str | None = None,
        max_turns: int = 16,
        workflow_id: str | None = None,
    ) -> str:
        """Queue one evaluation; its workflow id (``workflow_id``, default: ``session_id``)."""
        job = _job(
            prompt, adapter=adapter, session_id=session_id, params=params, input=input, max_turns=max_turns
        )
        return self._enqueue(queue, job, workflow_id or session_id)

    def decide(
        self,
        queue: str,
        paused: DurableResult | PausedRun,
        decisions: Sequence[Decision],
        *,
        prompt: str,
        adapter: str,
        params: JSONObject | None = None,
        decided_by: str | None = None,
        max_turns: int = 16,
    ) -> str:
        """Queue the continuation of a paused run with ``decisions``; its workflow id.

        The decisions are checked against the store first (the pause still
        waits, nothing decided it, one decision per pending call with its
        token): a refused one raises :class:`ResumeError` at once and
        queues nothing. Each continuation gets its own id,
        ``<session>:pause-<seq>:<random>``, and a pause has at most one
        queued or running on ``queue`` at a time (another is refused the
        same way); of two on different queues, the first to run claims the
        pause and the other fails with ``ResumeError``.
        """
        pause = _pause_of(paused)
        self._check(pause, decisions, decided_by)
        job, workflow_id = _decision_job(
            paused,
            decisions,
            prompt=prompt,
            adapter=adapter,
            params=params,
            decided_by=decided_by,
            max_turns=max_turns,
        )
        one_at_a_time = f"{pause.session_id}:pause-{pause.seq}"
        try:
            return self._enqueue(queue, job, workflow_id, deduplication_id=one_at_a_time)
        except error.DBOSQueueDeduplicatedError:
            waiting = self._client.list_workflows(
                workflow_id_prefix=one_at_a_time + ":",
                status=["ENQUEUED", "PENDING"],
                queue_name=queue,
                load_input=False,
                load_output=False,
            )
            raise ResumeError(
                f"pause {pause.seq} of session {pause.session_id!r} already has a continuation queued "
                f"or running on {queue!r} ({', '.join(w.workflow_id for w in waiting) or 'just ended'}); "
                "nothing was queued: wait for its result"
            ) from None

    def _check(self, pause: PausedRun, decisions: Sequence[Decision], decided_by: str | None) -> None:
        store = Store.open(self._db, read_only=True)
        try:
            check_decisions_for(store, pause.session_id, decisions, seq=pause.seq, decided_by=decided_by)
        finally:
            store.close()

    def _enqueue(
        self, queue: str, job: EvaluationJob, workflow_id: str, *, deduplication_id: str | None = None
    ) -> str:
        options: EnqueueOptions = {
            "queue_name": queue,
            "workflow_name": WORKFLOW_NAME,
            "workflow_id": workflow_id,
            "app_version": APPLICATION_VERSION,
        }
        if deduplication_id is not None:  # one workflow with it queued or running on the queue at a time
            options["deduplication_id"] = deduplication_id
        self._client.enqueue(options, job.to_json())
        return workflow_id

    def result_sync(self, workflow_id: str, *, timeout: float | None = None) -> DurableResult:
        """The result of ``workflow_id``, waiting for it; a failed run raises its stored error."""
        handle: Any = self._client.retrieve_workflow(workflow_id)  # pyright: ignore[reportUnknownVariableType]
        return cast(
            "DurableResult",
            handle.get_result(polling_interval_sec=0.05) if timeout is None else _wait(handle, timeout),
        )

    async def _submit(
        self,
        queue: str,
        prompt: str,
        *,
        adapter: str,
        session_id: str,
        params: JSONObject | None = None,
        input: str | None = None,
        max_turns: int = 16,
        workflow_id: str | None = None,
    ) -> str:
        """:meth:`submit_sync` for the event loop (the database work runs on a thread)."""
        return await asyncio.to_thread(
            functools.partial(
                self.submit_sync,
                queue,
                prompt,
                adapter=adapter,
                session_id=session_id,
                params=params,
                input=input,
                max_turns=max_turns,
                workflow_id=workflow_id,
            )
        )

    async def _result(self, workflow_id: str, *, timeout: float | None = None) -> DurableResult:
        """:meth:`result_sync` for the event loop."""
        return await asyncio.to_thread(functools.partial(self.result_sync, workflow_id, timeout=timeout))

    # ``submit`` and ``result`` become coroutines next release (async functions have the plain name);
    # a name cannot change its meaning behind an alias, so for one release they block and warn.
    submit = deprecated_alias(
        submit_sync,
        "submit",
        "DurableClient.submit blocks in this release and becomes a coroutine in the next one; "
        "call submit_sync to block",
    )
    result = deprecated_alias(
        result_sync,
        "result",
        "DurableClient.result blocks in this release and becomes a coroutine in the next one; "
        "call result_sync to block",
    )
    submit_async = deprecated_alias(
        _submit,
        "submit_async",
        "DurableClient.submit_async is deprecated and will be removed in the next release, when submit "
        "becomes the coroutine; call submit_sync (from async code, through asyncio.to_thread)",
    )
    result_async = deprecated_alias(
        _result,
        "result_async",
        "DurableClient.result_async is deprecated and will be removed in the next release, when result "
        "becomes the coroutine; call result_sync (from async code, through asyncio.to_thread)",
    )

    def status(self, workflow_id: str) -> str:
        """DBOS's status of ``workflow_id`` (``ENQUEUED``, ``PENDING``, ``SUCCESS``, ``ERROR``, ...)."""
        return self.workflow(workflow_id).status

    def workflow(self, workflow_id: str) -> WorkflowStatus:
        """DBOS's record of ``workflow_id``: status, executor, times, error."""
        return self._client.retrieve_workflow(workflow_id).get_status()


def _wait(handle: Any, timeout: float) -> object:
    import time

    deadline = time.monotonic() + timeout
    while handle.get_status().status in ("ENQUEUED", "PENDING", "DELAYED"):
        if time.monotonic() > deadline:
            raise TimeoutError(f"workflow {handle.get_workflow_id()!r} did not finish in {timeout} s")
        time.sleep(0.05)
    return handle.get_result()


class DurableApp:
    """This process's DBOS: runs durable evaluations here, and serves queues as a worker.

    One per process (DBOS is a process-wide singleton). ``db`` is the
    weakprompt store; the DBOS system database defaults to
    :func:`system_database_url` of it. ``executor_id`` names this worker:
    a worker restarted with the same id recovers the runs it had in hand.
    ``serves`` declares the prompts and adapters this process runs (the
    default, nothing: every job is refused, its refusal stored as its error).
    """

    def __init__(
        self,
        db: str,
        *,
        system_database: str | None = None,
        executor_id: str | None = None,
        queues: Sequence[QueueLimits] = (),
        listen: bool = True,
        recovery_interval: float | None = 2.0,
        serves: Served | None = None,
    ) -> None:
        self.db = db
        self.serves = Served() if serves is None else serves
        self.system_database = system_database or system_database_url(db)
        self.executor_id = executor_id or f"{socket.gethostname()}-{os.getpid()}"
        self.queues = tuple(queues)
        self.listen = listen
        self.recovery_interval = recovery_interval
        self._store: Store | None = None
        self._liveness: Liveness | None = None
        self._engine: sa.Engine | None = None
        self._stop = threading.Event()
        self._watcher: threading.Thread | None = None

    def launch(self) -> None:
        """Open the store, start DBOS (recovering this executor's unfinished runs), register the queues."""
        self._store = Store.open(self.db)
        bind_store(self._store, self.serves)
        self._liveness = Liveness(self._store.url)
        self._liveness.hold(self.executor_id)
        config: DBOSConfig = {
            "name": _APP_NAME,
            "system_database_url": self.system_database,
            "executor_id": self.executor_id,
            "application_version": APPLICATION_VERSION,
            "log_level": os.environ.get("WEAKPROMPT_DBOS_LOG_LEVEL", "WARNING"),
        }
        self._engine = _sqlite_engine(self.system_database)
        if self._engine is not None:
            config["system_database_engine"] = self._engine
        else:
            # PostgreSQL: this process's records are committed without waiting for the WAL flush
            # (the same trade as SQLite's above; a client's submits still wait for it)
            config["db_engine_kwargs"] = {
                "pool_pre_ping": False,
                "connect_args": {
                    "application_name": "weakprompt-worker",
                    "options": "-c synchronous_commit=off",
                },
            }
        DBOS(config=config)
        DBOS.listen_queues([q.name for q in self.queues] if self.listen else [])
        DBOS.launch()
        for queue in self.queues:
            DBOS.register_queue(
                queue.name,
                worker_concurrency=queue.worker_concurrency,
                global_concurrency=queue.global_concurrency,
                limiter=None
                if queue.rate_limit is None
                else {"limit": queue.rate_limit[0], "period": queue.rate_limit[1]},
                polling_interval_sec=queue.polling_interval,
                on_conflict="always_update",
            )
        if self.recovery_interval is not None and self.queues and self.listen:
            self._stop.clear()
            self._watcher = threading.Thread(target=self._watch, name="weakprompt-recovery", daemon=True)
            self._watcher.start()

    def recover_dead_workers(self) -> list[str]:
        """Hand the runs of every worker that died back to the queue; the ids of those workers."""
        assert self._liveness is not None, "launch() first"
        pending = DBOS.list_workflows(
            status="PENDING", name=WORKFLOW_NAME, load_input=False, load_output=False
        )
        owners = sorted(
            {w.executor_id for w in pending if w.executor_id and w.executor_id != self.executor_id}
        )
        recovered: list[str] = []
        for owner in owners:
            with self._liveness.if_dead(owner) as dead:
                if dead:
                    DBOS._recover_pending_workflows([owner])  # pyright: ignore[reportPrivateUsage]
                    recovered.append(owner)
        return recovered

    def _watch(self) -> None:
        interval = self.recovery_interval or 2.0
        while not self._stop.wait(interval):
            try:
                self.recover_dead_workers()
            except Exception:  # pragma: no cover - a database hiccup: try again next round
                logger.warning("recovering the runs of dead workers failed", exc_info=True)

    def shutdown(self, *, timeout: int = 10) -> None:
        """Stop DBOS; runs still going after ``timeout`` s stay pending for this executor's next start."""
        self._stop.set()
        if self._watcher is not None:
            self._watcher.join()
            self._watcher = None
        DBOS.destroy(workflow_completion_timeout_sec=timeout)
        if self._engine is not None:  # ours, not DBOS's: DBOS leaves a given engine open
            self._engine.dispose()
            self._engine = None
        bind_store(None)
        if self._liveness is not None:
            self._liveness.release()
            self._liveness = None
        if self._store is not None:
            self._store.close()
            self._store = None

    async def run(
        self,
        prompt: str,
        *,
        adapter: str,
        session_id: str,
        params: JSONObject | None = None,
        input: str | None = None,
        max_turns: int = 16,
        workflow_id: str | None = None,
    ) -> DurableResult:
        """Run one evaluation durably in this process and wait for its result.

        ``prompt`` and ``adapter`` are references this process serves
        (:class:`Served`); the workflow id is ``workflow_id``, default
        ``session_id``: a second run with the same id gives the first one's
        result without running again.
        """
        job = _job(
            prompt, adapter=adapter, session_id=session_id, params=params, input=input, max_turns=max_turns
        )
        with SetWorkflowID(workflow_id or session_id):
            handle = await DBOS.start_workflow_async(evaluation_workflow, job.to_json())
        return await handle.get_result()

    def run_sync(
        self,
        prompt: str,
        *,
        adapter: str,
        session_id: str,
        params: JSONObject | None = None,
        input: str | None = None,
        max_turns: int = 16,
        workflow_id: str | None = None,
    ) -> DurableResult:
        """:meth:`run`, blocking: it drives that coroutine (on a thread of its own inside a running loop)."""
        return block_on(
            lambda: self.run(
                prompt,
                adapter=adapter,
                session_id=session_id,
                params=params,
                input=input,
                max_turns=max_turns,
                workflow_id=workflow_id,
            )
        )

    evaluate = deprecated_alias(
        run_sync,
        "evaluate",
        "DurableApp.evaluate is deprecated and will be removed in the next release; call run_sync "
        "(or await run)",
    )
    evaluate_async = deprecated_alias(
        run,
        "evaluate_async",
        "DurableApp.evaluate_async is deprecated and will be removed in the next release; await run",
    )
