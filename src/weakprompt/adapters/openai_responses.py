"""The OpenAI Responses API through the official ``openai`` SDK (``client.responses.create``).

The conversation goes as input items (:mod:`weakprompt.adapters.wire.openai_responses`):
messages, ``function_call`` items for the calls a reply made and
``function_call_output`` items for their results. Requests are sent with
``store=False`` unless told otherwise, so OpenAI keeps nothing between
turns and every request carries the whole conversation. Replies are read
whole (``complete``, on the sync client) or from the typed stream events
(``stream``, on the async client, or on the sync one in worker threads).
A streamed reply is complete only at ``response.completed`` or
``response.incomplete``; a stream that stops before either broke off.

Reasoning: with ``reasoning_effort`` set, the request asks for a reasoning
summary and the encrypted reasoning (``include=["reasoning.encrypted_content"]``,
``store=False``). Each reasoning output item becomes a reasoning part
(issuer ``openai:<model>``, its id, its encrypted content, its summary as
text), and goes back as a ``reasoning`` input item before the calls it
preceded, to OpenAI only (specs/REASONING.md). The reasoning tokens a reply
used are its usage's ``reasoning_tokens``.

The SDK is imported when an adapter is built, never when this module loads.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from typing import TYPE_CHECKING, Literal, cast

from ..errors import ConfigurationError
from ..jsontypes import JSONObject
from ..messages import AssistantTurn, FinishReason, ToolCall, Usage
from ..model import (
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
from ._prompt_cache import PromptCacheRetention, check_retention, prompt_cache_params
from ._support import (
    AdapterIdentity,
    check_tool_choice,
    in_worker_threads,
    is_strict_schema,
    missing_client,
    output_schema_name,
    parameters_schema,
)
from .error_mapping import cut_stream, from_error_body, from_openai_error
from .openai import openai_clients
from .output_modes import (
    FINAL_ANSWER_DESCRIPTION,
    FINAL_ANSWER_TOOL,
    OutputModes,
    final_answer_choice,
    with_schema_instruction,
)
from .request_rules import check_responses_input
from .retries import RetrySetting
from .wire.openai_responses import PROVIDER, responses_input
from .wire.reasoning import ForeignReasoning, check_foreign_reasoning, issuer_of

if TYPE_CHECKING:
    import openai
    from openai.types.responses import (
        FunctionToolParam,
        Response,
        ResponseInputParam,
        ResponseReasoningItem,
        ResponseStreamEvent,
        ResponseTextConfigParam,
        ResponseUsage,
    )
    from openai.types.responses.response_create_params import (
        ResponseCreateParamsNonStreaming,
        ResponseCreateParamsStreaming,
    )
    from openai.types.responses.response_create_params import (
        ToolChoice as ResponsesToolChoice,
    )

    from ..tools import AnyTool

__all__ = ["RESPONSES_SETTINGS", "OpenAIResponsesAdapter", "turn_from_response"]

RESPONSES_SETTINGS = frozenset(
    {"temperature", "top_p", "max_output_tokens", "parallel_tool_calls", "reasoning_effort"}
    | {"service_tier", "extra"}
)
"""The model settings the Responses API takes: it has no ``stop`` nor ``seed``, and a reasoning
effort rather than a token budget."""

OUTPUT_MODES: tuple[ConcreteOutputMode, ...] = ("native", "json_object", "tool", "prompted")
AUTO_ORDER: tuple[ConcreteOutputMode, ...] = ("native", "json_object", "prompted")

_INCOMPLETE: dict[str, FinishReason] = {"max_output_tokens": "length", "content_filter": "content_filter"}


class OpenAIResponsesAdapter(SettingsAware, AdapterIdentity):
    """A :class:`~weakprompt.model.ProviderAdapter` for the Responses API.

    Clients follow :class:`~weakprompt.adapters.openai.OpenAIAdapter`'s rule
    (``client`` for ``complete``, ``async_client`` for ``stream``, or both
    built from ``base_url`` / ``api_key`` / ``timeout``). ``store`` is sent
    as given (``False`` by default: nothing is kept on OpenAI's side, so no
    earlier response is ever referred to). With ``strict_tools`` every tool
    whose type has a strict schema is sent strict. ``prompt_cache_key`` and
    ``prompt_cache_retention`` as :class:`~weakprompt.adapters.openai.OpenAIAdapter`'s.
    """

    def __init__(
        self,
        model: str,
        *,
        client: openai.OpenAI | None = None,
        async_client: openai.AsyncOpenAI | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        strict_tools: bool = True,
        store: bool = False,
        max_retries: int | None = None,
        timeout: float | None = None,
        context_window: int | None = None,
        settings: ModelSettings | None = None,
        output_mode: OutputMode = "auto",
        retries: RetrySetting = None,
        foreign_reasoning: ForeignReasoning = "drop",
        name: str = "openai",
        prompt_cache_key: bool = True,
        prompt_cache_retention: PromptCacheRetention | None = None,
    ) -> None:
        if not model:
            raise ConfigurationError("OpenAIResponsesAdapter: model must be a non-empty model name")
        self._foreign_reasoning: ForeignReasoning = check_foreign_reasoning(
            "OpenAIResponsesAdapter", foreign_reasoning
        )
        super().__init__(name=name, model=model, context_window=context_window)
        self._strict_tools = strict_tools
        self._cache_keyed = prompt_cache_key
        self._cache_retention: PromptCacheRetention | None = check_retention(
            "OpenAIResponsesAdapter", prompt_cache_retention
        )
        self._store = store
        self.model_settings = ModelSettings().merged(settings)
        self.supported_settings = RESPONSES_SETTINGS
        check_supported(
            self.model_settings, RESPONSES_SETTINGS, adapter="OpenAIResponsesAdapter", model=model
        )
        self.output_modes = OutputModes(
            "OpenAIResponsesAdapter", supported=OUTPUT_MODES, auto_order=AUTO_ORDER, default=output_mode
        )
        self.retrier, self._client, self._async_clients = openai_clients(
            "OpenAIResponsesAdapter",
            provider=name,
            model=model,
            given=(client, async_client),
            base_url=base_url,
            api_key=api_key,
            timeout=timeout,
            retries=retries,
            max_retries=max_retries,
        )

    @property
    def client(self) -> openai.OpenAI:
        """The sync client ``complete`` uses."""
        if self._client is None:
            raise missing_client("OpenAIResponsesAdapter", "complete()", "client", "openai.OpenAI")
        return self._client

    def build_params(self, request: ModelRequest) -> ResponseCreateParamsNonStreaming:
        """The keyword arguments for ``responses.create`` (no network)."""
        check_tool_choice(request, self._name)
        request, mode = self.output_modes.pinned(request)
        if mode in ("json_object", "prompted"):
            request = with_schema_instruction(request)
        items = responses_input(
            request.context.messages, foreign_reasoning=self._foreign_reasoning, by_reference=self._store
        )
        params: ResponseCreateParamsNonStreaming = {
            "model": self._model,
            "input": cast("ResponseInputParam", items),
            "store": self._store,
        }
        tools = [self._tool_param(tool) for tool in request.tools]
        choice = request.tool_choice
        if mode == "tool":
            choice = final_answer_choice(request)
            tools.append(_final_answer_param(request))
        if tools:
            params["tools"] = tools
            params["tool_choice"] = tool_choice_param(choice)
        text_format = _text_config(request, mode)
        if text_format is not None:
            params["text"] = text_format
        check_supported(
            request.settings, RESPONSES_SETTINGS, adapter="OpenAIResponsesAdapter", model=self._model
        )
        settings = self.model_settings.merged(request.settings)
        limit = request.max_output_tokens or settings.max_output_tokens
        if limit is not None:
            params["max_output_tokens"] = limit
        _apply_settings(params, settings, tools=bool(tools))
        if settings.reasoning_effort is not None:
            self._ask_reasoning(params, settings.reasoning_effort)
        check_responses_input(cast("list[Mapping[str, object]]", items), provider=self._name)
        cache = prompt_cache_params(request, keyed=self._cache_keyed, retention=self._cache_retention)
        if cache:
            cast("dict[str, object]", params).update(cache)
        return params

    def _ask_reasoning(self, params: ResponseCreateParamsNonStreaming, effort: str) -> None:
        """Reasoning on: a summary, and the encrypted reasoning to send back (nothing kept by OpenAI)."""
        if self._store:
            raise ConfigurationError(
                "OpenAIResponsesAdapter: reasoning_effort with store=True is not supported: reasoning "
                "items are sent back encrypted, which needs store=False"
            )
        params["reasoning"] = {
            "effort": cast("Literal['minimal', 'low', 'medium', 'high']", effort),
            "summary": "auto",
        }
        params["include"] = ["reasoning.encrypted_content"]

    @property
    def issuer(self) -> str:
        """The ``issuer`` of the reasoning this adapter's model writes (``openai:<model>``)."""
        return issuer_of(PROVIDER, self._model)

    def build_stream_params(self, request: ModelRequest) -> ResponseCreateParamsStreaming:
        """:meth:`build_params` for a streamed reply (no network)."""
        return {**self.build_params(request), "stream": True}

    def complete(self, request: ModelRequest) -> AssistantTurn:
        """The whole reply, in the request's output mode (``auto`` falls back on a refusal)."""
        return self.output_modes.complete(
            request, lambda pinned: self.retrier.complete(pinned, self._complete_once)
        )

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """The reply from the stream events; an error before or during it is a typed AdapterError."""
        async for event in self.output_modes.stream(
            request, lambda pinned: self.retrier.stream(pinned, self._stream_once)
        ):
            yield event

    def _complete_once(self, request: ModelRequest) -> AssistantTurn:
        import openai

        client = self.client
        params = self.build_params(request)
        try:
            response = client.responses.create(**params)
        except openai.OpenAIError as exc:
            raise from_openai_error(exc, provider=self._name) from exc
        return turn_from_response(response, provider=self._name)

    async def _stream_once(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        import openai

        params = self.build_stream_params(request)
        reader = ResponseEventReader(self._name, model=self._model)
        where: object = "the server"
        try:
            client = await self._async_clients.for_running_loop()
            if client is None:
                sync_client = self.client
                where = sync_client.base_url
                events = in_worker_threads(lambda: sync_client.responses.create(**params))
            else:
                where = client.base_url
                events = _async_events(client, params)
            async with contextlib.aclosing(events):
                async for event in events:
                    for neutral in reader.read(event):
                        yield neutral
        except openai.OpenAIError as exc:
            raise from_openai_error(exc, provider=self._name) from exc
        except json.JSONDecodeError as exc:  # a data line that is not JSON: the stream is broken
            raise cut_stream(self._name, where, f"a data line is not JSON: {exc}") from exc
        if reader.finish_reason is None:
            raise cut_stream(self._name, where, "no response.completed event came")
        for neutral in reader.finish():
            yield neutral

    def _tool_param(self, tool: AnyTool) -> FunctionToolParam:
        """Strict when asked and possible; a type with no strict schema is sent non-strict."""
        schema, strict = parameters_schema(tool, strict=self._strict_tools)
        return {
            "type": "function",
            "name": tool.name,
            "description": tool.description,
            "parameters": dict[str, object](schema),
            "strict": strict,
        }


async def _async_events(
    client: openai.AsyncOpenAI, params: ResponseCreateParamsStreaming
) -> AsyncGenerator[ResponseStreamEvent]:
    """The events of one streamed reply, the response closed however the reading ends."""
    events = await client.responses.create(**params)
    async with events:
        async for event in events:
            yield event


def tool_choice_param(choice: ToolChoice) -> ResponsesToolChoice:
    """Neutral tool choice -> the Responses ``tool_choice`` value (a forced tool by name)."""
    if isinstance(choice, ForceTool):
        return {"type": "function", "name": choice.name}
    return choice


def _final_answer_param(request: ModelRequest) -> FunctionToolParam:
    """``tool`` mode's final-answer tool: its parameters are the output schema."""
    schema = request.output_schema
    assert schema is not None
    return {
        "type": "function",
        "name": FINAL_ANSWER_TOOL,
        "description": FINAL_ANSWER_DESCRIPTION,
        "parameters": dict[str, object](schema),
        "strict": is_strict_schema(schema),
    }


def _text_config(request: ModelRequest, mode: ConcreteOutputMode | None) -> ResponseTextConfigParam | None:
    schema = request.output_schema
    if mode == "native" and schema is not None:
        return {
            "format": {
                "type": "json_schema",
                "name": output_schema_name(request.output_name),
                "schema": dict[str, object](schema),
                "strict": is_strict_schema(schema),
            }
        }
    if mode == "json_object":
        return {"format": {"type": "json_object"}}
    return None


def _apply_settings(
    params: ResponseCreateParamsNonStreaming, settings: ModelSettings, *, tools: bool
) -> None:
    """Put the sampling, reasoning and provider settings on Responses parameters."""
    if settings.temperature is not None:
        params["temperature"] = settings.temperature
    if settings.top_p is not None:
        params["top_p"] = settings.top_p
    if settings.parallel_tool_calls is not None and tools:  # meaningless without tools
        params["parallel_tool_calls"] = settings.parallel_tool_calls
    if settings.service_tier is not None:
        params["service_tier"] = cast(
            "Literal['auto', 'default', 'flex', 'scale', 'priority']", settings.service_tier
        )
    if settings.extra:  # the provider's own options, sent as they are
        cast("dict[str, object]", params)["extra_body"] = dict(settings.extra)


def turn_from_response(response: Response, *, provider: str = "openai") -> AssistantTurn:
    """Read a whole Responses reply as a neutral turn.

    Output text is joined in order; each ``function_call`` item is a call
    keyed by its ``call_id`` (the id its result must name), arguments kept
    as the raw JSON text. A refusal with no other text becomes the text with
    finish reason ``content_filter``. Each reasoning item is a reasoning part
    (issuer ``openai:<model>``); with any, the turn's parts are the reasoning
    and the text in the order each began. A failed response is the error it names.
    """
    if response.status == "failed":
        raise from_error_body(_error_body(response), provider=provider)
    issuer = issuer_of(PROVIDER, response.model)
    texts: list[str] = []
    refusals: list[str] = []
    calls: list[ToolCall] = []
    order: list[Part | None] = []  # reasoning parts, and None where the text began
    for item in response.output:
        if item.type == "message":
            for content in item.content:
                if content.type == "output_text":
                    if content.text and None not in order:
                        order.append(None)
                    texts.append(content.text)
                else:
                    refusals.append(content.refusal)
        elif item.type == "function_call":
            calls.append(ToolCall(id=item.call_id, name=item.name, arguments=item.arguments))
        elif item.type == "reasoning":
            order.append(reasoning_part(item, issuer))
    text = "".join(texts)
    finish = _finish_reason(response, has_calls=bool(calls))
    if refusals and not text:
        text, finish = "".join(refusals), "content_filter"
        order.append(None)
    has_reasoning = any(part is not None for part in order)
    parts = tuple(TextPart(text) if part is None else part for part in order if part or text)
    return AssistantTurn(
        text=text,
        tool_calls=tuple(calls),
        usage=_usage(response.usage),
        finish_reason=finish,
        parts=parts if has_reasoning else (),
    )


def reasoning_part(item: ResponseReasoningItem, issuer: str) -> ReasoningPart:
    """A reasoning output item as a part: its summary texts joined by blank lines as the text."""
    return ReasoningPart(
        text=_summary_text(item),
        issuer=issuer,
        encrypted=item.encrypted_content,
        id=item.id,
    )


def _summary_text(item: ResponseReasoningItem) -> str:
    return "\n\n".join(summary.text for summary in item.summary)


def _finish_reason(response: Response, *, has_calls: bool) -> FinishReason:
    if response.status == "incomplete":
        details = response.incomplete_details
        return _INCOMPLETE.get((details.reason if details is not None else None) or "", "other")
    return "tool_calls" if has_calls else "stop"


def _error_body(response: Response) -> JSONObject:
    error = response.error
    if error is None:
        return {"message": "the response failed and gave no reason"}
    return {"message": error.message, "code": error.code}


def _usage(usage: ResponseUsage | None) -> Usage:
    if usage is None:
        return Usage(model_calls=1)
    return Usage(
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cached_input_tokens=usage.input_tokens_details.cached_tokens,
        model_calls=1,
        reasoning_tokens=usage.output_tokens_details.reasoning_tokens,
        # an older server leaves the count out, and the SDK builds its reply without checking
        cache_write_tokens=getattr(usage.input_tokens_details, "cache_write_tokens", None) or 0,
    )


class ResponseEventReader:
    """Responses stream events -> neutral events, with the same rules as :func:`turn_from_response`.

    A call starts at the ``response.output_item.added`` that brings its
    ``call_id`` and name, grows with each ``response.function_call_arguments.delta``
    and is complete at its ``response.output_item.done``. Calls are numbered
    in the order they start. ``response.completed`` (or ``.incomplete``)
    reports the usage and ends the reply; ``response.failed`` and ``error``
    are the errors they name. A reasoning item starts a reasoning part at its
    ``output_item.added``, streams its summary text (summaries apart by a
    blank line) and gets its encrypted content at its ``output_item.done``.
    """

    def __init__(self, provider: str, *, model: str = "") -> None:
        self._provider = provider
        self._assembler = ReplyAssembler(provider=provider)
        self._calls: dict[int, int] = {}  # output index -> tool call index
        self._reasoning: dict[int, int] = {}  # output index -> reasoning part index
        self._summaries: dict[int, tuple[int, str]] = {}  # reasoning index -> (summary index, text so far)
        self._refusal: list[str] = []
        self._issuer = issuer_of(PROVIDER, model)
        self.finish_reason: FinishReason | None = None
        """Set at the event that ends the reply; until then the reply is not complete."""

    def read(self, event: ResponseStreamEvent) -> list[ModelEvent]:
        add = self._assembler.add
        if event.type == "response.output_text.delta":
            return [add(TextDelta(event.delta))] if event.delta else []
        if event.type == "response.refusal.delta":
            self._refusal.append(event.delta)
            return []
        if event.type == "response.output_item.added" and event.item.type == "function_call":
            index = self._calls[event.output_index] = len(self._calls)
            return [add(ToolCallStarted(index, event.item.call_id, event.item.name))]
        if event.type == "response.function_call_arguments.delta" and event.output_index in self._calls:
            return [add(ToolCallDelta(self._calls[event.output_index], event.delta))] if event.delta else []
        if event.type == "response.created":
            self._issuer = issuer_of(PROVIDER, event.response.model)
            return []
        if event.type == "response.output_item.added" and event.item.type == "reasoning":
            index = self._reasoning[event.output_index] = len(self._reasoning)
            self._summaries[index] = (0, "")
            return [add(ReasoningDelta(index, issuer=self._issuer, id=event.item.id))]
        if event.type == "response.reasoning_summary_text.delta" and event.output_index in self._reasoning:
            index = self._reasoning[event.output_index]
            return [add(self._summary_piece(index, event.summary_index, event.delta))]
        if event.type == "response.output_item.done" and event.item.type == "reasoning":
            return self._reasoning_done(event.output_index, event.item)
        if event.type == "response.output_item.done" and event.item.type == "function_call":
            index = self._calls.get(event.output_index)
            started: list[ModelEvent] = []
            if index is None:  # never announced: start it now, whole (the consumer folds the start too)
                index = self._calls[event.output_index] = len(self._calls)
                started.append(add(ToolCallStarted(index, event.item.call_id, event.item.name)))
            return [*started, self._assembler.close_call(index, arguments=event.item.arguments)]
        if event.type == "response.completed":
            return self._ended(event.response)
        if event.type == "response.incomplete":
            return self._ended(event.response)
        if event.type == "response.failed":
            raise from_error_body(_error_body(event.response), provider=self._provider)
        if event.type == "error":
            raise from_error_body({"message": event.message, "code": event.code}, provider=self._provider)
        return []

    def _summary_piece(self, index: int, summary: int, delta: str) -> ReasoningDelta:
        """A summary's next text; a later summary starts after a blank line, as the whole reply joins them."""
        current, text = self._summaries[index]
        piece = f"\n\n{delta}" if summary != current and text else delta
        self._summaries[index] = (summary, text + piece)
        return ReasoningDelta(index, piece)

    def _reasoning_done(self, output_index: int, item: ResponseReasoningItem) -> list[ModelEvent]:
        """The whole item: what its summary deltas did not bring, and its encrypted content."""
        index = self._reasoning.get(output_index)
        events: list[ModelEvent] = []
        if index is None:  # never announced: start it now, whole
            index = self._reasoning[output_index] = len(self._reasoning)
            self._summaries[index] = (0, "")
            events.append(self._assembler.add(ReasoningDelta(index, issuer=self._issuer, id=item.id)))
        streamed = self._summaries[index][1]
        whole = _summary_text(item)
        rest = whole[len(streamed) :] if whole.startswith(streamed) else ""
        events.append(self._assembler.add(ReasoningDelta(index, rest, encrypted=item.encrypted_content)))
        return events

    def _ended(self, response: Response) -> list[ModelEvent]:
        self.finish_reason = _finish_reason(response, has_calls=bool(self._calls))
        return [self._assembler.add(UsageReported(_usage(response.usage)))]

    def finish(self) -> list[ModelEvent]:
        """The last events, ending with the completed reply."""
        finish = self.finish_reason
        refusal = "".join(self._refusal)
        events: list[ModelEvent] = []
        if refusal and not self._assembler.text:
            events.append(self._assembler.add(TextDelta(refusal)))
            finish = "content_filter"
        events.extend(self._assembler.finish(finish))
        return events
