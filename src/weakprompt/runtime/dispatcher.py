"""The one tool dispatcher every adapter and the evaluation loop share.

Contract: a model mistake never raises out of :meth:`ToolDispatcher.execute`;
state changed by a failed call is rolled back; exactly one ``ToolInvoked`` is
published per call, whatever the outcome. See ``specs/TOOLS.md``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

import attrs

from ..call_arguments import ArgumentsProblem, BadSyntax, NotAnObject
from ..clock import Clock
from ..errors import (
    ConfigurationError,
    GuardrailTripped,
    PromptEvaluationError,
    VisibilityExpansionRequired,
)
from ..events import HandlerFailure, ToolInvoked, publish
from ..messages import ToolCall
from ..safetext import plain_text
from ..serde import SerdeError
from ..tools import AnyTool, CallDeferred, ToolContext, ToolResult
from . import tool_messages
from .call_outcomes import (
    as_result,
    checked_rendering,
    failure,
    failure_text,
    outcome_of,
    rollback,
)
from .handler_calls import Ready, Settled, call_async, call_sync, traced
from .pause_errors import ToolCallPending
from .redaction import (
    Redactor,
    default_redact,
    describe_exception,
    safe_repr,
)

if TYPE_CHECKING:
    from ..budget import BudgetTracker
    from ..deadlines import Deadline
    from ..model import ProviderAdapter
    from ..prompt import Prompt, RenderedPrompt
    from ..resources import ResourceRegistry
    from ..session import Session, SessionFork
    from .guardrails import ToolGuard
    from .tracing import ToolSpan

__all__ = ["ToolDispatcher", "ToolExecution"]

logger = logging.getLogger(__name__)


@attrs.frozen
class ToolExecution:
    """The outcome of one call: the result, the text for the model, the event.

    ``subscriber_errors`` lists event subscribers (for instance session
    reducers) that raised while the ``ToolInvoked`` was published. The tool
    call itself still stands: the error is reported, logged, never swallowed.
    """

    result: ToolResult[object]
    message: str
    event: ToolInvoked
    subscriber_errors: tuple[HandlerFailure, ...] = ()

    @property
    def success(self) -> bool:
        return self.result.success


class ToolDispatcher:
    """Runs the model's tool calls against one session, transactionally."""

    def __init__(
        self,
        tools: Iterable[AnyTool],
        *,
        session: Session,
        prompt: Prompt[Any] | None = None,
        rendered_prompt: RenderedPrompt[Any] | None = None,
        adapter: ProviderAdapter | None = None,
        deadline: Deadline | None = None,
        budget_tracker: BudgetTracker | None = None,
        resources: ResourceRegistry | None = None,
        redact: Redactor = default_redact,
        clock: Clock | None = None,
        prompt_name: str = "",
        tool_spans: Callable[[ToolCall], ToolSpan] | None = None,
        guard: ToolGuard | None = None,
    ) -> None:
        registry: dict[str, AnyTool] = {}
        for tool in tools:
            if tool.name in registry:
                raise ConfigurationError(f"two tools are named {tool.name!r}; tool names must be unique")
            registry[tool.name] = tool
        self._tools = registry
        self._session = session
        self._adapter_name = adapter.name if adapter is not None else ""
        self._deadline = deadline
        self._resources = resources
        self._redact = redact
        self._clock = clock if clock is not None else session.clock
        self._prompt_name = prompt_name
        self._tool_spans = tool_spans  # a tracing hook: the span of each call (runtime.tracing)
        self._guard = guard  # the run's tool_arguments guardrails, checked just before the handler
        # Every field but the call id is fixed for the dispatcher's lifetime: each call gets a copy.
        self._context = ToolContext(
            session=session,
            prompt=prompt,
            rendered_prompt=rendered_prompt,
            adapter=adapter,
            deadline=deadline,
            budget_tracker=budget_tracker,
            resources=resources,
        )

    @property
    def tools(self) -> Mapping[str, AnyTool]:
        """The tools this dispatcher can run, by name."""
        return self._tools

    def runs_alone(self, call: ToolCall) -> bool:
        """Whether ``call`` must not share a concurrent batch (see ``specs/TOOLS.md``, "Concurrency").

        A tool marked ``sequential`` runs alone, on the real session; so does
        every call when a snapshotable resource is registered, since a
        resource cannot be forked per call. An unknown tool does not: its
        call fails without running anything.
        """
        if self._resources is not None and self._resources.has_snapshotable():
            return True
        name = plain_text(call.name)
        tool = self._tools.get(name) if name is not None else None
        return tool is not None and tool.sequential

    def holds(self, call: ToolCall) -> bool:
        """Whether ``call`` would wait for approval rather than run (its tool's policy, with no approval)."""
        name = plain_text(call.name)
        tool = self._tools.get(name) if name is not None else None
        if tool is None or tool.requires_approval is False:
            return False
        arguments = call.decoded_arguments
        if not isinstance(arguments, dict):
            return False
        try:
            params: object = tool.parse_arguments(arguments)
        except Exception:  # refused before the handler: it never runs
            return False
        return tool.needs_approval(params, self._call_context(call, self._session))

    def _call_context(self, call: ToolCall, session: Session) -> ToolContext:
        """The context of one call: the dispatcher's, with this call's id (and its fork of the session)."""
        if session is self._session:
            return attrs.evolve(self._context, call_id=call.id)
        return attrs.evolve(self._context, session=session, call_id=call.id)

    def execute(self, call: ToolCall, *, approved: bool = False) -> ToolExecution:
        """Run one tool call; returns a result for every mistake the model or the tool can make.

        Raises only what must stop or redirect the evaluation loop:
        ``VisibilityExpansionRequired``, ``ToolCallPending`` (the call waits
        for an approval or a deferred result; no event yet), ``PromptEvaluationError`` (also for a
        deadline or budget exhausted inside the handler, and for state that
        could not be snapshotted or restored), and non-``Exception``
        interrupts such as ``KeyboardInterrupt``. An ``async def`` handler is
        run to completion (on a worker thread's loop when this thread is
        already running one).

        ``approved``: a person approved exactly this call (this id, tool and
        arguments), so its tool's approval policy is met for this one
        execution. Nothing is remembered: another call, even one with the
        same id, is judged by the policy again.
        """
        step = self._prepare(call, self._session, approved=approved)
        if isinstance(step, Ready) and self._guard is not None and self._guard.arguments:
            step = self._guarded(step, approved)
        if isinstance(step, Ready):
            outcome, caught = call_sync(step) if step.span is None else traced(step.span, call_sync, step)
            step = self._settle(step, outcome, caught)
        return self._announce(step)

    async def execute_async(self, call: ToolCall, *, approved: bool = False) -> ToolExecution:
        """:meth:`execute` for the event loop: an async handler is awaited, a sync one runs on a thread.

        Same steps, same outcomes, the same one event. A cancellation while
        the handler runs rolls its changes back, publishes the call's event
        with a failed result and is re-raised; a sync handler's thread cannot
        be stopped, so the cancellation waits for it to finish first.
        """
        step = self._prepare(call, self._session, approved=approved)
        if isinstance(step, Ready) and self._guard is not None and self._guard.arguments:
            step = await self._guarded_async(step, approved)
        if isinstance(step, Ready):
            if step.span is None:
                outcome, caught = await call_async(step, drain=True)
            else:
                with step.span.activated():
                    outcome, caught = await call_async(step, drain=True)
            step = self._settle(step, outcome, caught)
        return self._announce(step)

    async def execute_concurrently(
        self, calls: Sequence[ToolCall]
    ) -> list[ToolExecution | VisibilityExpansionRequired | ToolCallPending]:
        """Run ``calls`` at the same time, each on its own fork of the session; settle them in call order.

        After every call has finished, in call order: a successful call's
        fork is merged into the session (its slice writes and events replayed),
        then its ``ToolInvoked`` is published. The session therefore ends as if
        the successful calls had run one after another, in call order, and the
        failed ones never. A call that asks for more sections comes back as
        its ``VisibilityExpansionRequired``, and one that waits for a decision
        (approval or a deferred result) as its ``ToolCallPending``, for the
        loop to act on in order; any other escalation is raised once every event is out (the first in
        call order wins). On cancellation the calls still running are
        cancelled and nothing is merged.
        """
        import asyncio  # on first use: keeps importing this module cheap

        forks = [self._session.fork() for _ in calls]
        tasks = [
            asyncio.ensure_future(self._run_on_fork(call, fork))
            for call, fork in zip(calls, forks, strict=True)
        ]
        try:
            settled = await asyncio.gather(*tasks)
        except BaseException:
            for task in tasks:
                task.cancel()
            raise
        outcomes: list[ToolExecution | VisibilityExpansionRequired | ToolCallPending] = []
        escalation: BaseException | None = None
        for step, fork in zip(settled, forks, strict=True):
            merged: tuple[HandlerFailure, ...] = ()
            if step.result.success and step.escalate is None:
                merged = tuple(f for dispatched in self._session.merge(fork) for f in dispatched.errors)
            try:
                execution = self._announce(step)
            except (VisibilityExpansionRequired, ToolCallPending) as request:
                outcomes.append(request)
                continue
            except BaseException as exc:
                escalation = escalation or exc
                continue
            if merged:
                execution = attrs.evolve(execution, subscriber_errors=merged + execution.subscriber_errors)
            outcomes.append(execution)
        if escalation is not None:
            raise escalation
        return outcomes

    async def _run_on_fork(self, call: ToolCall, fork: SessionFork) -> Settled:
        step = self._prepare(call, fork)
        if self._guard is not None and self._guard.arguments and isinstance(step, Ready):
            step = await self._guarded_async(step, False)
        if isinstance(step, Settled):
            return step
        if step.span is None:
            outcome, caught = await call_async(step, drain=False)  # the fork is thrown away if cancelled
        else:
            with step.span.activated():  # this task's own context: the other calls keep theirs
                outcome, caught = await call_async(step, drain=False)
        return self._settle(step, outcome, caught)

    # -- steps -------------------------------------------------------------------

    def _arguments_problem(self, tool: AnyTool, raw: object, problem: ArgumentsProblem) -> str:
        if isinstance(problem, BadSyntax):
            return tool_messages.invalid_json(tool.name, plain_text(raw) or "", problem.error)
        if isinstance(problem, NotAnObject):
            return tool_messages.not_an_object(tool.name, problem.value, self._field_names(tool))
        return tool_messages.arguments_refused(tool.name, problem.path, problem.problem)

    @staticmethod
    def _field_names(tool: AnyTool) -> tuple[str, ...]:
        properties = tool.parameters_schema().get("properties")
        return tuple(properties) if isinstance(properties, dict) else ()

    def _prepare(self, call: ToolCall, session: Session, *, approved: bool = False) -> Ready | Settled:
        """Steps 1-7: everything before the handler; a call refused here is already settled."""
        started = self._clock.now()
        span = self._tool_spans(call) if self._tool_spans is not None else None
        name = plain_text(call.name)
        tool = self._tools.get(name) if name is not None else None
        if tool is None:
            shown = name if name is not None else safe_repr(call.name)
            return self._refuse(call, tool_messages.unknown_tool(shown, self._tools), started)

        arguments = call.decoded_arguments  # decoded once per call, shared with every other reader
        if not isinstance(arguments, dict):
            return self._refuse(call, self._arguments_problem(tool, call.arguments, arguments), started)

        try:
            params: object = tool.parse_arguments(arguments)
        except SerdeError as exc:
            return self._refuse(call, tool_messages.invalid_params(tool.name, exc), started)
        except Exception as exc:  # e.g. a params type serde cannot handle: a defect in the tool
            logger.warning("parsing arguments of tool %r raised", tool.name, exc_info=exc)
            return self._refuse(
                call, tool_messages.unreadable_params(tool.name, describe_exception(exc)), started
            )

        if self._deadline is not None and self._deadline.expired():
            return self._refuse(call, tool_messages.deadline_expired(tool.name), started, params=params)

        context = self._call_context(call, session)
        # waits for a decision: nothing runs, no event yet
        if tool.requires_approval is not False and not approved and tool.needs_approval(params, context):
            return self._hold(call, params, started, ToolCallPending(call, "approval"))

        # A fork never shares resources: concurrent calls only run when none is snapshotable.
        resources = self._resources if session is self._session else None
        try:
            session_snapshot = session.snapshot()
            resource_snapshot = resources.snapshot() if resources is not None else None
        except Exception as exc:  # nothing has changed yet, but nothing could be rolled back either
            logger.error("snapshotting state before tool %r failed", tool.name, exc_info=exc)
            text = failure_text(describe_exception(exc), self._redact)
            refused = self._refuse(
                call, f"Tool {tool.name!r} was not run: its state could not be saved ({text}).", started
            )
            error = PromptEvaluationError(f"tool {tool.name!r} was not run: saving state failed: {text}")
            error.__cause__ = exc
            return attrs.evolve(refused, escalate=error)
        return Ready(
            tool, call, params, started, context, resources, session_snapshot, resource_snapshot, span
        )

    def _guarded(self, ready: Ready, approved: bool) -> Ready | Settled:
        """The tool_arguments guardrails on a prepared call: its params as they run, or the trip.

        A trip settles the call as failed (its one ``ToolInvoked`` is
        published) and escalates, stopping the run; nothing has run yet.
        """
        assert self._guard is not None  # only called with a guard
        try:
            params = self._guard.check_arguments(ready.call, ready.params, approved=approved)
        except GuardrailTripped as trip:
            return self._tripped(ready, trip)
        return ready if params is ready.params else attrs.evolve(ready, params=params)

    async def _guarded_async(self, ready: Ready, approved: bool) -> Ready | Settled:
        assert self._guard is not None  # only called with a guard
        try:
            params = await self._guard.check_arguments_async(ready.call, ready.params, approved=approved)
        except GuardrailTripped as trip:
            return self._tripped(ready, trip)
        return ready if params is ready.params else attrs.evolve(ready, params=params)

    def _tripped(self, ready: Ready, trip: GuardrailTripped) -> Settled:
        text = (
            f"Tool {ready.tool.name!r} was not run: guardrail {trip.guardrail!r} stopped it ({trip.reason})."
        )
        return attrs.evolve(self._refuse(ready.call, text, ready.started, params=ready.params), escalate=trip)

    def _settle(self, ready: Ready, outcome: object, caught: BaseException | None) -> Settled:
        """Steps 8-9: check the handler's outcome, roll back on failure, decide what to raise."""
        tool = ready.tool
        if caught is None and isinstance(outcome, CallDeferred):  # returned rather than raised: the same
            caught = outcome
        if isinstance(caught, CallDeferred):  # its result comes later; what it changed is undone
            broken = rollback(ready, redact=self._redact)
            if broken is not None:
                return attrs.evolve(self._refuse(ready.call, broken.args[0], ready.started), escalate=broken)
            return self._hold(
                ready.call, ready.params, ready.started, ToolCallPending(ready.call, "deferred", caught.note)
            )
        message = ""
        result = as_result(outcome) if caught is None else None
        if result is not None:
            try:
                message = checked_rendering(result)
            except BaseException as exc:  # sorted out below, once the state is restored
                caught = exc
        failed = caught is not None or result is None or not result.success
        if caught is not None and ready.span is not None:
            ready.span.handler_raised(caught)
        broken = rollback(ready, redact=self._redact) if failed else None
        # Only now is the failure put into words: describing it may run the tool's own code again.
        result, message, escalate = outcome_of(tool, result, message, caught, redact=self._redact)
        if broken is not None and (escalate is None or isinstance(escalate, Exception)):
            escalate = broken
        return Settled(ready.call, ready.params, result, message, ready.started, self._clock.now(), escalate)

    def _refuse(self, call: ToolCall, text: str, started: datetime, *, params: object = None) -> Settled:
        """A call that fails before its handler runs: nothing to roll back, one event."""
        result, message = failure(text, self._redact)
        return Settled(call, params, result, message, started, self._clock.now(), None)

    def _hold(self, call: ToolCall, params: object, started: datetime, pending: ToolCallPending) -> Settled:
        """A call that waits for a decision: settled without an event, raised to the loop as ``pending``."""
        result = ToolResult.error(str(pending))
        return Settled(call, params, result, result.message, started, self._clock.now(), pending)

    def answer(self, call: ToolCall, result: ToolResult[object], *, params: object = None) -> ToolExecution:
        """Publish the one ``ToolInvoked`` of a call answered without running it (denied, result supplied)."""
        now = self._clock.now()
        return self._announce(Settled(call, params, result, result.message, now, now, None))

    def _announce(self, step: Settled) -> ToolExecution:
        """Step 10-11: publish the call's one ``ToolInvoked``, then return the outcome or raise."""
        call = step.call
        if isinstance(step.escalate, ToolCallPending):  # not finished: its event comes when it is decided
            raise step.escalate
        event = ToolInvoked(
            prompt_name=self._prompt_name,
            adapter=self._adapter_name,
            name=call.name,
            params=step.params,
            result=step.result,
            call_id=call.id,
            session_id=self._session.session_id,
            started_at=step.started,
            finished_at=step.finished,
            arguments=call.arguments_json(),
        )
        dispatched = publish(self._session.bus, event, logger=logger, about=f"for tool {call.name!r}")
        if step.escalate is not None:
            if isinstance(step.escalate, VisibilityExpansionRequired):
                step.escalate.invoked = event  # the loop streams it, as every call's
            raise step.escalate
        return ToolExecution(
            result=step.result, message=step.message, event=event, subscriber_errors=dispatched.errors
        )
