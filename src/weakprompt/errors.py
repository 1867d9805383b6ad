"""The exception hierarchy shared by every layer.

Everything weakprompt raises on purpose derives from :class:`WeakpromptError`, so
callers can catch the library's errors without catching their own bugs. The
cross-cutting classes are here; an exception that belongs to one package
(``SerdeError``, ``EventHandlerError``, ``ToolResultRejected``, ...) lives in
that package and derives from one of these (``specs/LAYOUT.md`` lists where).
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = [
    "AdapterError",
    "AuthenticationError",
    "BudgetExceededError",
    "ConfigurationError",
    "ContextLengthError",
    "ContextWindowExceededError",
    "DeadlineExceededError",
    "GuardrailTripped",
    "InvalidRequestError",
    "MaxTurnsExceededError",
    "OutputParseError",
    "OutputValidationError",
    "PromptEvaluationError",
    "PromptRenderError",
    "PromptValidationError",
    "ProviderConnectionError",
    "ProviderError",
    "RateLimitError",
    "SchemaVersionError",
    "SessionBusyError",
    "StoreError",
    "ToolValidationError",
    "TranscriptError",
    "VisibilityExpansionRequired",
    "WeakpromptError",
]


class WeakpromptError(Exception):
    """Base class for every error weakprompt raises deliberately."""


class ConfigurationError(WeakpromptError):
    """A component was wired up with values that cannot work together."""


class SessionBusyError(ConfigurationError):
    """Another run, in this process or another one, is running the same session of the same store."""


class PromptValidationError(WeakpromptError):
    """A prompt template is inconsistent; raised when the template is built."""


class PromptRenderError(WeakpromptError):
    """Rendering a bound prompt failed (missing params, bad override, ...)."""


class PromptEvaluationError(WeakpromptError):
    """An evaluation cannot continue; the loop stops and reports why."""


class MaxTurnsExceededError(PromptEvaluationError):
    """The model kept calling tools past the evaluation's turn cap."""

    def __init__(self, max_turns: int) -> None:
        super().__init__(f"the model did not give a final answer within max_turns={max_turns} turns")
        self.max_turns = max_turns


class OutputParseError(PromptEvaluationError):
    """The model's final answer did not match the prompt's output type."""


class GuardrailTripped(PromptEvaluationError):
    """A guardrail stopped the run: at ``point``, ``guardrail`` (its name) tripped, saying ``reason``.

    ``point`` is ``"input"``, ``"output"``, ``"tool_arguments"`` or
    ``"tool_result"``; ``call_id`` and ``tool`` name the call at the two tool
    points. The transcript keeps every turn stored before the trip, and the
    trip itself (``specs/GUARDRAILS.md``).
    """

    def __init__(
        self, point: str, guardrail: str, reason: str, *, call_id: str | None = None, tool: str | None = None
    ) -> None:
        where = f" on call {call_id!r} of tool {tool!r}" if call_id is not None else ""
        super().__init__(f"guardrail {guardrail!r} tripped at the {point} point{where}: {reason}")
        self.point = point
        self.guardrail = guardrail
        self.reason = reason
        self.call_id = call_id
        self.tool = tool
        self.recorded = False
        """Whether the transcript holds the trip yet (the loop records it once)."""


class OutputValidationError(PromptEvaluationError):
    """An output validator rejected the (well-typed) final answer; ``reason`` is what the model reads.

    Raised by a validator (``output_validators=``), it becomes a corrective
    turn while ``output_retries`` allow; then the run raises the last one.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class ToolValidationError(WeakpromptError):
    """A tool handler rejected its (well-typed) input; becomes a failed result."""


class DeadlineExceededError(WeakpromptError):
    """The evaluation's deadline has passed."""


class BudgetExceededError(WeakpromptError):
    """A token or call budget has been used up."""


class VisibilityExpansionRequired(WeakpromptError):
    """The model asked to open summarized sections; the loop re-renders.

    The dispatcher re-raises this instead of wrapping it in a failed result,
    because only the evaluation loop can re-render the prompt. It sets
    ``invoked`` to the call's ``ToolInvoked`` (published already), which a
    run streams like any other call's.
    """

    def __init__(self, section_keys: Sequence[str], reason: str = "") -> None:
        keys = tuple(section_keys)
        super().__init__(f"open sections requested: {', '.join(keys)}")
        self.section_keys: tuple[str, ...] = keys
        self.reason = reason
        self.invoked: object | None = None


class StoreError(WeakpromptError):
    """The backing database could not do what was asked."""


class SchemaVersionError(StoreError):
    """The database schema is newer than this code, or not ours at all."""


class TranscriptError(WeakpromptError):
    """A transcript operation was given something it cannot record."""


class AdapterError(WeakpromptError):
    """A provider call failed; carries the provider's own message."""

    def __init__(
        self,
        message: str,
        *,
        provider: str = "",
        status_code: int | None = None,
        retry_after: float | None = None,
        provider_error_type: str | None = None,
    ) -> None:
        super().__init__(message)
        self.provider = provider
        self.status_code = status_code
        self.provider_error_type = provider_error_type
        """The provider's name for the failure (``overloaded_error``, ``rate_limit_exceeded``...), if given.

        An error sent inside a stream has no status code; its type says whether it is retried.
        """
        self.retry_after = retry_after
        """Seconds the provider asked to wait before trying again (its ``retry-after``), if it did."""
        self.attempts = 1
        """How many times the call was tried before this error was raised (set by the retries)."""


class InvalidRequestError(AdapterError):
    """A request broke its provider's rules, found before it was sent (nothing was sent).

    ``index`` is the position of the offending message (or input item) in the
    request as it would have been sent, ``rule`` the short name of the rule.
    """

    def __init__(self, message: str, *, provider: str = "", index: int | None = None, rule: str = "") -> None:
        super().__init__(message, provider=provider)
        self.index = index
        self.rule = rule


class AuthenticationError(AdapterError):
    """The provider rejected the credentials."""


class RateLimitError(AdapterError):
    """The provider kept rate-limiting after the SDK's own retries."""


class ContextLengthError(AdapterError):
    """The request did not fit the model's context window."""


class ProviderError(AdapterError):
    """Any other provider-side failure (5xx after retries, bad request, ...)."""


class ProviderConnectionError(ProviderError):
    """The provider could not be reached, did not answer in time, or its reply broke off; names the URL."""


class ContextWindowExceededError(ContextLengthError):
    """A request would not fit the model's context window even after compaction; raised before it is sent."""
