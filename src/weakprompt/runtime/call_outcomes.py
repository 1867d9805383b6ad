"""What one tool call came to: its result, the model's text, what to raise, and the rollback.

The dispatcher settles a call with these once its handler has run (see
``runtime.handler_calls``): the outcome is checked, put into words that are
scrubbed and cut, and the state the call changed is restored when it failed.
"""

from __future__ import annotations

import logging
from typing import cast

import attrs

from ..errors import (
    BudgetExceededError,
    DeadlineExceededError,
    PromptEvaluationError,
    ToolValidationError,
    VisibilityExpansionRequired,
)
from ..parts import DocumentPart, ImagePart
from ..tools import AnyTool, ToolResult
from . import tool_messages
from .handler_calls import Ready
from .redaction import (
    MAX_ERROR_TEXT,
    Redactor,
    clip,
    describe_exception,
    lone_surrogate,
    redacted,
    type_name,
)
from .tool_failures import report_broken_tool

__all__ = [
    "EVALUATION_LIMITS",
    "PASS_THROUGH",
    "BadResult",
    "as_result",
    "checked_rendering",
    "failure",
    "failure_text",
    "handler_failure",
    "outcome_of",
    "raised_at_call_site",
    "rollback",
]

# The dispatcher's logger: what settling a call logs keeps the name it always had.
logger = logging.getLogger("weakprompt.runtime.dispatcher")

# Exceptions a handler may raise to hand control back to the evaluation loop:
# they are re-raised (after rollback and the event), never turned into results.
PASS_THROUGH = (VisibilityExpansionRequired, PromptEvaluationError)
# Limits of the whole evaluation: the loop must stop, so they become an
# evaluation error rather than a result the model could argue with.
EVALUATION_LIMITS = (DeadlineExceededError, BudgetExceededError)


def as_result(outcome: object) -> ToolResult[object]:
    """What the handler returned as a result: a plain value (``None`` too) is a success carrying it."""
    if isinstance(outcome, ToolResult):
        return cast("ToolResult[object]", outcome)
    if isinstance(outcome, ImagePart | DocumentPart):  # a screenshot tool's picture: the model sees it
        return ToolResult(message="", value=outcome, exclude_value_from_context=True, parts=(outcome,))
    return ToolResult.ok(outcome)


class BadResult(Exception):
    """A ``ToolResult`` the model cannot be shown: a defect of the tool."""

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem


def checked_rendering(result: ToolResult[object]) -> str:
    """``result.render()``, when it is text a transcript can store; else :class:`BadResult`."""
    if not isinstance(result.success, bool):  # pyright: ignore[reportUnnecessaryIsInstance]  # a tool's value
        raise BadResult(f"its result's success is {type_name(result.success)}, not a bool")
    if not isinstance(result.message, str):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise BadResult(f"its result's message is {type_name(result.message)}, not a str")
    for index, part in enumerate(result.parts):
        if not isinstance(part, ImagePart | DocumentPart):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise BadResult(
                f"its result's parts[{index}] is {type_name(part)}, not an ImagePart or DocumentPart"
            )
    try:
        text = result.render()
    except Exception as exc:
        raise BadResult(f"its result could not be rendered: {describe_exception(exc)}") from exc
    if not isinstance(text, str):  # pyright: ignore[reportUnnecessaryIsInstance]  # a value's own render()
        raise BadResult(f"its result rendered as {type_name(text)}, not as text")
    where = lone_surrogate(text)
    if where is not None:
        raise BadResult(f"its result holds a lone surrogate {where}, which is not valid Unicode")
    return str.__str__(text)


def raised_at_call_site(exc: BaseException) -> bool:
    """True when the exception came from calling the handler, not from inside it.

    The traceback starts at the frame that caught it; a next frame exists only
    if the handler's own code started running.
    """
    traceback = exc.__traceback__
    return traceback is not None and traceback.tb_next is None


def outcome_of(
    tool: AnyTool,
    result: ToolResult[object] | None,
    rendered: str,
    caught: BaseException | None,
    *,
    redact: Redactor,
) -> tuple[ToolResult[object], str, BaseException | None]:
    """The result, the model's text and what to raise, for what the handler did."""
    if caught is None and result is not None:
        if result.success:
            return result, rendered, None
        # the handler's own failure text is scrubbed too, but not cut: it is the tool's output
        cleaned = attrs.evolve(result, message=redacted(result.message, redact))
        return cleaned, redacted(rendered, redact), None
    if isinstance(caught, BadResult):
        return *failure(tool_messages.bad_result(tool.name, caught.problem), redact), None
    if isinstance(caught, PASS_THROUGH):
        return *failure(tool_messages.escalated(tool.name, describe_exception(caught)), redact), caught
    if isinstance(caught, EVALUATION_LIMITS):
        text = describe_exception(caught)
        escalate = PromptEvaluationError(
            f"tool {tool.name!r} hit a limit of the evaluation: {failure_text(text, redact)}"
        )
        escalate.__cause__ = caught
        return *failure(tool_messages.escalated(tool.name, text), redact), escalate
    if isinstance(caught, Exception):
        return *handler_failure(tool, caught, redact=redact), None
    # KeyboardInterrupt, SystemExit: rolled back and reported, then on its way
    return *failure(tool_messages.interrupted(tool.name, type_name(caught)), redact), caught


def handler_failure(tool: AnyTool, exc: Exception, *, redact: Redactor) -> tuple[ToolResult[object], str]:
    mismatch = isinstance(exc, TypeError) and raised_at_call_site(exc)
    text = describe_exception(exc)
    if isinstance(exc, ToolValidationError):  # an expected refusal, not a bug
        logger.info("tool %r rejected its input: %s", tool.name, failure_text(text, redact))
    else:
        report_broken_tool(tool.name, exc, redact=redact)  # once, visible by default
    return failure(tool_messages.handler_failed(tool.name, text, signature_mismatch=mismatch), redact)


def failure_text(text: str, redact: Redactor) -> str:
    """A failure text as it may leave the dispatcher: scrubbed by the hook, then cut."""
    return clip(redacted(text, redact), MAX_ERROR_TEXT)


def failure(text: str, redact: Redactor) -> tuple[ToolResult[object], str]:
    result = ToolResult.error(failure_text(text, redact))
    return result, result.message


def rollback(ready: Ready, *, redact: Redactor) -> PromptEvaluationError | None:
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
        + failure_text("; ".join(describe_exception(exc) for exc in failures), redact)
    )
    error.__cause__ = failures[0]
    return error
