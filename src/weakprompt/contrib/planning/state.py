"""Where the plan lives in a session, and the reducers that keep it there.

Two STATE slices: ``session[Plan]`` (the current plan) and
``session[StepIdCounter]`` (the last id handed out). Handlers never write
them directly; they dispatch a :class:`PlanChange` event and the reducers
registered here apply it. Both slices are part of the session's snapshot, so
a tool call the dispatcher rolls back also takes back the ids it used.
"""

from __future__ import annotations

import weakref

import attrs

from ...errors import ConfigurationError
from ...session import Session
from .logic import PlanChange
from .model import Plan, StepIdCounter

__all__ = ["apply_change", "current_plan", "register_planning_state", "step_counter"]

# Sessions whose reducers are already in place; weak so sessions can be collected.
_registered: weakref.WeakSet[Session] = weakref.WeakSet()


def _keep_plan(state: tuple[Plan, ...], event: PlanChange) -> tuple[Plan, ...]:
    del state
    return (event.plan,)


def _keep_counter(state: tuple[StepIdCounter, ...], event: PlanChange) -> tuple[StepIdCounter, ...]:
    # Monotonic even if a stale change is dispatched: ids must never be handed out twice.
    last = max([event.counter.last_step_id, *(counter.last_step_id for counter in state)])
    return (StepIdCounter(last_step_id=last),)


def register_planning_state(session: Session) -> None:
    """Register the planning slices and reducers on ``session`` (idempotent)."""
    if session in _registered:
        return
    session.register_reducer(Plan, PlanChange, _keep_plan)
    session.register_reducer(StepIdCounter, PlanChange, _keep_counter)
    _registered.add(session)


def current_plan(session: Session) -> Plan | None:
    return session[Plan].latest()


def step_counter(session: Session) -> StepIdCounter:
    """The id counter, never behind the ids in the current plan.

    A plan seeded straight into the slice (tests, restored sessions) carries
    ids the counter never saw; new ids must still come after them.
    """
    counter = session[StepIdCounter].latest() or StepIdCounter()
    plan = current_plan(session)
    highest = max(plan.step_ids(), default=0) if plan is not None else 0
    if highest > counter.last_step_id:
        return StepIdCounter(last_step_id=highest)
    return counter


def apply_change(session: Session, change: PlanChange) -> Plan:
    """Publish ``change`` through the session's reducers and return the stored plan."""
    register_planning_state(session)
    session.dispatch(attrs.evolve(change, session_id=session.session_id)).raise_if_errors()
    stored = current_plan(session)
    if stored != change.plan:
        raise ConfigurationError(
            f"session {session.session_id} did not record the plan change: its planning reducers "
            "are not subscribed (was the session closed?)"
        )
    return change.plan
