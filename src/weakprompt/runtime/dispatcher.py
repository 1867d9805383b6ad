"""The one tool dispatcher every adapter and the evaluation loop share.

Contract: a model mistake never raises out of :meth:`ToolDispatcher.execute`;
state changed by a failed call is rolled back; exactly one ``ToolInvoked`` is
published per call, whatever the outcome. See ``specs/TOOLS.md``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

import attrs

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
from ..jsontypes import JSONValue
from ..messages import ToolCall
from ..serde import SerdeError, parse
from ..tools import AnyTool, ToolContext, ToolResult
from . import tool_messages
from .redaction import Redactor, default_redact

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
        """Run one tool call; returns a result for every mistake the model can make.

        Raises only what must stop or redirect the evaluation loop:
        ``VisibilityExpansionRequired``, ``PromptEvaluationError`` (also for a
        deadline or budget exhausted inside the handler), and non-``Exception``
        interrupts such as ``KeyboardInterrupt``.
        """
        started = self._clock.now()
        tool = self._tools.get(call.name)
        if tool is None:
            failure = ToolResult.error(tool_messages.unknown_tool(call.name, self._tools))
            return self._publish(call, None, failure, failure.message, started)

        arguments = self._decode(tool, call.arguments)
        if isinstance(arguments, ToolResult):
            return self._publish(call, None, arguments, arguments.message, started)

        try:
            params: object = parse(tool.params_type, arguments, extra="forbid")
        except SerdeError as exc:
            failure = ToolResult.error(tool_messages.invalid_params(tool.name, exc))
            return self._publish(call, None, failure, failure.message, started)
        except Exception as exc:  # e.g. a params type serde cannot handle: a defect in the tool
            logger.warning("parsing arguments of tool %r raised", tool.name, exc_info=exc)
            failure = ToolResult.error(tool_messages.unreadable_params(tool.name, self._redact(exc)))
            return self._publish(call, None, failure, failure.message, started)

        if self._deadline is not None and self._deadline.expired():
            failure = ToolResult.error(tool_messages.deadline_expired(tool.name))
            return self._publish(call, params, failure, failure.message, started)

        return self._run(tool, call, params, started)

    # -- steps -------------------------------------------------------------------

    def _decode(self, tool: AnyTool, raw: str | Mapping[str, JSONValue]) -> JSONValue | ToolResult[object]:
        """The arguments as JSON, or a failed result explaining why they are not usable."""
        value: object
        if isinstance(raw, str):
            if not raw or raw.isspace():
                return {}  # some providers send "" for a call without arguments
            try:
                value = json.loads(raw)
            except ValueError as exc:  # JSONDecodeError, or an integer too long to convert
                return ToolResult.error(tool_messages.invalid_json(tool.name, raw, exc))
            except RecursionError:
                return ToolResult.error(
                    f"Arguments for tool {tool.name!r} are nested too deeply to decode. Send one JSON object."
                )
            if type(value) is dict:
                return value  # pyright: ignore[reportUnknownVariableType]  # freshly decoded: ours to hand on
        else:
            value = raw
        if not isinstance(value, Mapping):
            fields = self._field_names(tool)
            return ToolResult.error(tool_messages.not_an_object(tool.name, value, fields))
        return dict(value)  # pyright: ignore[reportUnknownArgumentType]  # a copy the caller cannot change

    @staticmethod
    def _field_names(tool: AnyTool) -> tuple[str, ...]:
        properties = tool.parameters_schema().get("properties")
        return tuple(properties) if isinstance(properties, dict) else ()

    def _run(self, tool: AnyTool, call: ToolCall, params: object, started: datetime) -> ToolExecution:
        context = self._context
        session_snapshot = self._session.snapshot()
        resource_snapshot = self._resources.snapshot() if self._resources is not None else None
        escalate: BaseException | None = None
        try:
            outcome: object = tool.handler(params, context=context)
            if isinstance(outcome, ToolResult):
                result: ToolResult[object] = outcome  # pyright: ignore[reportUnknownVariableType]
                message = result.render()
            else:
                result = ToolResult.error(tool_messages.bad_return(tool.name, outcome))
                message = result.message
        except _PASS_THROUGH as exc:
            escalate = exc
            result = ToolResult.error(tool_messages.escalated(tool.name, self._redact(exc)))
            message = result.message
        except _EVALUATION_LIMITS as exc:
            escalate = PromptEvaluationError(f"tool {tool.name!r} hit a limit of the evaluation: {exc}")
            escalate.__cause__ = exc
            result = ToolResult.error(tool_messages.escalated(tool.name, self._redact(exc)))
            message = result.message
        except Exception as exc:
            mismatch = isinstance(exc, TypeError) and _raised_at_call_site(exc)
            if isinstance(exc, ToolValidationError):  # an expected refusal, not a bug
                logger.info("tool %r rejected its input: %s", tool.name, exc)
            else:
                logger.warning("tool %r raised; its state changes are rolled back", tool.name, exc_info=exc)
            result = ToolResult.error(
                tool_messages.handler_failed(tool.name, self._redact(exc), signature_mismatch=mismatch)
            )
            message = result.message
        except BaseException as exc:  # KeyboardInterrupt, SystemExit: roll back, report, go
            escalate = exc
            result = ToolResult.error(f"Tool {tool.name!r} was interrupted ({type(exc).__name__}).")
            message = result.message

        if not result.success:
            broken = self._rollback(tool, session_snapshot, resource_snapshot)
            if broken is not None and (escalate is None or isinstance(escalate, Exception)):
                escalate = broken
        execution = self._publish(call, params, result, message, started)
        if escalate is not None:
            raise escalate
        return execution

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
            + "; ".join(default_redact(exc) for exc in failures)
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
        arguments = call.arguments
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
            arguments=arguments if isinstance(arguments, str) else _as_text(arguments),
        )
        dispatched = publish(self._session.dispatcher, event, logger=logger, about=f"for tool {call.name!r}")
        return ToolExecution(result=result, message=message, event=event, subscriber_errors=dispatched.errors)


def _raised_at_call_site(exc: BaseException) -> bool:
    """True when the exception came from calling the handler, not from inside it.

    The traceback starts at the frame that caught it; a next frame exists only
    if the handler's own code started running.
    """
    traceback = exc.__traceback__
    return traceback is not None and traceback.tb_next is None


def _as_text(arguments: Mapping[str, JSONValue]) -> str:
    try:
        return json.dumps(arguments, ensure_ascii=False, separators=(",", ":"), default=repr)
    except (TypeError, ValueError, RecursionError):  # odd keys or a circular structure
        return repr(arguments)
