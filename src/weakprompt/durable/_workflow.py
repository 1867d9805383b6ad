"""The durable evaluation: one DBOS workflow per evaluation, continued from the transcript.

How a workflow attempt proceeds (``specs/DURABLE.md``):

1. read its call log back (``_calls.CallLog.replay``);
2. the first attempt's mark at the end of the log keeps the transcript
   head it started from;
3. if nothing but the system prompt was stored since, :func:`run` the
   evaluation; otherwise an earlier attempt stored its input or turns:
   continue from the last stored turn with :func:`resume_with` (crash
   recovery), whose calls are served from the log where they finished before;
4. the session starts from the state the last recorded tool call left.

The transcript stays the one record of the conversation; the log only
saves the calls that finished but whose turn was not stored yet.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import attrs
from dbos import DBOS

from ..runtime.approval import PausedRun, ResumeError, decisions_from_json
from ..runtime.loop import run_with
from ..runtime.resume import paused_run, resume_with
from ..runtime.run_settings import RunSettings
from ..serde import dump
from ..session import Session, restore_state
from ..transcript import Transcript
from ._calls import CallLog
from ._references import DurableJobError, EvaluationJob, Served
from ._result import DurableResult

if TYPE_CHECKING:
    from ..prompt import Prompt
    from ..store import Store

__all__ = ["WORKFLOW_NAME", "evaluation_workflow", "run_job"]

WORKFLOW_NAME = "weakprompt.durable.evaluation"

_STORE: list[Store] = []  # the store of this process's DurableApp (set by launch)
_SERVED: list[Served] = []  # what this process's DurableApp serves (set by launch)


def bind_store(store: Store | None, served: Served | None = None) -> None:
    """Make ``store`` and ``served`` the ones this process's workflows use (``None``: none)."""
    _STORE.clear()
    _SERVED.clear()
    if store is not None:
        _STORE.append(store)
    if served is not None:
        _SERVED.append(served)


def _store() -> Store:
    if not _STORE:
        raise DurableJobError("no weakprompt store is configured in this process (launch a DurableApp)")
    return _STORE[0]


@DBOS.workflow(name=WORKFLOW_NAME)
async def evaluation_workflow(job_json: str) -> DurableResult:
    """Run (or continue) the evaluation ``job_json`` describes (:class:`EvaluationJob` as JSON)."""
    return await run_job(EvaluationJob.from_json(job_json), _store(), _SERVED[0] if _SERVED else Served())


def _where(store: Store, session_id: str) -> tuple[str | None, PausedRun | None]:
    """The session's transcript head and the pause it waits in, if any."""
    return Transcript(store, session_id).head, paused_run(store, session_id)


def _begun(store: Store, session_id: str, start: str | None) -> bool:
    """Whether the run stored anything after ``start`` but its system prompt (its input, a turn).

    A crash between the system prompt's commit and the input's leaves only
    the former: the run starts over (``run`` leaves an equal system prompt
    as it is), since a resume would go on without the input.
    """
    log = Transcript(store, session_id).log()
    hashes = [commit.hash for commit in log]
    after = hashes.index(start) + 1 if start in hashes else 0
    return any(commit.content.role != "system" for commit in log[after:])


def _final_text(store: Store, session_id: str) -> str | None:
    """The final answer the session's last run stored, if it ended with one."""
    messages = Transcript(store, session_id).compile().messages
    last = messages[-1] if messages else None
    if last is None or last.role != "assistant" or last.tool_calls:
        return None
    return last.content


async def run_job(job: EvaluationJob, store: Store, served: Served) -> DurableResult:
    """Run or continue ``job`` on ``store``; its references are resolved only from ``served``."""
    prompt, adapter = job.load(served)
    head, waiting = await asyncio.to_thread(_where, store, job.session_id)
    log = await CallLog.replay(head)
    session = Session(session_id=job.session_id)
    if log.last_state is not None:
        restore_state(session, log.last_state)
    start = log.start
    durable = log.adapter(adapter)
    settings = RunSettings(
        adapter=durable,
        session=session,
        store=store,
        max_turns=job.max_turns,
        concurrent_tools=False,  # one call after another: the log's keys follow call order
        tool_wrapper=log.wrap_tool,
    )
    continuing = log.attempts > 1  # an earlier attempt of this workflow began (and may have claimed)
    if job.decisions is not None and not continuing and (waiting is None or waiting.seq != job.pause_seq):
        # another continuation (or a resume outside DBOS) decided this pause first: this one runs nothing
        raise ResumeError(
            f"pause {job.pause_seq} of session {job.session_id!r} was decided before this "
            "continuation started; nothing is waiting for its decisions"
        )
    try:
        if job.decisions is not None:
            if waiting is not None and waiting.seq == job.pause_seq:
                response = await resume_with(
                    job.session_id,
                    decisions_from_json(job.decisions),
                    prompt=prompt,
                    settings=settings,
                    decided_by=job.decided_by,
                )
            elif waiting is not None:  # decided, and paused again before this attempt ended
                return _paused_result(job, waiting, head)
            else:
                response = await resume_with(job.session_id, (), prompt=prompt, settings=settings)
        elif head == start or not await asyncio.to_thread(_begun, store, job.session_id, start):
            # nothing of this run is stored yet (at most its system prompt)
            response = await run_with(prompt, attrs.evolve(settings, input=job.input))
        elif waiting is not None:  # the run paused before this attempt ended
            return _paused_result(job, waiting, head)
        else:
            response = await resume_with(job.session_id, (), prompt=prompt, settings=settings)
    except ResumeError:
        if job.decisions is not None and not continuing:  # refused (lost the claim): not this one's answer
            raise
        text = await asyncio.to_thread(_final_text, store, job.session_id)
        if text is None:
            raise
        return _finished(prompt, session, text, head)  # the answer was stored before the crash
    return DurableResult.from_response(response)


def _paused_result(job: EvaluationJob, waiting: PausedRun, head: str | None) -> DurableResult:
    return DurableResult(session_id=job.session_id, text="", output=None, head=head, turns=0, paused=waiting)


def _finished(prompt: Prompt[Any], session: Session, text: str, head: str | None) -> DurableResult:
    rendered = prompt.render(session)
    output = None if rendered.output_type is None else dump(rendered.parse_output(text))
    return DurableResult(session_id=session.session_id, text=text, output=output, head=head, turns=0)
