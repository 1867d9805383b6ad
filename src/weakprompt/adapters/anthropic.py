"""Anthropic Messages API through the official ``anthropic`` SDK.

The transcript's wire conversion supplies ``system`` and the messages
(tool results as ``tool_result`` blocks, ``is_error`` on failed ones); this
module adds tools, tool choice, the token limit and structured output, and
reads ``text`` / ``tool_use`` blocks back into a neutral turn, whole
(``complete``, on the sync client) or from the raw stream events
(``stream``, on the async client, or on the sync one in worker threads when
only that one was given). A streamed reply is complete only at its
``message_stop``: a stream that stops before it broke off.

Extended thinking (``thinking_budget``, or ``reasoning_effort`` as a budget)
is sent as ``thinking={"type": "enabled", ...}``; the reply's ``thinking``
and ``redacted_thinking`` blocks become the turn's reasoning parts, issued
by ``anthropic:<model>``, and go back first in their assistant message, as
they came, on every later request (specs/REASONING.md).

The SDK is imported when an adapter is built, never when this module loads.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from typing import TYPE_CHECKING, Literal, cast

from ..errors import ConfigurationError
from ..jsontypes import JSONObject, JSONValue
from ..messages import AssistantTurn, FinishReason, ToolCall, Usage
from ..model import (
    TURN_CONTEXT_KEY,
    ConcreteOutputMode,
    ForceTool,
    ModelEvent,
    ModelRequest,
    ModelSettings,
    OutputMode,
    ReasoningDelta,
    ReplyAssembler,
    SettingsAware,
    TextDelta,
    ToolCallDelta,
    ToolCallStarted,
    ToolChoice,
    UsageReported,
    check_supported,
)
from ..parts import Part, ReasoningPart, TextPart
from ._support import (
    AdapterIdentity,
    check_tool_choice,
    clients_or_build,
    in_worker_threads,
    is_strict_schema,
    json_answer_instruction,
    missing_client,
    parameters_schema,
    sdk_retries_and_clients,
)
from .error_mapping import cut_stream, from_anthropic_error
from .output_modes import (
    FINAL_ANSWER_DESCRIPTION,
    FINAL_ANSWER_TOOL,
    OutputModes,
    final_answer_choice,
    with_schema_instruction,
)
from .request_rules import check_anthropic_messages, continues_tool_use, starts_with_thinking
from .retries import RetrySetting
from .wire.anthropic import PROVIDER, anthropic_params, with_cache_points
from .wire.reasoning import ForeignReasoning, check_foreign_reasoning, issuer_of

if TYPE_CHECKING:
    import anthropic
    from anthropic.types import (
        Message as AnthropicMessage,
    )
    from anthropic.types import (
        MessageDeltaUsage,
        MessageParam,
        RawMessageStreamEvent,
        ThinkingConfigParam,
        ToolChoiceParam,
        ToolParam,
    )
    from anthropic.types import Usage as AnthropicUsage
    from anthropic.types.message_create_params import (
        MessageCreateParamsNonStreaming,
        MessageCreateParamsStreaming,
    )

    from ..tools import AnyTool

__all__ = [
    "ANTHROPIC_SETTINGS",
    "EFFORT_BUDGETS",
    "MIN_THINKING_BUDGET",
    "AnthropicAdapter",
    "tool_choice_param",
    "turn_from_message",
]

_KEY_VARIABLES = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")
# Anthropic-compatible servers at a base_url rarely check keys, but the SDK needs one to send.
_PLACEHOLDER_KEY = "not-needed"

_STOP_REASONS: dict[str, FinishReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "refusal": "content_filter",
}


OUTPUT_MODES: tuple[ConcreteOutputMode, ...] = ("native", "tool", "prompted")
"""The Messages API has no plain JSON mode; ``auto`` tries these in this order."""


ANTHROPIC_SETTINGS = frozenset(
    {"max_output_tokens", "stop", "parallel_tool_calls", "service_tier", "extra"}
    | {"thinking_budget", "reasoning_effort"}
)
"""The model settings the Messages API takes here.

The SDK's request type has no ``temperature`` or ``top_p`` (newer models
refuse them; for an older model pass them in ``extra``). Extended thinking
takes a token budget: ``thinking_budget``, or ``reasoning_effort`` read as
one of :data:`EFFORT_BUDGETS`.
"""

MIN_THINKING_BUDGET = 1024
"""The smallest thinking budget the Messages API takes."""

EFFORT_BUDGETS: Mapping[str, int] = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 24576}
"""The thinking budget each ``reasoning_effort`` stands for."""


class AnthropicAdapter(SettingsAware, AdapterIdentity):
    """A :class:`~weakprompt.model.ProviderAdapter` for the Messages API.

    ``max_tokens`` is the reply limit used when the request sets none (the
    API requires one). Structured output uses the API's JSON-schema output
    format when the schema is closed (every object lists all its properties
    as required and forbids extras) and otherwise asks for JSON in the system
    prompt; the loop parses and validates the answer either way.

    ``cache_points`` (default on): a request from the loop gets
    ``cache_control`` breakpoints after the tools, at the end of the stable
    system text and on the latest conversation block before the turn text
    (``specs/CACHING.md``).

    Clients follow the same rule as :class:`~weakprompt.adapters.openai.OpenAIAdapter`:
    ``client`` (``anthropic.Anthropic``) for ``complete`` (and for ``stream``
    in worker threads when it is the only one), ``async_client``
    (``anthropic.AsyncAnthropic``) for ``stream``, or both built from the settings.
    """

    def __init__(
        self,
        model: str,
        *,
        client: anthropic.Anthropic | None = None,
        async_client: anthropic.AsyncAnthropic | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
        max_tokens: int = 1024,
        settings: ModelSettings | None = None,
        max_retries: int | None = None,
        timeout: float | None = None,
        context_window: int | None = None,
        strict_tools: bool = False,
        output_mode: OutputMode = "auto",
        retries: RetrySetting = None,
        foreign_reasoning: ForeignReasoning = "drop",
        name: str = "anthropic",
        cache_points: bool = True,
    ) -> None:
        if not model:
            raise ConfigurationError("AnthropicAdapter: model must be a non-empty model name")
        self._foreign_reasoning: ForeignReasoning = check_foreign_reasoning(
            "AnthropicAdapter", foreign_reasoning
        )
        if max_tokens < 1:
            raise ConfigurationError(f"AnthropicAdapter: max_tokens must be at least 1, got {max_tokens}")
        super().__init__(name=name, model=model, context_window=context_window)
        self._max_tokens = max_tokens
        self.model_settings = ModelSettings().merged(settings)
        check_supported(self.model_settings, ANTHROPIC_SETTINGS, adapter="AnthropicAdapter", model=model)
        _thinking_budget(self.model_settings)  # a bad budget is refused when the adapter is built
        self._strict_tools = strict_tools
        self._cache_points = cache_points
        self.output_modes = OutputModes(
            "AnthropicAdapter", supported=OUTPUT_MODES, auto_order=OUTPUT_MODES, default=output_mode
        )
        self._client, built_async = clients_or_build(
            "AnthropicAdapter",
            client,
            async_client,
            _build_clients,
            api_key=api_key,
            base_url=base_url,
            timeout=timeout,
        )
        self.retrier, self._client, self._async_clients = sdk_retries_and_clients(
            "AnthropicAdapter",
            provider=name,
            model=model,
            given=(client, async_client),
            ready=(self._client, built_async),
            rebuild_async=lambda: _build_clients(
                api_key=api_key, base_url=base_url, timeout=timeout, sync=False
            )[1],
            retries=retries,
            max_retries=max_retries,
        )

    @property
    def client(self) -> anthropic.Anthropic:
        """The sync client ``complete`` uses."""
        if self._client is None:
            raise missing_client("AnthropicAdapter", "complete()", "client", "anthropic.Anthropic")
        return self._client

    @property
    def async_client(self) -> anthropic.AsyncAnthropic:
        """The async client ``stream`` uses (none when only a sync client was given)."""
        if self._async_clients.current is None:
            raise ConfigurationError(
                "AnthropicAdapter: no anthropic.AsyncAnthropic client was given "
                "(stream() runs the sync client in worker threads)"
            )
        return self._async_clients.current

    def build_params(self, request: ModelRequest) -> MessageCreateParamsNonStreaming:
        """The keyword arguments for ``messages.create`` (no network)."""
        check_tool_choice(request, self._name)
        request, mode = self.output_modes.pinned(request)
        if mode == "prompted":
            request = with_schema_instruction(request)
        wire = anthropic_params(
            request.context.messages, request.context.tools, foreign_reasoning=self._foreign_reasoning
        )
        check_supported(request.settings, ANTHROPIC_SETTINGS, adapter="AnthropicAdapter", model=self._model)
        settings = self.model_settings.merged(request.settings)
        limit = request.max_output_tokens or settings.max_output_tokens
        budget = _thinking_budget(settings)
        messages = cast("list[Mapping[str, object]]", wire["messages"])
        if budget is not None and continues_tool_use(messages) and not starts_with_thinking(messages[-2]):
            budget = None  # one thinking setting per tool-use turn: one begun without thinking ends so
        params: MessageCreateParamsNonStreaming = {
            "model": self._model,
            "max_tokens": limit or self._max_tokens,
            "messages": cast("list[MessageParam]", wire["messages"]),
        }
        if budget is not None:
            params["thinking"] = _thinking_param(budget, limit, settings)
            params["max_tokens"] = limit or budget + self._max_tokens
        system = wire.get("system")
        system = system if isinstance(system, str) else None
        schema = request.output_schema
        if mode == "native" and schema is not None:
            if is_strict_schema(schema):
                params["output_config"] = {"format": {"type": "json_schema", "schema": _plain(schema)}}
            else:  # the API takes closed schemas only: an open one is asked for in the instructions
                system = _append_system(system, json_answer_instruction(schema))
        if system:
            params["system"] = system
        tools: list[ToolParam] = [self._tool_param(tool) for tool in request.tools]
        choice = request.tool_choice
        if mode == "tool" and schema is not None:
            choice = final_answer_choice(request)
            tools.append(
                {
                    "name": FINAL_ANSWER_TOOL,
                    "description": FINAL_ANSWER_DESCRIPTION,
                    "input_schema": _plain(schema),
                }
            )
        if tools:
            if budget is not None:
                _check_thinking_choice(choice, forced_answer=mode == "tool" and schema is not None)
            params["tools"] = tools
            params["tool_choice"] = tool_choice_param(choice, parallel=settings.parallel_tool_calls)
        _apply_settings(params, settings)
        check_anthropic_messages(messages, thinking=budget is not None, provider=self._name)
        if self._cache_points and request.cache is not None:
            params = _with_cache_points(params, request)
        return params

    def build_stream_params(self, request: ModelRequest) -> MessageCreateParamsStreaming:
        """:meth:`build_params` for a streamed reply (no network)."""
        return {**self.build_params(request), "stream": True}

    def complete(self, request: ModelRequest) -> AssistantTurn:
        """The whole reply, in the request's output mode (``auto`` falls back on a refusal)."""
        return self.output_modes.complete(
            request, lambda pinned: self.retrier.complete(pinned, self._complete_once)
        )

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """The reply from the raw stream events; errors (an ``error`` event too) are typed AdapterErrors."""
        async for event in self.output_modes.stream(
            request, lambda pinned: self.retrier.stream(pinned, self._stream_once)
        ):
            yield event

    @property
    def issuer(self) -> str:
        """The ``issuer`` of the reasoning this adapter's model writes (``anthropic:<model>``)."""
        return issuer_of(PROVIDER, self._model)

    def _complete_once(self, request: ModelRequest) -> AssistantTurn:
        import anthropic

        client = self.client
        params = self.build_params(request)
        try:
            message = client.messages.create(**params)
        except anthropic.AnthropicError as exc:
            raise from_anthropic_error(exc, provider=self._name) from exc
        return turn_from_message(message)

    async def _stream_once(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        import anthropic
        import httpx2

        params = self.build_stream_params(request)
        reader = _EventReader(self._name)
        where: object = "the server"
        try:
            client = await self._async_clients.for_running_loop()
            if client is None:
                sync_client = self.client
                where = sync_client.base_url
                events = in_worker_threads(lambda: sync_client.messages.create(**params))
            else:
                where = client.base_url
                events = _async_events(client, params)
            async with contextlib.aclosing(events):
                async for event in events:
                    for neutral in reader.read(event):
                        yield neutral
        except anthropic.AnthropicError as exc:
            raise from_anthropic_error(exc, provider=self._name) from exc
        except httpx2.TransportError as exc:  # the connection broke mid-stream; the SDK passes it on
            reason = str(exc) or type(exc).__name__
            raise cut_stream(self._name, where, f"the connection failed: {reason}") from exc
        except json.JSONDecodeError as exc:  # a data line that is not JSON: the stream is broken
            raise cut_stream(self._name, where, f"a data line is not JSON: {exc}") from exc
        if not reader.stopped:
            raise cut_stream(self._name, where, "no message_stop event came")
        for neutral in reader.finish():
            yield neutral

    def _tool_param(self, tool: AnyTool) -> ToolParam:
        """Strict when asked and possible; a type with no strict schema is sent non-strict."""
        schema, strict = parameters_schema(tool, strict=self._strict_tools)
        param: ToolParam = {
            "name": tool.name,
            "description": tool.description,
            "input_schema": _plain(schema),
        }
        if strict:
            param["strict"] = True
        return param


async def _async_events(
    client: anthropic.AsyncAnthropic, params: MessageCreateParamsStreaming
) -> AsyncGenerator[RawMessageStreamEvent]:
    """The raw events of one streamed reply, the response closed however the reading ends."""
    events = await client.messages.create(**params)
    async with events:
        async for event in events:
            yield event


def tool_choice_param(choice: ToolChoice, *, parallel: bool | None = None) -> ToolChoiceParam:
    """Neutral tool choice -> the Messages API ``tool_choice`` block (``parallel=False``: one call a turn)."""
    if choice == "none":
        return {"type": "none"}
    param: ToolChoiceParam
    if isinstance(choice, ForceTool):
        param = {"type": "tool", "name": choice.name}
    elif choice == "required":
        param = {"type": "any"}
    else:
        param = {"type": "auto"}
    if parallel is not None:
        param["disable_parallel_tool_use"] = not parallel
    return param


def _thinking_budget(settings: ModelSettings) -> int | None:
    """The thinking budget the settings ask for (none: no thinking), checked against the API's rules."""
    if settings.thinking_budget is not None and settings.reasoning_effort is not None:
        raise ConfigurationError(
            "AnthropicAdapter: thinking_budget and reasoning_effort are both set; extended thinking "
            "takes one token budget (reasoning_effort stands for one), set only one of them"
        )
    if settings.reasoning_effort is not None:
        return EFFORT_BUDGETS[settings.reasoning_effort]
    budget = settings.thinking_budget
    if budget is not None and budget < MIN_THINKING_BUDGET:
        raise ConfigurationError(
            f"AnthropicAdapter: thinking_budget must be at least {MIN_THINKING_BUDGET} "
            f"(the Messages API's minimum), got {budget}"
        )
    return budget


_SAMPLING_REFUSED = ("temperature", "top_k")


def _thinking_param(budget: int, limit: int | None, settings: ModelSettings) -> ThinkingConfigParam:
    """``thinking`` for a budget, refusing by name what the API refuses with thinking on.

    The reply limit must exceed the budget (the thinking counts in it);
    without an explicit limit the reply gets the adapter's ``max_tokens``
    on top of the budget. Thinking is not compatible with a changed
    ``temperature`` or ``top_k``, nor with a ``top_p`` under 0.95.
    """
    if limit is not None and limit <= budget:
        raise ConfigurationError(
            f"AnthropicAdapter: max_output_tokens ({limit}) must be more than the thinking budget "
            f"({budget}): the thinking counts in the reply's tokens"
        )
    for name in _SAMPLING_REFUSED:
        if name in settings.extra:
            raise ConfigurationError(
                f"AnthropicAdapter: extra[{name!r}] cannot be set with extended thinking "
                "(the Messages API refuses it); remove it or turn thinking off"
            )
    top_p = settings.extra.get("top_p")
    if isinstance(top_p, int | float) and not 0.95 <= top_p <= 1:
        raise ConfigurationError(
            f"AnthropicAdapter: extra['top_p'] must be between 0.95 and 1 with extended thinking, got {top_p}"
        )
    return {"type": "enabled", "budget_tokens": budget}


def _check_thinking_choice(choice: ToolChoice, *, forced_answer: bool) -> None:
    """With thinking on, the Messages API takes tool_choice ``auto`` or ``none`` only."""
    if forced_answer:
        raise ConfigurationError(
            "AnthropicAdapter: output_mode 'tool' forces the final-answer tool, which extended thinking "
            "does not allow; use output_mode 'native' or 'prompted', or turn thinking off"
        )
    if isinstance(choice, ForceTool) or choice == "required":
        shown = f"ForceTool({choice.name!r})" if isinstance(choice, ForceTool) else repr(choice)
        raise ConfigurationError(
            f"AnthropicAdapter: tool_choice {shown} cannot be used with extended thinking "
            "(the Messages API takes 'auto' or 'none' then)"
        )


def _apply_settings(params: MessageCreateParamsNonStreaming, settings: ModelSettings) -> None:
    """Put the stop sequences, service tier and provider options on Messages API parameters."""
    if settings.stop is not None:
        params["stop_sequences"] = list(settings.stop)
    if settings.service_tier is not None:
        params["service_tier"] = cast("Literal['auto', 'standard_only']", settings.service_tier)
    if settings.extra:  # the provider's own options, sent as they are
        cast("dict[str, object]", params)["extra_body"] = dict(settings.extra)


def turn_from_message(message: AnthropicMessage) -> AssistantTurn:
    """Read a Messages API reply as a neutral turn.

    Text blocks are joined in order; each ``tool_use`` block becomes a call
    whose arguments are its ``input``, the object the SDK already parsed
    (kept as it is: the call decodes and encodes it at most once).
    ``thinking`` blocks (text and signature) and ``redacted_thinking``
    blocks (their ``data``, encrypted) become reasoning parts issued by
    ``anthropic:<model>``; with any, the turn's parts are the reasoning and
    the text in the order each began. Server-tool blocks are not part of
    the neutral turn.
    """
    issuer = issuer_of(PROVIDER, message.model)
    texts: list[str] = []
    calls: list[ToolCall] = []
    order: list[Part | None] = []  # reasoning parts, and None where the text began
    for block in message.content:
        if block.type == "text":
            if block.text and None not in order:
                order.append(None)
            texts.append(block.text)
        elif block.type == "tool_use":
            calls.append(ToolCall(id=block.id, name=block.name, arguments=_tool_input(block.input)))
        elif block.type == "thinking":
            order.append(ReasoningPart(text=block.thinking, issuer=issuer, signature=block.signature))
        elif block.type == "redacted_thinking":
            order.append(ReasoningPart(issuer=issuer, encrypted=block.data, redacted=True))
    text = "".join(texts)
    finish = _STOP_REASONS.get(message.stop_reason or "", "other")
    has_reasoning = any(part is not None for part in order)
    parts = tuple(TextPart(text) if part is None else part for part in order) if has_reasoning else ()
    return AssistantTurn(
        text=text, tool_calls=tuple(calls), usage=_usage(message), finish_reason=finish, parts=parts
    )


def _tool_input(given: object) -> str | Mapping[str, JSONValue]:
    """A ``tool_use`` input as call arguments: the object itself, or its JSON text if it is no mapping."""
    if isinstance(given, Mapping):
        return cast("Mapping[str, JSONValue]", given)
    return json.dumps(given)


def _usage(message: AnthropicMessage) -> Usage:
    return _neutral_usage(message.usage)


def _neutral_usage(usage: AnthropicUsage) -> Usage:
    cache_read = usage.cache_read_input_tokens or 0
    cache_write = usage.cache_creation_input_tokens or 0
    details = usage.output_tokens_details
    return Usage(
        input_tokens=usage.input_tokens + cache_read + cache_write,
        output_tokens=usage.output_tokens,
        cached_input_tokens=cache_read,
        model_calls=1,
        reasoning_tokens=details.thinking_tokens if details is not None else 0,
        cache_write_tokens=cache_write,
    )


class _EventReader:
    """Raw Messages API stream events -> neutral events, with the same rules as :func:`turn_from_message`.

    Content blocks are numbered among all blocks; tool calls are numbered among
    tool calls. A call is complete at its ``content_block_stop``; its
    streamed JSON is then decoded, once, into the object a whole reply
    gives (text that is not a JSON object stays as sent). ``message_start``
    and every ``message_delta`` report the usage so far.
    """

    def __init__(self, provider: str) -> None:
        self._assembler = ReplyAssembler(provider=provider)
        self._calls: dict[int, int] = {}  # content block index -> tool call index
        self._reasoning: dict[int, int] = {}  # content block index -> reasoning part index
        self._issuer = PROVIDER
        self._usage: AnthropicUsage | None = None
        self._finish: FinishReason | None = None
        self.stopped = False
        """Whether ``message_stop`` came: until then the reply is not complete."""

    def read(self, event: RawMessageStreamEvent) -> list[ModelEvent]:
        add = self._assembler.add
        if event.type == "message_start":
            self._usage = event.message.usage
            self._issuer = issuer_of(PROVIDER, event.message.model)
            return [add(UsageReported(_neutral_usage(self._usage)))]
        if event.type == "content_block_start":
            block = event.content_block
            if block.type == "text" and block.text:
                return [add(TextDelta(block.text))]
            if block.type == "tool_use":
                index = self._calls[event.index] = len(self._calls)
                return [add(ToolCallStarted(index, block.id, block.name))]
            if block.type == "thinking":
                index = self._reasoning[event.index] = len(self._reasoning)
                signature = block.signature or None
                return [add(ReasoningDelta(index, block.thinking, issuer=self._issuer, signature=signature))]
            if block.type == "redacted_thinking":
                index = self._reasoning[event.index] = len(self._reasoning)
                delta = ReasoningDelta(index, issuer=self._issuer, encrypted=block.data, redacted=True)
                return [add(delta)]
            return []
        if event.type == "content_block_delta":
            delta = event.delta
            if delta.type == "text_delta" and delta.text:
                return [add(TextDelta(delta.text))]
            if delta.type == "input_json_delta" and delta.partial_json and event.index in self._calls:
                return [add(ToolCallDelta(self._calls[event.index], delta.partial_json))]
            reasoning = self._reasoning.get(event.index)
            if reasoning is not None and delta.type == "thinking_delta" and delta.thinking:
                return [add(ReasoningDelta(reasoning, delta.thinking))]
            if reasoning is not None and delta.type == "signature_delta":
                return [add(ReasoningDelta(reasoning, signature=delta.signature))]
            return []
        if event.type == "content_block_stop":
            index = self._calls.get(event.index)
            if index is None:
                return []
            return [self._assembler.close_call(index, parse=True)]
        if event.type == "message_delta":
            self._finish = _STOP_REASONS.get(event.delta.stop_reason or "", "other")
            self._usage = _merged_usage(self._usage, event.usage)
            return [add(UsageReported(_neutral_usage(self._usage)))]
        self.stopped = self.stopped or event.type == "message_stop"
        return []

    def finish(self) -> tuple[ModelEvent, ...]:
        return self._assembler.finish(self._finish)


def _merged_usage(start: AnthropicUsage | None, delta: MessageDeltaUsage) -> AnthropicUsage:
    """``message_delta`` counts are cumulative: each given one replaces the start's."""
    from anthropic.types import Usage as AnthropicUsage

    base = start if start is not None else AnthropicUsage(input_tokens=0, output_tokens=0)
    changes: dict[str, object] = {"output_tokens": delta.output_tokens}
    for field in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"):
        value = getattr(delta, field)
        if value is not None:
            changes[field] = value
    if delta.output_tokens_details is not None:
        changes["output_tokens_details"] = delta.output_tokens_details
    return base.model_copy(update=changes)


def _plain(schema: JSONObject) -> dict[str, object]:
    return dict[str, object](schema)


def _with_cache_points(
    params: MessageCreateParamsNonStreaming, request: ModelRequest
) -> MessageCreateParamsNonStreaming:
    """``cache_control`` breakpoints where the loop's request says its stable prefix ends."""
    assert request.cache is not None
    messages = request.context.messages
    last = messages[-1] if messages else None  # the loop's turn-context message, if any, is the last
    trailing = 1 if last is not None and last.metadata.get(TURN_CONTEXT_KEY) and last.content else 0
    marked = with_cache_points(
        cast("JSONObject", params),
        stable_system_chars=request.cache.stable_system_chars,
        trailing_blocks=trailing,
    )
    return cast("MessageCreateParamsNonStreaming", marked)


def _append_system(system: str | None, extra: str) -> str:
    return f"{system}\n\n{extra}" if system else extra


def _build_clients(
    *, api_key: str | None, base_url: str | None, timeout: float | None, sync: bool = True
) -> tuple[anthropic.Anthropic | None, anthropic.AsyncAnthropic]:
    """A sync and an async client with the same settings (the async one alone, for a new event loop)."""
    try:
        import anthropic
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ConfigurationError(
            "AnthropicAdapter needs the anthropic SDK: pip install 'weakprompt[anthropic]'"
        ) from exc
    if api_key is None and not any(os.environ.get(name) for name in _KEY_VARIABLES):
        # The SDK would only fail at the first request, with a TypeError; say it here instead.
        # A compatible server at base_url may not check keys (as OpenAIAdapter assumes too).
        if base_url is None:
            raise ConfigurationError(
                "AnthropicAdapter: no API key; pass api_key= or set ANTHROPIC_API_KEY "
                "(or ANTHROPIC_AUTH_TOKEN)"
            )
        api_key = _PLACEHOLDER_KEY
    retries = 0  # weakprompt retries (adapters.retries); the SDK's would multiply them
    wait = anthropic.NOT_GIVEN if timeout is None else timeout
    return (
        anthropic.Anthropic(api_key=api_key, base_url=base_url, max_retries=retries, timeout=wait)
        if sync
        else None,
        anthropic.AsyncAnthropic(api_key=api_key, base_url=base_url, max_retries=retries, timeout=wait),
    )
