"""OpenAI Chat Completions through the official ``openai`` SDK.

Works with OpenAI itself and with any server that speaks the same API
(``base_url``): vLLM, llama.cpp's server, Ollama... Messages come from the
transcript's own wire conversion; this module only adds the request options
(tools, tool choice, response format) and reads the reply back, whole
(``complete``, on the sync client) or streamed (``stream``, on the async
client, or on the sync one in worker threads when only that one was given;
chunks are read by :class:`~weakprompt.adapters.wire.openai_chunks.ChatChunkReader`).
A streamed reply is complete only once a chunk gave its finish reason: a
stream that stops before that broke off, however it ended.

The SDK is imported when an adapter is built, never when this module loads.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from typing import TYPE_CHECKING, Literal, cast

from ..errors import ConfigurationError, ProviderError
from ..jsontypes import JSONObject
from ..messages import AssistantTurn, FinishReason, ToolCall, Usage
from ..model import (
    ConcreteOutputMode,
    ForceTool,
    ModelEvent,
    ModelRequest,
    ModelSettings,
    OutputMode,
    SettingsAware,
    ToolChoice,
    check_supported,
)
from ._prompt_cache import PromptCacheRetention, check_retention, prompt_cache_params
from ._support import (
    OPENAI_FINISH_REASONS,
    AdapterIdentity,
    LoopBoundClient,
    check_tool_choice,
    clients_or_build,
    in_worker_threads,
    is_strict_schema,
    missing_client,
    output_schema_name,
    parameters_schema,
    sdk_retries_and_clients,
)
from .error_mapping import cut_stream, from_openai_error
from .output_modes import (
    FINAL_ANSWER_DESCRIPTION,
    FINAL_ANSWER_TOOL,
    OutputModes,
    final_answer_choice,
    with_schema_instruction,
)
from .request_rules import check_chat_messages
from .retries import Retrier, RetrySetting
from .wire.openai import openai_params
from .wire.openai_chunks import ChatChunkReader
from .wire.reasoning import ForeignReasoning, check_foreign_reasoning

if TYPE_CHECKING:
    import openai
    from openai.types.chat import (
        ChatCompletion,
        ChatCompletionChunk,
        ChatCompletionFunctionToolParam,
        ChatCompletionMessageParam,
        ChatCompletionToolChoiceOptionParam,
    )
    from openai.types.chat.completion_create_params import (
        CompletionCreateParamsNonStreaming,
        CompletionCreateParamsStreaming,
        ResponseFormat,
    )

    from ..tools import AnyTool

__all__ = ["OpenAIAdapter", "turn_from_chat_completion"]

MaxTokensField = Literal["max_completion_tokens", "max_tokens"]

OPENAI_SETTINGS = frozenset(
    {"temperature", "top_p", "max_output_tokens", "stop", "seed", "parallel_tool_calls", "reasoning_effort"}
    | {"service_tier", "extra"}
)
"""The model settings Chat Completions takes (not ``thinking_budget``: it takes ``reasoning_effort``)."""

OUTPUT_MODES: tuple[ConcreteOutputMode, ...] = ("native", "json_object", "tool", "prompted")
"""What Chat Completions can do; ``auto`` tries native, then JSON mode, then the instructions alone."""
AUTO_ORDER: tuple[ConcreteOutputMode, ...] = ("native", "json_object", "prompted")


# OpenAI-compatible local servers rarely check keys, but the SDK insists on one.
_PLACEHOLDER_KEY = "not-needed"


class OpenAIAdapter(SettingsAware, AdapterIdentity):
    """A :class:`~weakprompt.model.ProviderAdapter` for Chat Completions.

    Pass ready clients (``client``: ``openai.OpenAI`` for ``complete``,
    ``async_client``: ``openai.AsyncOpenAI`` for ``stream``; a sync client
    alone serves ``stream`` too, in worker threads) or let the adapter build
    both from ``base_url`` / ``api_key`` / ``max_retries`` / ``timeout``;
    giving a client and settings is a configuration error because the
    settings would be ignored. With ``strict_tools`` every tool
    is sent with its strict schema and ``"strict": true``, so the provider
    guarantees arguments that parse. ``stream_usage`` asks for the usage
    chunk at the end of a stream (``stream_options.include_usage``).
    A request from the loop carries ``prompt_cache_key`` (its template
    version's, unless ``prompt_cache_key=False``); ``prompt_cache_retention``
    (``"in_memory"`` or ``"24h"``) is sent when given (``specs/CACHING.md``).
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
        max_retries: int | None = None,
        timeout: float | None = None,
        context_window: int | None = None,
        temperature: float | None = None,
        seed: int | None = None,
        settings: ModelSettings | None = None,
        max_tokens_field: MaxTokensField = "max_completion_tokens",
        stream_usage: bool = True,
        output_mode: OutputMode = "auto",
        retries: RetrySetting = None,
        foreign_reasoning: ForeignReasoning = "drop",
        name: str = "openai",
        prompt_cache_key: bool = True,
        prompt_cache_retention: PromptCacheRetention | None = None,
    ) -> None:
        if not model:
            raise ConfigurationError("OpenAIAdapter: model must be a non-empty model name")
        self._foreign_reasoning: ForeignReasoning = check_foreign_reasoning(
            "OpenAIAdapter", foreign_reasoning
        )
        super().__init__(name=name, model=model, context_window=context_window)
        self._strict_tools = strict_tools
        self._cache_keyed = prompt_cache_key
        self._cache_retention: PromptCacheRetention | None = check_retention(
            "OpenAIAdapter", prompt_cache_retention
        )
        self.model_settings = ModelSettings(temperature=temperature, seed=seed).merged(settings)
        check_supported(self.model_settings, OPENAI_SETTINGS, adapter="OpenAIAdapter", model=model)
        self._max_tokens_field: MaxTokensField = max_tokens_field
        self._stream_usage = stream_usage
        self.output_modes = OutputModes(
            "OpenAIAdapter", supported=OUTPUT_MODES, auto_order=AUTO_ORDER, default=output_mode
        )
        self.retrier, self._client, self._async_clients = openai_clients(
            "OpenAIAdapter",
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
            raise missing_client("OpenAIAdapter", "complete()", "client", "openai.OpenAI")
        return self._client

    @property
    def async_client(self) -> openai.AsyncOpenAI:
        """The async client ``stream`` uses (none when only a sync client was given)."""
        if self._async_clients.current is None:
            raise ConfigurationError(
                "OpenAIAdapter: no openai.AsyncOpenAI client was given "
                "(stream() runs the sync client in worker threads)"
            )
        return self._async_clients.current

    def build_params(self, request: ModelRequest) -> CompletionCreateParamsNonStreaming:
        """The keyword arguments for ``chat.completions.create`` (no network)."""
        check_tool_choice(request, self._name)
        request, mode = self.output_modes.pinned(request)
        if mode in ("json_object", "prompted"):
            request = with_schema_instruction(request)
        wire = openai_params(
            request.context.messages, request.context.tools, foreign_reasoning=self._foreign_reasoning
        )
        params: CompletionCreateParamsNonStreaming = {
            "model": self._model,
            "messages": cast("list[ChatCompletionMessageParam]", wire["messages"]),
        }
        tools = [self._tool_param(tool) for tool in request.tools]
        choice = request.tool_choice
        if mode == "tool":
            choice = final_answer_choice(request)
            tools.append(_final_answer_param(request))
        if tools:
            params["tools"] = tools
            params["tool_choice"] = tool_choice_param(choice)
        if mode == "native":
            params["response_format"] = _response_format(request)
        elif mode == "json_object":
            params["response_format"] = {"type": "json_object"}
        check_supported(request.settings, OPENAI_SETTINGS, adapter="OpenAIAdapter", model=self._model)
        settings = self.model_settings.merged(request.settings)
        limit = request.max_output_tokens or settings.max_output_tokens
        if limit is not None:
            params[self._max_tokens_field] = limit
        _apply_settings(params, settings, tools=bool(tools))
        check_chat_messages(cast("list[Mapping[str, object]]", wire["messages"]), provider=self._name)
        cache = prompt_cache_params(request, keyed=self._cache_keyed, retention=self._cache_retention)
        if cache:
            cast("dict[str, object]", params).update(cache)
        return params

    def build_stream_params(self, request: ModelRequest) -> CompletionCreateParamsStreaming:
        """:meth:`build_params` for a streamed reply (no network)."""
        params: CompletionCreateParamsStreaming = {**self.build_params(request), "stream": True}
        if self._stream_usage:
            params["stream_options"] = {"include_usage": True}
        return params

    def complete(self, request: ModelRequest) -> AssistantTurn:
        """The whole reply, in the request's output mode (``auto`` falls back on a refusal)."""
        return self.output_modes.complete(
            request, lambda pinned: self.retrier.complete(pinned, self._complete_once)
        )

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """The reply chunk by chunk; an error before or during the stream is a typed AdapterError."""
        async for event in self.output_modes.stream(
            request, lambda pinned: self.retrier.stream(pinned, self._stream_once)
        ):
            yield event

    def _complete_once(self, request: ModelRequest) -> AssistantTurn:
        import openai

        client = self.client
        params = self.build_params(request)
        try:
            completion = client.chat.completions.create(**params)
        except openai.OpenAIError as exc:
            raise from_openai_error(exc, provider=self._name) from exc
        return turn_from_chat_completion(completion, provider=self._name)

    async def _stream_once(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        import openai

        params = self.build_stream_params(request)
        reader = ChatChunkReader(provider=self._name)
        where: object = "the server"
        try:
            client = await self._async_clients.for_running_loop()
            if client is None:
                sync_client = self.client
                where = sync_client.base_url
                chunks = in_worker_threads(lambda: sync_client.chat.completions.create(**params))
            else:
                where = client.base_url
                chunks = _async_chunks(client, params)
            async with contextlib.aclosing(chunks):
                async for chunk in chunks:
                    for event in reader.read(cast("JSONObject", chunk.to_dict())):
                        yield event
        except openai.OpenAIError as exc:
            raise from_openai_error(exc, provider=self._name) from exc
        except json.JSONDecodeError as exc:  # a data line that is not JSON: the stream is broken
            raise cut_stream(self._name, where, f"a data line is not JSON: {exc}") from exc
        for event in reader.finish(cut_from=where):
            yield event

    def _tool_param(self, tool: AnyTool) -> ChatCompletionFunctionToolParam:
        """Strict when asked and possible; a type with no strict schema is sent non-strict."""
        schema, strict = parameters_schema(tool, strict=self._strict_tools)
        param: ChatCompletionFunctionToolParam = {
            "type": "function",
            "function": {
                "name": tool.name,
                "description": tool.description,
                "parameters": dict[str, object](schema),
            },
        }
        if strict:
            param["function"]["strict"] = True
        return param


async def _async_chunks(
    client: openai.AsyncOpenAI, params: CompletionCreateParamsStreaming
) -> AsyncGenerator[ChatCompletionChunk]:
    """The chunks of one streamed reply, the response closed however the reading ends."""
    chunks = await client.chat.completions.create(**params)
    async with chunks:
        async for chunk in chunks:
            yield chunk


def tool_choice_param(choice: ToolChoice) -> ChatCompletionToolChoiceOptionParam:
    """Neutral tool choice -> the Chat Completions ``tool_choice`` value."""
    if isinstance(choice, ForceTool):
        return {"type": "function", "function": {"name": choice.name}}
    return choice


def _final_answer_param(request: ModelRequest) -> ChatCompletionFunctionToolParam:
    """``tool`` mode's final-answer tool: its parameters are the output schema."""
    schema = request.output_schema
    assert schema is not None
    param: ChatCompletionFunctionToolParam = {
        "type": "function",
        "function": {
            "name": FINAL_ANSWER_TOOL,
            "description": FINAL_ANSWER_DESCRIPTION,
            "parameters": dict[str, object](schema),
        },
    }
    if is_strict_schema(schema):
        param["function"]["strict"] = True
    return param


def _response_format(request: ModelRequest) -> ResponseFormat:
    schema = request.output_schema
    assert schema is not None
    return {
        "type": "json_schema",
        "json_schema": {
            "name": output_schema_name(request.output_name),
            "schema": dict[str, object](schema),
            "strict": is_strict_schema(schema),
        },
    }


def turn_from_chat_completion(completion: ChatCompletion, *, provider: str = "openai") -> AssistantTurn:
    """Read the first choice of a completion as a neutral turn.

    Tool-call arguments stay the raw JSON string the model produced (the
    dispatcher reports malformed JSON to the model); a refusal becomes the
    text with finish reason ``content_filter``.
    """
    if not completion.choices:
        raise ProviderError(f"{provider} returned a completion with no choices", provider=provider)
    choice = completion.choices[0]
    message = choice.message
    calls = tuple(
        ToolCall(id=call.id, name=call.function.name, arguments=call.function.arguments)
        for call in message.tool_calls or ()
        if call.type == "function"
    )
    finish: FinishReason = OPENAI_FINISH_REASONS.get(choice.finish_reason, "other")
    text = message.content or ""
    if message.refusal and not text:
        text, finish = message.refusal, "content_filter"
    return AssistantTurn(text=text, tool_calls=calls, usage=_usage(completion), finish_reason=finish)


def _usage(completion: ChatCompletion) -> Usage:
    usage = completion.usage
    if usage is None:
        return Usage(model_calls=1)
    details = usage.prompt_tokens_details
    cached = details.cached_tokens if details is not None and details.cached_tokens else 0
    output = usage.completion_tokens_details
    reasoning = output.reasoning_tokens if output is not None and output.reasoning_tokens else 0
    written = details.cache_write_tokens if details is not None and details.cache_write_tokens else 0
    return Usage(
        input_tokens=usage.prompt_tokens,
        output_tokens=usage.completion_tokens,
        cached_input_tokens=cached,
        model_calls=1,
        reasoning_tokens=reasoning,
        cache_write_tokens=written,
    )


def openai_clients(
    adapter: str,
    *,
    provider: str,
    model: str,
    given: tuple[openai.OpenAI | None, openai.AsyncOpenAI | None],
    base_url: str | None,
    api_key: str | None,
    timeout: float | None,
    retries: RetrySetting,
    max_retries: int | None,
) -> tuple[Retrier, openai.OpenAI | None, LoopBoundClient[openai.AsyncOpenAI]]:
    """An openai SDK adapter's retrier and clients: the given ones, or both built from the settings.

    Shared by the Chat Completions and the Responses adapters, which talk to
    the same SDK with the same rules (``clients_or_build``,
    ``sdk_retries_and_clients``).
    """
    client, async_client = given
    sync_ready, built_async = clients_or_build(
        adapter,
        client,
        async_client,
        build_openai_clients,
        base_url=base_url,
        api_key=api_key,
        timeout=timeout,
    )
    return sdk_retries_and_clients(
        adapter,
        provider=provider,
        model=model,
        given=given,
        ready=(sync_ready, built_async),
        rebuild_async=lambda: build_openai_clients(
            base_url=base_url, api_key=api_key, timeout=timeout, sync=False
        )[1],
        retries=retries,
        max_retries=max_retries,
    )


def build_openai_clients(
    *, base_url: str | None, api_key: str | None, timeout: float | None, sync: bool = True
) -> tuple[openai.OpenAI | None, openai.AsyncOpenAI]:
    """A sync and an async client with the same settings (the async one alone, for a new event loop).

    Shared with the Responses adapter, which talks to the same SDK.
    """
    try:
        import openai
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ConfigurationError(
            "OpenAIAdapter needs the openai SDK: pip install 'weakprompt[openai]'"
        ) from exc
    if api_key is None and base_url is not None and not os.environ.get("OPENAI_API_KEY"):
        api_key = _PLACEHOLDER_KEY
    retries = 0  # weakprompt retries (adapters.retries); the SDK's would multiply them
    wait = openai.NOT_GIVEN if timeout is None else timeout
    try:
        return (
            openai.OpenAI(api_key=api_key, base_url=base_url, max_retries=retries, timeout=wait)
            if sync
            else None,
            openai.AsyncOpenAI(api_key=api_key, base_url=base_url, max_retries=retries, timeout=wait),
        )
    except openai.OpenAIError as exc:
        raise ConfigurationError(f"OpenAIAdapter: cannot build the openai client: {exc}") from exc


def _apply_settings(
    params: CompletionCreateParamsNonStreaming, settings: ModelSettings, *, tools: bool
) -> None:
    """Put the sampling, reasoning and provider settings on Chat Completions parameters."""
    if settings.temperature is not None:
        params["temperature"] = settings.temperature
    if settings.top_p is not None:
        params["top_p"] = settings.top_p
    if settings.stop is not None:
        params["stop"] = list(settings.stop)
    if settings.seed is not None:
        params["seed"] = settings.seed
    if settings.parallel_tool_calls is not None and tools:  # the API refuses it without tools
        params["parallel_tool_calls"] = settings.parallel_tool_calls
    if settings.reasoning_effort is not None:
        params["reasoning_effort"] = settings.reasoning_effort
    if settings.service_tier is not None:
        params["service_tier"] = cast(
            "Literal['auto', 'default', 'flex', 'scale', 'priority']", settings.service_tier
        )
    if settings.extra:  # the provider's own options, sent as they are
        cast("dict[str, object]", params)["extra_body"] = dict(settings.extra)
