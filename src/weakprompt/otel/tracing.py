"""The runtime's tracing hooks, implemented with OpenTelemetry spans.

One :class:`OTelTracing` turns each run into an ``invoke_agent`` span (a
child of whatever span is current when the run starts), each model call
into a ``chat`` span and each tool call into an ``execute_tool`` span, both
children of the run's span. Model calls made for a tool result (summaries)
or by ``tool_output`` (extraction) are ``chat`` spans under the tool call's
span, marked with their purpose. A hook never raises: the OpenTelemetry API
swallows its own errors, and what we compute ourselves is guarded.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
from collections.abc import Generator, Mapping
from typing import TYPE_CHECKING

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer, TracerProvider
from opentelemetry.util.types import AttributeValue

from .. import __version__
from ..errors import GuardrailTripped
from ..jsontypes import JSONObject
from ..messages import AssistantTurn, FinishReason, ToolCall, Usage
from ..model import ModelRequest, ProviderAdapter
from ..runtime.redaction import Redactor, describe_exception, type_name
from ..runtime.tracing import ModelCallPurpose, install_tracing
from . import attributes as attr
from . import content
from .traced_adapter import TracedAdapter

if TYPE_CHECKING:
    from ..events import CacheBusted, Compacted

__all__ = ["OTelTracing", "instrument", "uninstrument"]

logger = logging.getLogger(__name__)

# True while a chat span of ours is current: a traced adapter called inside it
# (the loop's own call, made through an adapter that was traced for a sub-agent) adds no second span.
_IN_MODEL_CALL: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "weakprompt_otel_model_call", default=False
)

# Adapter name -> the GenAI semantic conventions' provider value (``gen_ai.provider.name``). Both
# OpenAI adapters (Chat Completions and Responses) are named ``openai``: one provider, two APIs.
_PROVIDERS = {"openai": "openai", "anthropic": "anthropic", "gemini": "gcp.gemini", "local": "llama_cpp"}


def _provider(adapter: ProviderAdapter) -> str:
    return _PROVIDERS.get(adapter.name, adapter.name)


class OTelTracing:
    """An instrumentation for :func:`weakprompt.runtime.run`: pass it as ``tracing=``, or :func:`instrument`.

    ``tracer_provider`` defaults to the global one (``opentelemetry.trace``).
    ``capture_content`` records the messages, tool arguments and results,
    each through the run's redaction hook; off by default.
    """

    def __init__(
        self, tracer_provider: TracerProvider | None = None, *, capture_content: bool = False
    ) -> None:
        self.tracer: Tracer = trace.get_tracer("weakprompt", __version__, tracer_provider=tracer_provider)
        self.capture_content = capture_content

    def start_run(
        self,
        *,
        agent_name: str,
        adapter: ProviderAdapter,
        conversation_id: str,
        input: str | None,
        redact: Redactor,
    ) -> RunSpan:
        attributes: dict[str, AttributeValue] = {
            attr.OPERATION: "invoke_agent",
            attr.PROVIDER: _provider(adapter),
            attr.AGENT_NAME: agent_name,
            attr.REQUEST_MODEL: adapter.model,
            attr.CONVERSATION_ID: conversation_id,
        }
        if self.capture_content and input is not None:
            attributes[attr.INPUT_MESSAGES] = content.user_input(input, redact)
        span = self.tracer.start_span(
            f"invoke_agent {agent_name}", kind=SpanKind.INTERNAL, attributes=attributes
        )
        return RunSpan(self, span, adapter=adapter, conversation_id=conversation_id, redact=redact)


def instrument(
    tracer_provider: TracerProvider | None = None, *, capture_content: bool = False
) -> OTelTracing:
    """Trace every run from now on (one not given its own ``tracing=``); returns the instrumentation."""
    tracing = OTelTracing(tracer_provider, capture_content=capture_content)
    install_tracing(tracing)
    return tracing


def uninstrument() -> None:
    """Stop tracing runs that are not given their own ``tracing=``."""
    install_tracing(None)


class _Step:
    """One span of a run, and what every step does with it."""

    in_model_call = False

    def __init__(self, span: Span) -> None:
        self.span = span

    @contextlib.contextmanager
    def activated(self) -> Generator[object]:
        token = _IN_MODEL_CALL.set(self.in_model_call)
        try:
            with trace.use_span(
                self.span, end_on_exit=False, record_exception=False, set_status_on_exception=False
            ):
                yield self
        finally:
            _IN_MODEL_CALL.reset(token)

    def ids(self) -> JSONObject | None:
        context = self.span.get_span_context()
        if not context.is_valid or not context.trace_flags.sampled:
            return None
        return {"trace_id": format(context.trace_id, "032x"), "span_id": format(context.span_id, "016x")}

    def _failed(self, error: BaseException, *, description: str | None = None) -> None:
        if isinstance(error, GuardrailTripped):  # which guardrail stopped the run, where and why
            self.span.add_event(attr.EVENT_GUARDRAIL_TRIPPED, _guardrail_trip(error))
        self.span.set_attribute(attr.ERROR_TYPE, _error_type(error))
        self.span.set_status(Status(StatusCode.ERROR, description or type_name(error)))

    def _end_failed(self, error: BaseException) -> None:
        if self.span.is_recording():
            self._failed(error)
            self.span.end()


def _guardrail_trip(trip: GuardrailTripped) -> dict[str, AttributeValue]:
    attributes: dict[str, AttributeValue] = {
        attr.GUARDRAIL_POINT: trip.point,
        attr.GUARDRAIL_NAME: trip.guardrail,
        attr.GUARDRAIL_REASON: trip.reason,
    }
    if trip.call_id is not None:
        attributes[attr.TOOL_CALL_ID] = trip.call_id
        attributes[attr.TOOL_NAME] = trip.tool or ""
    return attributes


def _error_type(error: BaseException) -> str:
    kind = type(error)
    return kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"


class RunSpan(_Step):
    """The ``invoke_agent`` span of one run, and the factory of its children."""

    def __init__(
        self,
        tracing: OTelTracing,
        span: Span,
        *,
        adapter: ProviderAdapter,
        conversation_id: str,
        redact: Redactor,
    ) -> None:
        super().__init__(span)
        self.tracer = tracing.tracer
        self.capture_content = tracing.capture_content
        self.adapter = adapter
        self.conversation_id = conversation_id
        self.redact = redact
        self._as_parent: Context = trace.set_span_in_context(span)

    def model_call(
        self,
        request: ModelRequest,
        *,
        adapter: ProviderAdapter | None = None,
        purpose: ModelCallPurpose | None = None,
        parent: Context | None = None,
    ) -> ModelCallSpan:
        used = adapter if adapter is not None else self.adapter
        attributes: dict[str, AttributeValue] = {
            attr.OPERATION: "chat",
            attr.PROVIDER: _provider(used),
            attr.REQUEST_MODEL: used.model,
            attr.CONVERSATION_ID: self.conversation_id,
        }
        if request.max_output_tokens is not None:
            attributes[attr.REQUEST_MAX_TOKENS] = request.max_output_tokens
        if purpose is not None:
            attributes[attr.PURPOSE] = purpose
        if self.capture_content:
            attributes[attr.INPUT_MESSAGES] = content.input_messages(request.context.messages, self.redact)
        span = self.tracer.start_span(
            f"chat {used.model}",
            context=parent if parent is not None else self._as_parent,
            kind=SpanKind.CLIENT,
            attributes=attributes,
        )
        return ModelCallSpan(span, used, capture_content=self.capture_content, redact=self.redact)

    def tool_call(self, call: ToolCall) -> ToolSpan:
        attributes: dict[str, AttributeValue] = {
            attr.OPERATION: "execute_tool",
            attr.TOOL_NAME: call.name,
            attr.TOOL_CALL_ID: call.id,
            attr.TOOL_TYPE: "function",
            attr.CONVERSATION_ID: self.conversation_id,
        }
        if self.capture_content:
            attributes[attr.TOOL_ARGUMENTS] = content.scrubbed(call.arguments_json(), self.redact)
        span = self.tracer.start_span(
            f"execute_tool {call.name}",
            context=self._as_parent,
            kind=SpanKind.INTERNAL,
            attributes=attributes,
        )
        return ToolSpan(span, capture_content=self.capture_content, redact=self.redact)

    def traced_adapter(self, adapter: ProviderAdapter, purpose: ModelCallPurpose) -> ProviderAdapter:
        return TracedAdapter(adapter, self, purpose)

    def nested_model_call(
        self, request: ModelRequest, adapter: ProviderAdapter, purpose: ModelCallPurpose
    ) -> ModelCallSpan | None:
        """The span of a pipeline model call, under the current step; ``None`` inside a model call already."""
        if _IN_MODEL_CALL.get():
            return None
        current = trace.get_current_span()
        parent = None if not current.get_span_context().is_valid else trace.set_span_in_context(current)
        return self.model_call(request, adapter=adapter, purpose=purpose, parent=parent)

    def rolled_back(self) -> None:
        self.span.add_event(attr.EVENT_RUN_ROLLED_BACK)

    def compacted(self, event: Compacted) -> None:
        self.span.add_event(
            attr.EVENT_COMPACTED,
            {
                "weakprompt.compaction.tier": event.tier,
                "weakprompt.compaction.commit": event.commit_hash,
                "weakprompt.compaction.covered": len(event.covered),
                "weakprompt.compaction.tokens_before": event.tokens_before,
                "weakprompt.compaction.tokens_after": event.tokens_after,
                "weakprompt.compaction.context_window": event.context_window,
            },
        )

    def finish(self, *, text: str, usage: Usage, turns: int, finish_reason: FinishReason | None) -> None:
        if not self.span.is_recording():
            return
        self.span.set_attributes(_usage(usage))
        self.span.set_attribute(attr.TURNS, turns)
        if finish_reason is not None:
            self.span.set_attribute(attr.FINISH_REASONS, (finish_reason,))
        if self.capture_content:
            self.span.set_attribute(
                attr.OUTPUT_MESSAGES, content.final_answer(text, finish_reason, self.redact)
            )
        self.span.end()

    def fail(self, error: BaseException) -> None:
        self._end_failed(error)


def _usage(usage: Usage) -> Mapping[str, AttributeValue]:
    """The GenAI usage attributes; the cache counts only when the provider reported some."""
    counts: dict[str, AttributeValue] = {
        attr.INPUT_TOKENS: usage.input_tokens,
        attr.OUTPUT_TOKENS: usage.output_tokens,
    }
    if usage.cached_input_tokens:
        counts[attr.CACHE_READ_INPUT_TOKENS] = usage.cached_input_tokens
    if usage.cache_write_tokens:
        counts[attr.CACHE_CREATION_INPUT_TOKENS] = usage.cache_write_tokens
    return counts


class ModelCallSpan(_Step):
    """A ``chat`` span: one model call."""

    in_model_call = True

    def __init__(
        self, span: Span, adapter: ProviderAdapter, *, capture_content: bool, redact: Redactor
    ) -> None:
        super().__init__(span)
        self.adapter = adapter
        self.capture_content = capture_content
        self.redact = redact

    def finish(self, reply: AssistantTurn, usage: Usage) -> None:
        if not self.span.is_recording():
            return
        self.span.set_attribute(attr.RESPONSE_MODEL, self.adapter.model)
        self.span.set_attribute(attr.FINISH_REASONS, (reply.finish_reason,))
        self.span.set_attributes(_usage(usage))
        if self.capture_content:
            self.span.set_attribute(attr.OUTPUT_MESSAGES, content.output_messages(reply, self.redact))
        self.span.end()

    def fail(self, error: BaseException) -> None:
        self._end_failed(error)

    def cache_busted(self, event: CacheBusted) -> None:
        attributes: dict[str, AttributeValue] = {
            "weakprompt.cache.kind": event.kind,
            "weakprompt.cache.cause": event.cause,
            "weakprompt.cache.name": event.name,
            "weakprompt.cache.position": event.position,
        }
        for key, value in (
            ("weakprompt.cache.old_hash", event.old_hash),
            ("weakprompt.cache.new_hash", event.new_hash),
            ("weakprompt.cache.commit", event.commit),
            ("weakprompt.cache.previous_session", event.previous_session),
            ("weakprompt.cache.compaction_tier", event.compaction_tier),
        ):
            if value is not None:
                attributes[key] = value
        self.span.add_event(attr.EVENT_CACHE_BUSTED, attributes)

    def retried(self, attempt: int, error: BaseException, delay_seconds: float | None) -> None:
        event: dict[str, AttributeValue] = {attr.RETRY_ATTEMPT: attempt, attr.ERROR_TYPE: _error_type(error)}
        if delay_seconds is not None:
            event[attr.RETRY_DELAY] = delay_seconds
        self.span.add_event(attr.EVENT_RETRY, event)


class ToolSpan(_Step):
    """An ``execute_tool`` span: one tool call, until its result is committed."""

    def __init__(self, span: Span, *, capture_content: bool, redact: Redactor) -> None:
        super().__init__(span)
        self.capture_content = capture_content
        self.redact = redact
        self.raised: BaseException | None = None

    def handler_raised(self, error: BaseException) -> None:
        self.raised = error
        event: dict[str, AttributeValue] = {"exception.type": _error_type(error)}
        if self.capture_content:
            event["exception.message"] = content.scrubbed(describe_exception(error), self.redact)
        self.span.add_event("exception", event)

    def rolled_back(self) -> None:
        self.span.add_event(attr.EVENT_TOOL_ROLLED_BACK)

    def handle(self, handle: str, reason: str, size_bytes: int | None, /) -> None:
        event: dict[str, AttributeValue] = {"weakprompt.handle": handle, "weakprompt.oversize_reason": reason}
        if size_bytes is not None:
            event["weakprompt.size_bytes"] = size_bytes
        self.span.add_event(attr.EVENT_HANDLE, event)

    def finish(self, content_text: str, /, *, is_error: bool) -> None:
        if not self.span.is_recording():
            return
        if self.capture_content:
            self.span.set_attribute(attr.TOOL_RESULT, content.scrubbed(content_text, self.redact))
        if is_error:
            self.span.set_attribute(
                attr.ERROR_TYPE, _error_type(self.raised) if self.raised is not None else "tool_error"
            )
            shown = (
                content.scrubbed(content_text, self.redact)
                if self.capture_content
                else "the tool call failed"
            )
            self.span.set_status(Status(StatusCode.ERROR, shown))
        self.span.end()

    def fail(self, error: BaseException) -> None:
        self._end_failed(error)
