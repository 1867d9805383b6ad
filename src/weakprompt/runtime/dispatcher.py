"""The one tool dispatcher every adapter and the evaluation loop share.

Contract: a model mistake never raises out of :meth:`ToolDispatcher.execute`;
state changed by a failed call is rolled back; exactly one ``ToolInvoked`` is
published per call, whatever the outcome. See ``specs/TOOLS.md``.
"""

from __future__ import annotations

import contextvars
import functools
import inspect
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, cast

import attrs

from ..call_arguments import ArgumentsProblem, BadSyntax, NotAnObject
from ..clock import Clock
from ..errors import (
    BudgetExceededError,
    ConfigurationError,
    DeadlineExceededError,
    PromptEvaluationError,
    ToolValidationError,
    VisibilityExpansionRequired,
)
from ..events import HandlerFailure, ToolInvoked, publish
from ..messages import ToolCall
from ..safetext import plain_text
from ..serde import SerdeError
from ..tools import AnyTool, CallDeferred, ToolContext, ToolResult, is_async_handler
from . import tool_messages
from .blocking import block_on
from .pause_errors import ToolCallPending
from .redaction import (
    MAX_ERROR_TEXT,
    Redactor,
    clip,
    default_redact,
    describe_exception,
    lone_surrogate,
    redacted,
    safe_repr,
    type_name,
)
from .tool_failures import report_broken_tool

if TYPE_CHECKING:
    import asyncio

    from ..budget import BudgetTracker
    from ..deadlines import Deadline
    from ..model import ProviderAdapter
    from ..prompt import Prompt, RenderedPrompt
    from ..resources import ResourceRegistry, ResourceSnapshot
    from ..session import Session, SessionFork, SessionSnapshot
    from .tracing import ToolSpan

__all__ = ["ToolDispatcher", "ToolExecution"]

logger = logging.getLogger(__name__)

# Exceptions a handler may raise to hand control back to the evaluation loop:
# they are re-raised (after rollback and the event), never turned into results.
_PASS_THROUGH = (VisibilityExpansionRequired, PromptEvaluationError)
# Limits of the whole evaluation: the loop must stop, so they become an
# evaluation error rather than a result the model could argue with.
_EVALUATION_LIMITS = (DeadlineExceededError, BudgetExceededError)


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
        if isinstance(step, _Ready):
            outcome, caught = _call_sync(step) if step.span is None else _traced(step.span, _call_sync, step)
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
        if isinstance(step, _Ready):
            if step.span is None:
                outcome, caught = await _call_async(step, drain=True)
            else:
                with step.span.activated():
                    outcome, caught = await _call_async(step, drain=True)
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

    async def _run_on_fork(self, call: ToolCall, fork: SessionFork) -> _Settled:
        step = self._prepare(call, fork)
        if isinstance(step, _Settled):
            return step
        if step.span is None:
            outcome, caught = await _call_async(step, drain=False)  # the fork is thrown away if cancelled
        else:
            with step.span.activated():  # this task's own context: the other calls keep theirs
                outcome, caught = await _call_async(step, drain=False)
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

    def _prepare(self, call: ToolCall, session: Session, *, approved: bool = False) -> _Ready | _Settled:
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
            text = self._failure_text(describe_exception(exc))
            refused = self._refuse(
                call, f"Tool {tool.name!r} was not run: its state could not be saved ({text}).", started
            )
            error = PromptEvaluationError(f"tool {tool.name!r} was not run: saving state failed: {text}")
            error.__cause__ = exc
            return attrs.evolve(refused, escalate=error)
        return _Ready(
            tool, call, params, started, context, resources, session_snapshot, resource_snapshot, span
        )

    def _settle(self, ready: _Ready, outcome: object, caught: BaseException | None) -> _Settled:
        """Steps 8-9: check the handler's outcome, roll back on failure, decide what to raise."""
        tool = ready.tool
        if caught is None and isinstance(outcome, CallDeferred):  # returned rather than raised: the same
            caught = outcome
        if isinstance(caught, CallDeferred):  # its result comes later; what it changed is undone
            broken = self._rollback(ready)
            if broken is not None:
                return attrs.evolve(self._refuse(ready.call, broken.args[0], ready.started), escalate=broken)
            return self._hold(
                ready.call, ready.params, ready.started, ToolCallPending(ready.call, "deferred", caught.note)
            )
        message = ""
        result = _as_result(outcome) if caught is None else None
        if result is not None:
            try:
                message = _checked_rendering(result)
            except BaseException as exc:  # sorted out below, once the state is restored
                caught = exc
        failed = caught is not None or result is None or not result.success
        if caught is not None and ready.span is not None:
            ready.span.handler_raised(caught)
        broken = self._rollback(ready) if failed else None
        # Only now is the failure put into words: describing it may run the tool's own code again.
        result, message, escalate = self._outcome(tool, result, message, caught)
        if broken is not None and (escalate is None or isinstance(escalate, Exception)):
            escalate = broken
        return _Settled(ready.call, ready.params, result, message, ready.started, self._clock.now(), escalate)

    def _outcome(
        self, tool: AnyTool, result: ToolResult[object] | None, rendered: str, caught: BaseException | None
    ) -> tuple[ToolResult[object], str, BaseException | None]:
        """The result, the model's text and what to raise, for what the handler did."""
        if caught is None and result is not None:
            if result.success:
                return result, rendered, None
            # the handler's own failure text is scrubbed too, but not cut: it is the tool's output
            cleaned = attrs.evolve(result, message=redacted(result.message, self._redact))
            return cleaned, redacted(rendered, self._redact), None
        if isinstance(caught, _BadResult):
            return *self._failure(tool_messages.bad_result(tool.name, caught.problem)), None
        if isinstance(caught, _PASS_THROUGH):
            return *self._failure(tool_messages.escalated(tool.name, describe_exception(caught))), caught
        if isinstance(caught, _EVALUATION_LIMITS):
            text = describe_exception(caught)
            escalate = PromptEvaluationError(
                f"tool {tool.name!r} hit a limit of the evaluation: {self._failure_text(text)}"
            )
            escalate.__cause__ = caught
            return *self._failure(tool_messages.escalated(tool.name, text)), escalate
        if isinstance(caught, Exception):
            return *self._handler_failure(tool, caught), None
        # KeyboardInterrupt, SystemExit: rolled back and reported, then on its way
        return *self._failure(tool_messages.interrupted(tool.name, type_name(caught))), caught

    def _handler_failure(self, tool: AnyTool, exc: Exception) -> tuple[ToolResult[object], str]:
        mismatch = isinstance(exc, TypeError) and _raised_at_call_site(exc)
        text = describe_exception(exc)
        if isinstance(exc, ToolValidationError):  # an expected refusal, not a bug
            logger.info("tool %r rejected its input: %s", tool.name, self._failure_text(text))
        else:
            report_broken_tool(tool.name, exc, redact=self._redact)  # once, visible by default
        return self._failure(tool_messages.handler_failed(tool.name, text, signature_mismatch=mismatch))

    def _failure_text(self, text: str) -> str:
        """A failure text as it may leave the dispatcher: scrubbed by the hook, then cut."""
        return clip(redacted(text, self._redact), MAX_ERROR_TEXT)

    def _failure(self, text: str) -> tuple[ToolResult[object], str]:
        result = ToolResult.error(self._failure_text(text))
        return result, result.message

    def _refuse(self, call: ToolCall, text: str, started: datetime, *, params: object = None) -> _Settled:
        """A call that fails before its handler runs: nothing to roll back, one event."""
        result, message = self._failure(text)
        return _Settled(call, params, result, message, started, self._clock.now(), None)

    def _hold(self, call: ToolCall, params: object, started: datetime, pending: ToolCallPending) -> _Settled:
        """A call that waits for a decision: settled without an event, raised to the loop as ``pending``."""
        result = ToolResult.error(str(pending))
        return _Settled(call, params, result, result.message, started, self._clock.now(), pending)

    def answer(self, call: ToolCall, result: ToolResult[object], *, params: object = None) -> ToolExecution:
        """Publish the one ``ToolInvoked`` of a call answered without running it (denied, result supplied)."""
        now = self._clock.now()
        return self._announce(_Settled(call, params, result, result.message, now, now, None))

    def _rollback(self, ready: _Ready) -> PromptEvaluationError | None:
        """Restore everything; a restore that fails means state can no longer be trusted."""
        tool = ready.tool
        failures: list[Exception] = []
        try:
            ready.context.session.restore(ready.session_snapshot)
        except Exception as exc:
            failures.append(exc)
        if ready.resources is not None and ready.resource_snapshot is not None:
            try:
                ready.resources.restore(ready.resource_snapshot)
            except Exception as exc:
                failures.append(exc)
        if ready.span is not None:
            ready.span.rolled_back()
        if not failures:
            return None
        for exc in failures:
            logger.error("rolling back tool %r failed", tool.name, exc_info=exc)
        error = PromptEvaluationError(
            f"tool {tool.name!r} failed and its state changes could not be rolled back: "
            + self._failure_text("; ".join(describe_exception(exc) for exc in failures))
        )
        error.__cause__ = failures[0]
        return error

    def _announce(self, step: _Settled) -> ToolExecution:
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


@attrs.frozen
class _Ready:
    """A call that passed steps 1-7: what the handler gets and what restores its state."""

    tool: AnyTool
    call: ToolCall
    params: object
    started: datetime
    context: ToolContext
    resources: ResourceRegistry | None
    session_snapshot: SessionSnapshot
    resource_snapshot: ResourceSnapshot | None
    span: ToolSpan | None = None


@attrs.frozen
class _Settled:
    """A finished call whose event is not published yet (concurrent calls publish in call order)."""

    call: ToolCall
    params: object
    result: ToolResult[object]
    message: str
    started: datetime
    finished: datetime
    escalate: BaseException | None


def _traced(
    span: ToolSpan, call: Callable[[_Ready], tuple[object, BaseException | None]], ready: _Ready
) -> tuple[object, BaseException | None]:
    with span.activated():
        return call(ready)


def _call_sync(ready: _Ready) -> tuple[object, BaseException | None]:
    """Run the handler here; an awaitable it returns is run to completion."""
    try:
        outcome = ready.tool.handler(ready.params, context=ready.context)
        if inspect.isawaitable(outcome):
            awaitable: Awaitable[object] = outcome

            async def finish() -> object:
                return await awaitable

            outcome = block_on(finish)
    except BaseException as exc:  # sorted out by _settle, once the state is restored
        return None, exc
    return outcome, None


async def _call_async(ready: _Ready, *, drain: bool) -> tuple[object, BaseException | None]:
    """Run the handler without blocking the loop: awaited if async, on a worker thread if not.

    With ``drain``, a cancellation waits for a sync handler's thread to end
    before it is reported, so the rollback that follows sees the handler's
    last write (the thread cannot be stopped, and it writes to the real session).
    """
    import asyncio  # on first use: keeps importing this module cheap

    handler = cast("Callable[..., object]", ready.tool.handler)
    try:
        if is_async_handler(handler):
            outcome = await cast("Awaitable[object]", handler(ready.params, context=ready.context))
        else:
            # A plain future, not a task: an interrupt the handler raises must reach _settle,
            # not escape the event loop from a task of its own.
            context = contextvars.copy_context()
            call = functools.partial(context.run, handler, ready.params, context=ready.context)
            worker: asyncio.Future[object] = asyncio.get_running_loop().run_in_executor(None, call)
            try:
                outcome = await asyncio.shield(worker)
            except asyncio.CancelledError:
                if drain:
                    await _wait_out(worker)
                raise
        if inspect.isawaitable(outcome):  # a sync callable that handed back a coroutine
            outcome = await cast("Awaitable[object]", outcome)
    except BaseException as exc:  # sorted out by _settle, once the state is restored
        return None, exc
    return outcome, None


async def _wait_out(worker: asyncio.Future[object]) -> None:
    """Wait for ``worker`` to finish, whatever cancellations arrive meanwhile."""
    import asyncio  # on first use: keeps importing this module cheap

    while not worker.done():
        try:
            await asyncio.shield(worker)
        except asyncio.CancelledError:
            continue
        except BaseException:
            return


def _as_result(outcome: object) -> ToolResult[object]:
    """What the handler returned as a result: a plain value (``None`` too) is a success carrying it."""
    if isinstance(outcome, ToolResult):
        return cast("ToolResult[object]", outcome)
    return ToolResult.ok(outcome)


class _BadResult(Exception):
    """A ``ToolResult`` the model cannot be shown: a defect of the tool."""

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem


def _checked_rendering(result: ToolResult[object]) -> str:
    """``result.render()``, when it is text a transcript can store; else :class:`_BadResult`."""
    if not isinstance(result.success, bool):  # pyright: ignore[reportUnnecessaryIsInstance]  # a tool's value
        raise _BadResult(f"its result's success is {type_name(result.success)}, not a bool")
    if not isinstance(result.message, str):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise _BadResult(f"its result's message is {type_name(result.message)}, not a str")
    try:
        text = result.render()
    except Exception as exc:
        raise _BadResult(f"its result could not be rendered: {describe_exception(exc)}") from exc
    if not isinstance(text, str):  # pyright: ignore[reportUnnecessaryIsInstance]  # a value's own render()
        raise _BadResult(f"its result rendered as {type_name(text)}, not as text")
    where = lone_surrogate(text)
    if where is not None:
        raise _BadResult(f"its result holds a lone surrogate {where}, which is not valid Unicode")
    return str.__str__(text)


def _raised_at_call_site(exc: BaseException) -> bool:
    """True when the exception came from calling the handler, not from inside it.

    The traceback starts at the frame that caught it; a next frame exists only
    if the handler's own code started running.
    """
    traceback = exc.__traceback__
    return traceback is not None and traceback.tb_next is None
