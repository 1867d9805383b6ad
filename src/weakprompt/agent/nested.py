"""Pauses inside agents called as tools: what waits anywhere in the tree, and resuming it.

See ``specs/SUBAGENTS.md``.

A child that pauses for decisions makes its parent's call wait (a deferred
call), and the parent pauses too. :func:`waiting_calls` lists the calls
that wait anywhere below a paused run (with their session and path), and
``Agent.resume`` takes decisions for any of them: :func:`resume_tree`
resumes each waiting child with the decisions that are its own (a child
continues where it stopped, and its own children before it), supplies each
finished child's answer as its call's result, then resumes the parent. A
child that pauses again keeps the parent paused; nothing runs twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypeVar, cast

import attrs

from ..errors import ConfigurationError, DeadlineExceededError, WeakpromptError
from ..events import ChildEvent, PendingCall
from ..runtime import PromptResponse, ResumeError, resume_with
from ..runtime.approval import Decision, PausedRun, Supply
from ..runtime.child_runs import current_path, latest_child_session, prelinked, starting_child
from ..runtime.pause_reads import paused_run
from ..safetext import describe_exception
from ..transcript.transcript import Transcript
from ..usage import Usage
from .as_tool import AgentCall, result_text, session_taken

if TYPE_CHECKING:
    from ..prompt import Prompt
    from ..runtime import RunSettings
    from ..runtime.run_events import EventCallback
    from ..store import Store
    from .agent import Agent
    from .options import RunOverrides

__all__ = ["WaitingCall", "resume_tree", "waiting_calls"]

OutputT = TypeVar("OutputT")


@attrs.frozen
class WaitingCall:
    """A call that waits for a decision somewhere in a paused tree of runs.

    ``session_id`` is the run it belongs to; ``path`` the steps from the
    root run down to it (``"tool:call_id"`` each; empty for the root's own
    calls). Decide it with its ``call``'s id and token, as any pending call.
    """

    session_id: str
    path: tuple[str, ...]
    call: PendingCall


@attrs.frozen
class _Child:
    """A waiting call of a paused run that is an agent's run of its own."""

    pending: PendingCall
    handler: AgentCall[Any]
    session_id: str


def _children(prompt: Prompt[Any], store: Store, paused: PausedRun) -> list[_Child]:
    children: list[_Child] = []
    for pending in paused.pending:
        tool = prompt.template.tool_named(pending.tool)
        handler: object = None if tool is None else tool.handler
        if pending.kind != "deferred" or not isinstance(handler, AgentCall):
            continue
        call = cast("AgentCall[Any]", handler)
        child = latest_child_session(paused.session_id, call.name, pending.call_id, session_taken(store))
        children.append(_Child(pending, call, child))
    return children


def waiting_calls(
    agent: Agent[Any], session_id: str, *, store: Store | None = None
) -> tuple[WaitingCall, ...]:
    """Every call that waits for a person in ``agent``'s paused run ``session_id`` and the agents it called.

    A call of an agent that waits shows as the calls its run waits on, at
    any depth (``WaitingCall.path`` says where): decide those, and give the
    decisions to ``agent.resume``. ``store`` is the agent's unless given.
    """
    used = store if store is not None else agent.store
    if used is None:
        raise ConfigurationError(
            "waiting_calls: a paused run is read from a store, and neither the Agent nor this call has store="
        )
    return _waiting_calls(agent.prompt, used, session_id)


def _waiting_calls(
    prompt: Prompt[Any],
    store: Store,
    session_id: str,
    *,
    decisions: Sequence[Decision] = (),
    path: tuple[str, ...] = (),
) -> tuple[WaitingCall, ...]:
    """:func:`waiting_calls`; a call decided in ``decisions`` itself (``Supply``, ``Deny``) shows as is."""
    paused = paused_run(store, session_id)
    if paused is None:
        return ()
    below = {child.pending.call_id: child for child in _children(prompt, store, paused)}
    found: list[WaitingCall] = []
    for pending in paused.pending:
        child = below.get(pending.call_id)
        decided = any(_decides(d, pending) for d in decisions)
        if child is not None and not decided:
            if paused_run(store, child.session_id) is None:
                continue  # it finished on an earlier resume: its stored answer is the call's result
            step = f"{child.handler.name}:{pending.call_id}"
            found.extend(
                _waiting_calls(
                    child.handler.agent.prompt,
                    store,
                    child.session_id,
                    decisions=decisions,
                    path=(*path, step),
                )
            )
        else:
            found.append(WaitingCall(session_id, path, pending))
    return tuple(found)


def _decides(decision: Decision, pending: PendingCall) -> bool:
    return decision.call_id == pending.call_id and decision.token == pending.token


def _check_tree(waiting: Sequence[WaitingCall], decisions: Sequence[Decision], session_id: str) -> None:
    """Every waiting call decided once, every decision for a waiting call: refused before anything runs."""
    for decision in decisions:
        fits = [w for w in waiting if _decides(decision, w.call)]
        if not fits:
            raise ResumeError(
                f"resume: the decision for call {decision.call_id!r} fits no call waiting in session "
                f"{session_id!r} or in the agents it called (a wrong token, or a call decided already)"
            )
    for call in waiting:
        count = sum(1 for d in decisions if _decides(d, call.call))
        if count != 1:
            where = " > ".join(call.path) or "the run itself"
            problem = "has no decision" if count == 0 else f"has {count} decisions"
            raise ResumeError(
                f"resume: call {call.call.call_id!r} ({call.call.tool}) waiting in session "
                f"{call.session_id!r} ({where}) {problem}; every waiting call needs exactly one"
            )


async def resume_tree(
    prompt: Prompt[OutputT],
    settings: RunSettings,
    session_id: str,
    decisions: Sequence[Decision],
    *,
    session_given: bool,
    decided_by: str | None,
) -> PromptResponse[OutputT]:
    """Resume the paused run ``session_id``: its waiting children first, then the run itself."""
    store = settings.store
    paused = None if store is None else paused_run(store, session_id)
    children = [] if store is None or paused is None else _children(prompt, store, paused)
    if store is None or paused is None or not children:  # nothing nested: the plain resume
        return await resume_with(
            session_id,
            decisions,
            prompt=prompt,
            settings=settings,
            session_given=session_given,
            decided_by=decided_by,
        )
    decisions = tuple(decisions)
    _check_tree(_waiting_calls(prompt, store, session_id, decisions=decisions), decisions, session_id)
    supplied: list[Decision] = []
    spent = Usage()
    still_waiting = False
    for child in children:
        if any(_decides(d, child.pending) for d in decisions):
            continue  # decided by hand (a Supply or a Deny of the whole call): the parent takes it
        result, usage = await _resume_child(child, store, settings.on_event, decisions, decided_by)
        spent = spent + usage
        if result is None:
            still_waiting = True
        else:
            supplied.append(result)
    if still_waiting:
        return _waiting(prompt, paused, spent)
    own = [d for d in decisions if any(_decides(d, p) for p in paused.pending)]
    with prelinked({c.pending.call_id: c.session_id for c in children}):
        response = await resume_with(
            session_id,
            [*own, *supplied],
            prompt=prompt,
            settings=settings,
            session_given=session_given,
            decided_by=decided_by,
        )
    return attrs.evolve(response, usage=response.usage + spent)


async def _resume_child(
    child: _Child,
    store: Store,
    on_event: EventCallback | None,
    decisions: Sequence[Decision],
    decided_by: str | None,
) -> tuple[Supply | None, Usage]:
    """The waiting call's result once its child run is resumed (``None``: the child waits again)."""
    pending, agent = child.pending, child.handler.agent
    if paused_run(store, child.session_id) is None:
        # The child finished on an earlier resume while a sibling waited again: its answer is stored.
        context = Transcript(store, child.session_id).compile()
        return Supply(pending.call_id, pending.token, context.messages[-1].content), Usage()
    mine = _waiting_calls(agent.prompt, store, child.session_id, decisions=decisions)
    own = [d for d in decisions if any(_decides(d, w.call) for w in mine)]
    path = (*current_path(), f"{child.handler.name}:{pending.call_id}")
    overrides: RunOverrides = {"store": store}
    if on_event is not None:
        overrides["on_event"] = _tagged(on_event, path)
    try:
        with starting_child(path):  # the resumed child's own children stream with their whole path
            response = await agent.resume(child.session_id, own, decided_by=decided_by, **overrides)
    except (ResumeError, DeadlineExceededError):
        raise  # a decision that does not fit (refused before anything is stored), or the deadline
    except WeakpromptError as exc:
        failed = f"Agent {child.handler.name!r} failed: {describe_exception(exc)}"
        return Supply(pending.call_id, pending.token, failed, is_error=True), Usage()
    if response.paused is not None:
        return None, response.usage
    return Supply(pending.call_id, pending.token, result_text(response)), response.usage


def _tagged(listener: EventCallback, path: tuple[str, ...]) -> EventCallback:
    """A resumed child's events, to the listener of the resume that resumed it, tagged with their path."""

    def tagged(event: object) -> object:
        wrapped = event if isinstance(event, ChildEvent) else ChildEvent(path=path, event=event)
        return listener(cast("Any", wrapped))

    return tagged


def _waiting(prompt: Prompt[OutputT], paused: PausedRun, spent: Usage) -> PromptResponse[OutputT]:
    """The parent's response while a child still waits: the same pause, what the resumed children spent."""
    return PromptResponse(
        text="",
        output=cast("OutputT", None),
        usage=spent,
        turns=0,
        head=paused.head,
        session_id=paused.session_id,
        transcript_id=paused.session_id,
        tool_executions=(),
        rendered=prompt.render(),
        paused=paused,
    )
