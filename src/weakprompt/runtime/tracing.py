"""What the loop tells an instrumentation about a run: the tracing hooks.

The runtime knows no tracing library. An instrumentation (``weakprompt.otel``
for OpenTelemetry) implements :class:`Tracing` and is handed to a run as
``run(..., tracing=)``, or installed for every run with
:func:`install_tracing`. With none, the loop calls nothing: each hook sits
behind one ``is None`` test, so a run that is not traced costs what it cost
before the hooks existed.

The hooks describe a run in the loop's own terms (a run, each model call,
each tool call, the model calls made for summaries and extraction, the
rollbacks and handles on the way); how they become spans and attributes is
the instrumentation's business. Spans are identified for the transcript by
:meth:`SpanHook.ids` (stored on the commits of the turn, see
``specs/OBSERVABILITY.md``).

Hook methods must not raise: a tracing failure must never fail a run. The
loop does not guard them (a guard costs time on every call); the
instrumentation does.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Generator
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Literal, Protocol

if TYPE_CHECKING:
    from ..events import CacheBusted, Compacted
    from ..jsontypes import JSONObject
    from ..messages import AssistantTurn, FinishReason, ToolCall, Usage
    from ..model import ModelRequest, ProviderAdapter
    from .redaction import Redactor

__all__ = [
    "ModelCallPurpose",
    "ModelCallSpan",
    "RunSpan",
    "SpanHook",
    "ToolSpan",
    "Tracing",
    "install_tracing",
    "installed_tracing",
    "model_call_scope",
    "report_retry",
]

ModelCallPurpose = Literal["summarization", "extraction"]
"""Why a model call other than the loop's own turn is made."""


class SpanHook(Protocol):
    """What every traced step has: it can be made current, and it can be named to the transcript."""

    def activated(self) -> AbstractContextManager[object]:
        """Make this step the current one (in this thread or task) while the block runs."""
        ...

    def ids(self) -> JSONObject | None:
        """How the trace names this step (for the transcript), or ``None`` when it is not recorded."""
        ...


class ModelCallSpan(SpanHook, Protocol):
    """One call of the loop to the model: a turn's reply."""

    def finish(self, reply: AssistantTurn, usage: Usage) -> None: ...

    def fail(self, error: BaseException) -> None: ...

    def retried(self, attempt: int, error: BaseException, delay_seconds: float | None) -> None:
        """The adapter retries: ``attempt`` failed with ``error``; the next waits ``delay_seconds``."""
        ...

    def cache_busted(self, event: CacheBusted) -> None:
        """This request's prefix differs from the last one's (``specs/CACHING.md``)."""
        ...


class ToolSpan(SpanHook, Protocol):
    """One tool call, from the dispatcher's first check to its committed result."""

    def handler_raised(self, error: BaseException) -> None:
        """The handler raised ``error`` (it became a failed result, or escalates)."""
        ...

    def rolled_back(self) -> None:
        """The call's state changes were undone."""
        ...

    def handle(self, handle: str, reason: str, size_bytes: int | None, /) -> None:
        """The output is stored behind ``handle``; the model sees the handle message."""
        ...

    def finish(self, content: str, /, *, is_error: bool) -> None:
        """The result as committed (``content`` is what the model is shown)."""
        ...

    def fail(self, error: BaseException) -> None:
        """The run stopped before this call's result was committed."""
        ...


class RunSpan(SpanHook, Protocol):
    """One run of the loop, from its start to its response or error."""

    def model_call(self, request: ModelRequest) -> ModelCallSpan: ...

    def tool_call(self, call: ToolCall) -> ToolSpan: ...

    def traced_adapter(self, adapter: ProviderAdapter, purpose: ModelCallPurpose) -> ProviderAdapter:
        """``adapter``, reporting each call made through it (nested under the current step)."""
        ...

    def rolled_back(self) -> None:
        """The session and resources were put back as of the last stored turn."""
        ...

    def compacted(self, event: Compacted) -> None:
        """The history was compacted before a request (``specs/COMPACTION.md``)."""
        ...

    def finish(self, *, text: str, usage: Usage, turns: int, finish_reason: FinishReason | None) -> None:
        """The run answered ``text`` after ``turns`` model calls (``usage``: the whole run's)."""
        ...

    def fail(self, error: BaseException) -> None: ...


class Tracing(Protocol):
    """An instrumentation: it starts one :class:`RunSpan` per run."""

    def start_run(
        self,
        *,
        agent_name: str,
        adapter: ProviderAdapter,
        conversation_id: str,
        input: str | None,
        redact: Redactor,
    ) -> RunSpan: ...


_installed: list[Tracing] = []


def install_tracing(tracing: Tracing | None) -> None:
    """Trace every run that is not given its own ``tracing=`` with ``tracing`` (``None``: none)."""
    _installed[:] = [] if tracing is None else [tracing]


def installed_tracing() -> Tracing | None:
    """The instrumentation :func:`install_tracing` installed, if any."""
    return _installed[0] if _installed else None


_model_call: contextvars.ContextVar[ModelCallSpan | None] = contextvars.ContextVar(
    "weakprompt_model_call", default=None
)


@contextlib.contextmanager
def model_call_scope(span: ModelCallSpan) -> Generator[None]:
    """Make ``span`` the model call :func:`report_retry` reports to, while the block runs."""
    token = _model_call.set(span)
    try:
        yield
    finally:
        _model_call.reset(token)


def report_retry(attempt: int, error: BaseException, delay_seconds: float | None = None) -> None:
    """For adapters: a provider request is being retried (``attempt`` failed with ``error``).

    Recorded on the span of the traced model call in progress, if any; a
    no-op otherwise (one context-variable read). Adapters sit above the
    runtime, so they may call it without knowing of any instrumentation.
    """
    span = _model_call.get()
    if span is not None:
        span.retried(attempt, error, delay_seconds)
