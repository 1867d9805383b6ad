"""The one tool dispatcher every adapter and the evaluation loop share.

Contract: a model mistake never raises out of :meth:`ToolDispatcher.execute`;
state changed by a failed call is rolled back; exactly one ``ToolInvoked`` is
published per call, whatever the outcome. See ``specs/TOOLS.md``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

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
from ..serde import SerdeError, parse
from ..tools import AnyTool, ToolContext, ToolResult
from . import tool_messages
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

if TYPE_CHECKING:
    from ..budget import BudgetTracker
    from ..deadlines import Deadline
    from ..model import ProviderAdapter
    from ..prompt import Prompt, RenderedPrompt
    from ..resources import ResourceRegistry, ResourceSnapshot
    from ..session import Session, SessionSnapshot

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
        # Every field is fixed for the dispatcher's lifetime, so one frozen context serves all calls.
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

    def execute(self, call: ToolCall) -> ToolExecution:
        """Run one tool call; returns a result for every mistake the model or the tool can make.

        Raises only what must stop or redirect the evaluation loop:
        ``VisibilityExpansionRequired``, ``PromptEvaluationError`` (also for a
        deadline or budget exhausted inside the handler, and for state that
        could not be snapshotted or restored), and non-``Exception``
        interrupts such as ``KeyboardInterrupt``.
        """
        started = self._clock.now()
        name = plain_text(call.name)
        tool = self._tools.get(name) if name is not None else None
        if tool is None:
            shown = name if name is not None else safe_repr(call.name)
            return self._refuse(call, tool_messages.unknown_tool(shown, self._tools), started)

        arguments = call.decoded_arguments  # decoded once per call, shared with every other reader
        if not isinstance(arguments, dict):
            return self._refuse(call, self._arguments_problem(tool, call.arguments, arguments), started)

        try:
            params: object = parse(tool.params_type, arguments, extra="forbid")
        except SerdeError as exc:
            return self._refuse(call, tool_messages.invalid_params(tool.name, exc), started)
        except Exception as exc:  # e.g. a params type serde cannot handle: a defect in the tool
            logger.warning("parsing arguments of tool %r raised", tool.name, exc_info=exc)
            return self._refuse(
                call, tool_messages.unreadable_params(tool.name, describe_exception(exc)), started
            )

        if self._deadline is not None and self._deadline.expired():
            return self._refuse(call, tool_messages.deadline_expired(tool.name), started, params=params)

        return self._run(tool, call, params, started)

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

    def _run(self, tool: AnyTool, call: ToolCall, params: object, started: datetime) -> ToolExecution:
        try:
            session_snapshot = self._session.snapshot()
            resource_snapshot = self._resources.snapshot() if self._resources is not None else None
        except Exception as exc:  # nothing has changed yet, but nothing could be rolled back either
            logger.error("snapshotting state before tool %r failed", tool.name, exc_info=exc)
            text = self._failure_text(describe_exception(exc))
            self._refuse(
                call, f"Tool {tool.name!r} was not run: its state could not be saved ({text}).", started
            )
            error = PromptEvaluationError(f"tool {tool.name!r} was not run: saving state failed: {text}")
            raise error from exc

        outcome: object = None
        message = ""
        caught: BaseException | None = None
        try:
            outcome = tool.handler(params, context=self._context)
            if isinstance(outcome, ToolResult):
                message = _checked_rendering(outcome)  # pyright: ignore[reportUnknownArgumentType]
        except BaseException as exc:  # sorted out below, once the state is restored
            caught = exc

        failed = caught is not None or not isinstance(outcome, ToolResult) or not outcome.success
        broken = self._rollback(tool, session_snapshot, resource_snapshot) if failed else None
        # Only now is the failure put into words: describing it may run the tool's own code again.
        result, message, escalate = self._outcome(tool, outcome, message, caught)
        if broken is not None and (escalate is None or isinstance(escalate, Exception)):
            escalate = broken
        execution = self._publish(call, params, result, message, started)
        if escalate is not None:
            raise escalate
        return execution

    def _outcome(
        self, tool: AnyTool, outcome: object, rendered: str, caught: BaseException | None
    ) -> tuple[ToolResult[object], str, BaseException | None]:
        """The result, the model's text and what to raise, for what the handler did."""
        if caught is None:
            if not isinstance(outcome, ToolResult):
                return *self._failure(tool_messages.bad_return(tool.name, outcome)), None
            result: ToolResult[object] = outcome  # pyright: ignore[reportUnknownVariableType]
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
            logger.warning("tool %r raised; its state changes are rolled back", tool.name, exc_info=exc)
        return self._failure(tool_messages.handler_failed(tool.name, text, signature_mismatch=mismatch))

    def _failure_text(self, text: str) -> str:
        """A failure text as it may leave the dispatcher: scrubbed by the hook, then cut."""
        return clip(redacted(text, self._redact), MAX_ERROR_TEXT)

    def _failure(self, text: str) -> tuple[ToolResult[object], str]:
        result = ToolResult.error(self._failure_text(text))
        return result, result.message

    def _refuse(
        self, call: ToolCall, text: str, started: datetime, *, params: object = None
    ) -> ToolExecution:
        """A call that fails before its handler runs: nothing to roll back, one event."""
        result, message = self._failure(text)
        return self._publish(call, params, result, message, started)

    def _rollback(
        self, tool: AnyTool, session_snapshot: SessionSnapshot, resource_snapshot: ResourceSnapshot | None
    ) -> PromptEvaluationError | None:
        """Restore everything; a restore that fails means state can no longer be trusted."""
        failures: list[Exception] = []
        try:
            self._session.restore(session_snapshot)
        except Exception as exc:
            failures.append(exc)
        if self._resources is not None and resource_snapshot is not None:
            try:
                self._resources.restore(resource_snapshot)
            except Exception as exc:
                failures.append(exc)
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

    def _publish(
        self,
        call: ToolCall,
        params: object,
        result: ToolResult[object],
        message: str,
        started: datetime,
    ) -> ToolExecution:
        """Publish the call's one ``ToolInvoked`` and package the outcome."""
        event = ToolInvoked(
            prompt_name=self._prompt_name,
            adapter=self._adapter_name,
            name=call.name,
            params=params,
            result=result,
            call_id=call.id,
            session_id=self._session.session_id,
            started_at=started,
            finished_at=self._clock.now(),
            arguments=call.arguments_json(),
        )
        dispatched = publish(self._session.dispatcher, event, logger=logger, about=f"for tool {call.name!r}")
        return ToolExecution(result=result, message=message, event=event, subscriber_errors=dispatched.errors)


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
