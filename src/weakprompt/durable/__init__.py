"""Durable evaluations on DBOS: runs that survive a dying worker, queues, many workers.

Needs the extra ``weakprompt[dbos]``. An evaluation runs as a DBOS
workflow whose model and tool calls are DBOS steps; a recovered workflow
continues from the transcript and replays the calls that finished from
DBOS's records instead of making them again. A worker runs only the
prompts and adapters it declares it serves (:class:`Served`). See
``specs/DURABLE.md``.
"""

from __future__ import annotations

from ._app import APPLICATION_VERSION, DurableApp, DurableClient, QueueLimits, system_database_url
from ._calls import CallLog, DurableAdapter, DurableCallError, Envelope
from ._references import DurableJobError, EvaluationJob, Served, load_reference
from ._result import DurableResult
from ._workflow import WORKFLOW_NAME, evaluation_workflow, run_job

__all__ = [
    "APPLICATION_VERSION",
    "WORKFLOW_NAME",
    "CallLog",
    "DurableAdapter",
    "DurableApp",
    "DurableCallError",
    "DurableClient",
    "DurableJobError",
    "DurableResult",
    "Envelope",
    "EvaluationJob",
    "QueueLimits",
    "Served",
    "evaluation_workflow",
    "load_reference",
    "run_job",
    "system_database_url",
]
