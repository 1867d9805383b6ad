"""Google Gemini through the official ``google-genai`` SDK (``pip install 'weakprompt[gemini]'``).

System messages become the ``system_instruction``; the rest become
``contents``: user text, model turns (text and ``function_call`` parts) and
tool results (``function_response`` parts, consecutive ones in one user
turn, as Gemini pairs a turn's calls with the next turn's responses).
Tools go as function declarations with their JSON schema
(``parameters_json_schema``), reduced to the keywords Gemini reads
(:func:`gemini_schema`). Replies are read whole (``generate_content``) or
chunk by chunk (``generate_content_stream``, on ``client.aio``); a stream is
complete only once a chunk gave its finish reason.

Thought signatures: a thinking model signs its function-call parts and
must get the signatures back with those calls in the next request. They
are the turn's reasoning parts (issuer ``gemini:<model>``, ``id`` the
call's id, the signature in base64), with the thoughts' text when reasoning
is on (``include_thoughts``); the loop stores them with the assistant
commit, and they are sent again on the calls they came with, to Gemini
only. A call that came from another provider (a fallback) has none.

The SDK is imported when an adapter is built, never when this module loads.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncGenerator, AsyncIterator, Generator, Mapping
from typing import TYPE_CHECKING, Protocol, cast

from ..errors import AdapterError, ConfigurationError, ProviderConnectionError, ProviderError
from ..jsontypes import JSONObject
from ..messages import AssistantTurn
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
from ._support import (
    AdapterIdentity,
    LoopBoundClient,
    check_tool_choice,
)
from .error_mapping import cut_stream, from_error_body, retry_after_seconds
from .output_modes import (
    FINAL_ANSWER_DESCRIPTION,
    FINAL_ANSWER_TOOL,
    OutputModes,
    final_answer_choice,
    with_schema_instruction,
)
from .request_rules import check_gemini_contents
from .retries import RetrySetting, adapter_retrier
from .wire.gemini import PROVIDER, GeminiChunkReader, gemini_contents, turn_from_response
from .wire.gemini_schema import gemini_schema
from .wire.reasoning import ForeignReasoning, check_foreign_reasoning, issuer_of

if TYPE_CHECKING:
    from google import genai
    from google.genai import types

    from ..tools import AnyTool

__all__ = ["GEMINI_SETTINGS", "GeminiAdapter", "gemini_schema", "turn_from_response"]

GEMINI_SETTINGS = frozenset(
    {"temperature", "top_p", "max_output_tokens", "stop", "seed", "thinking_budget", "reasoning_effort"}
    | {"service_tier", "extra"}
)
"""The model settings mapped onto ``GenerateContentConfig`` (thinking as a budget or as a level)."""

OUTPUT_MODES: tuple[ConcreteOutputMode, ...] = ("native", "json_object", "tool", "prompted")
AUTO_ORDER: tuple[ConcreteOutputMode, ...] = ("native", "json_object", "prompted")


class GeminiAdapter(SettingsAware, AdapterIdentity):
    """A :class:`~weakprompt.model.ProviderAdapter` for the Gemini API.

    Pass a ready ``google.genai.Client`` (its ``aio`` side serves ``stream``;
    it is the caller's, never closed here) or let the adapter build one from
    ``api_key`` (else ``GEMINI_API_KEY`` / ``GOOGLE_API_KEY``), ``base_url``
    and ``timeout`` (seconds). A client the adapter built is built again for
    each event loop that streams, like the other SDK adapters' async clients.
    The SDK's own retries stay off (it has none unless asked); weakprompt's
    retries apply.
    """

    def __init__(
        self,
        model: str,
        *,
        client: genai.Client | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float | None = None,
        context_window: int | None = None,
        settings: ModelSettings | None = None,
        output_mode: OutputMode = "auto",
        retries: RetrySetting = None,
        max_retries: int | None = None,
        foreign_reasoning: ForeignReasoning = "drop",
        name: str = "gemini",
    ) -> None:
        if not model:
            raise ConfigurationError("GeminiAdapter: model must be a non-empty model name")
        self._foreign_reasoning: ForeignReasoning = check_foreign_reasoning(
            "GeminiAdapter", foreign_reasoning
        )
        super().__init__(name=name, model=model, context_window=context_window)
        self._base_url = base_url
        self.model_settings = ModelSettings().merged(settings)
        self.supported_settings = GEMINI_SETTINGS
        check_supported(self.model_settings, GEMINI_SETTINGS, adapter="GeminiAdapter", model=model)
        self.output_modes = OutputModes(
            "GeminiAdapter", supported=OUTPUT_MODES, auto_order=AUTO_ORDER, default=output_mode
        )
        if client is not None:
            given = {"api_key": api_key, "base_url": base_url, "timeout": timeout}
            ignored = [label for label, value in given.items() if value is not None]
            if ignored:
                raise ConfigurationError(
                    f"GeminiAdapter: {', '.join(ignored)} would be ignored because a client was given; "
                    "configure the client instead"
                )
            self._client = client
            self._async_clients = LoopBoundClient(_AsyncSide(client), None)
        else:
            self._client = _build_client(api_key=api_key, base_url=base_url, timeout=timeout)
            self._async_clients = LoopBoundClient(
                _AsyncSide(self._client),
                lambda: _AsyncSide(_build_client(api_key=api_key, base_url=base_url, timeout=timeout)),
            )
        self.retrier = adapter_retrier(
            "GeminiAdapter",
            provider=name,
            model=model,
            retries=retries,
            max_retries=max_retries,
            client_retries=None,
        )

    @property
    def client(self) -> genai.Client:
        """The client ``complete`` uses."""
        return self._client

    def build_request(self, request: ModelRequest) -> tuple[list[types.Content], types.GenerateContentConfig]:
        """``(contents, config)`` for ``generate_content`` (no network)."""
        from google.genai import types

        check_tool_choice(request, self._name)
        request, mode = self.output_modes.pinned(request)
        if mode in ("json_object", "prompted"):
            request = with_schema_instruction(request)
        system, contents = gemini_contents(
            request.context.messages, foreign_reasoning=self._foreign_reasoning
        )
        config = types.GenerateContentConfig()
        if system and not contents:  # Gemini needs one content: instructions alone are the user's turn
            contents = [types.Content(role="user", parts=[types.Part(text=system)])]
        elif system:
            config.system_instruction = system
        declarations = [_declaration(tool) for tool in request.tools]
        choice = request.tool_choice
        schema = request.output_schema
        if mode == "tool" and schema is not None:
            choice = final_answer_choice(request)
            declarations.append(
                types.FunctionDeclaration(
                    name=FINAL_ANSWER_TOOL,
                    description=FINAL_ANSWER_DESCRIPTION,
                    parameters_json_schema=gemini_schema(schema, where="the output schema"),
                )
            )
        if declarations:
            config.tools = [types.Tool(function_declarations=declarations)]
            config.tool_config = types.ToolConfig(function_calling_config=_calling_config(choice))
        if mode in ("native", "json_object"):
            config.response_mime_type = "application/json"
        if mode == "native" and schema is not None:
            config.response_json_schema = gemini_schema(schema, where="the output schema")
        check_supported(request.settings, GEMINI_SETTINGS, adapter="GeminiAdapter", model=self._model)
        settings = self.model_settings.merged(request.settings)
        limit = request.max_output_tokens or settings.max_output_tokens
        if limit is not None:
            config.max_output_tokens = limit
        _apply_settings(config, settings)
        check_gemini_contents(contents, provider=self._name)
        return contents, config

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
        contents, config = self.build_request(request)
        with _errors_mapped(self._name, self._where()):
            models = cast("_Models", self._client.models)
            response = models.generate_content(model=self._model, contents=contents, config=config)
        return turn_from_response(response, provider=self._name, model=self._model)

    async def _stream_once(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        contents, config = self.build_request(request)
        reader = GeminiChunkReader(self._name, model=self._model)
        where = self._where()
        side = await self._async_clients.for_running_loop()
        assert side is not None  # there is always a client: given or built
        chunks = _async_chunks(side.client, self._model, contents, config)
        with _errors_mapped(self._name, where, streaming=True):
            async with contextlib.aclosing(chunks):
                async for chunk in chunks:
                    for event in reader.read(chunk):
                        yield event
        if reader.finish_reason is None:
            raise cut_stream(self._name, where, "no chunk gave a finish reason")
        for event in reader.finish():
            yield event

    @property
    def issuer(self) -> str:
        """The ``issuer`` of the reasoning this adapter's model writes (``gemini:<model>``)."""
        return issuer_of(PROVIDER, self._model)

    def _where(self) -> str:
        return self._base_url or "the Gemini API"


class _Models(Protocol):
    """``client.models`` as called here (the SDK's own signature names PIL types, unknown without it)."""

    def generate_content(
        self, *, model: str, contents: list[types.Content], config: types.GenerateContentConfig
    ) -> types.GenerateContentResponse: ...


class _AsyncModels(Protocol):
    """``client.aio.models`` as called here."""

    async def generate_content_stream(
        self, *, model: str, contents: list[types.Content], config: types.GenerateContentConfig
    ) -> AsyncIterator[types.GenerateContentResponse]: ...


class _AsyncSide:
    """A client's async side as :class:`LoopBoundClient` holds it: closing it closes its connections."""

    def __init__(self, client: genai.Client) -> None:
        self.client = client

    async def close(self) -> None:
        await self.client.aio.aclose()


async def _async_chunks(
    client: genai.Client, model: str, contents: list[types.Content], config: types.GenerateContentConfig
) -> AsyncGenerator[types.GenerateContentResponse]:
    models = cast("_AsyncModels", client.aio.models)
    chunks = await models.generate_content_stream(model=model, contents=contents, config=config)
    async for chunk in chunks:
        yield chunk


@contextlib.contextmanager
def _errors_mapped(provider: str, where: str, *, streaming: bool = False) -> Generator[None]:
    """The SDK's errors, and a broken connection, as typed AdapterErrors."""
    import httpx2
    from google.genai import errors

    try:
        yield
    except errors.APIError as exc:
        raise gemini_error(exc, provider=provider) from exc
    except httpx2.TransportError as exc:
        reason = str(exc) or type(exc).__name__
        if streaming:
            raise cut_stream(provider, where, f"the connection failed: {reason}") from exc
        raise ProviderConnectionError(
            f"{provider} error: the connection to the server ({where}) failed: {reason}", provider=provider
        ) from exc
    except (errors.UnknownApiResponseError, json.JSONDecodeError) as exc:  # a body that is not JSON
        if streaming:
            raise cut_stream(provider, where, f"a data line is not JSON: {exc}") from exc
        raise ProviderError(f"{provider} error: the reply is not JSON: {exc}", provider=provider) from exc


def gemini_error(exc: Exception, *, provider: str = "gemini") -> AdapterError:
    """A ``google.genai.errors.APIError`` as the typed error its HTTP status and wording say."""
    from google.genai import errors

    assert isinstance(exc, errors.APIError)
    body: JSONObject = {"message": str(exc.message or exc), "type": str(exc.status or "")}
    response: object = getattr(exc, "response", None)
    headers: object = getattr(response, "headers", None)
    wait = retry_after_seconds(cast("Mapping[str, str]", headers)) if isinstance(headers, Mapping) else None
    code = exc.code if exc.code else None
    return from_error_body(body, provider=provider, status=code, retry_after=wait)


def _calling_config(choice: ToolChoice) -> types.FunctionCallingConfig:
    from google.genai import types

    if isinstance(choice, ForceTool):
        return types.FunctionCallingConfig(
            mode=types.FunctionCallingConfigMode.ANY, allowed_function_names=[choice.name]
        )
    mode = {"auto": "AUTO", "none": "NONE", "required": "ANY"}[choice]
    return types.FunctionCallingConfig(mode=types.FunctionCallingConfigMode(mode))


def _declaration(tool: AnyTool) -> types.FunctionDeclaration:
    from google.genai import types

    return types.FunctionDeclaration(
        name=tool.name,
        description=tool.description,
        parameters_json_schema=gemini_schema(tool.parameters_schema(), where=f"tool {tool.name!r}"),
    )


def _apply_settings(config: types.GenerateContentConfig, settings: ModelSettings) -> None:
    """Put the sampling, thinking and provider settings on a ``GenerateContentConfig``."""
    from google.genai import types

    if settings.temperature is not None:
        config.temperature = settings.temperature
    if settings.top_p is not None:
        config.top_p = settings.top_p
    if settings.stop is not None:
        config.stop_sequences = list(settings.stop)
    if settings.seed is not None:
        config.seed = settings.seed
    if settings.thinking_budget is not None and settings.reasoning_effort is not None:
        raise ConfigurationError(
            "GeminiAdapter: thinking_budget and reasoning_effort are both set; Gemini takes a thinking "
            "budget or a thinking level, not both"
        )
    if settings.thinking_budget is not None:
        config.thinking_config = types.ThinkingConfig(
            thinking_budget=settings.thinking_budget, include_thoughts=True
        )
    if settings.reasoning_effort is not None:
        level = types.ThinkingLevel(settings.reasoning_effort.upper())
        config.thinking_config = types.ThinkingConfig(thinking_level=level, include_thoughts=True)
    if settings.service_tier is not None:
        tiers = [tier.value for tier in types.ServiceTier]
        if settings.service_tier.lower() not in tiers:
            raise ConfigurationError(
                f"GeminiAdapter: service_tier {settings.service_tier!r} is not one of Gemini's tiers "
                f"({', '.join(tiers)})"
            )
        config.service_tier = types.ServiceTier(settings.service_tier.lower())
    if settings.extra:  # the provider's own request fields, merged into the body as they are
        config.http_options = types.HttpOptions(extra_body=dict(settings.extra))


# ---------------------------------------------------------------- conversation -> contents


def _build_client(*, api_key: str | None, base_url: str | None, timeout: float | None) -> genai.Client:
    try:
        from google import genai
        from google.genai import types
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ConfigurationError(
            "GeminiAdapter needs the google-genai SDK: pip install 'weakprompt[gemini]'"
        ) from exc
    options = types.HttpOptions(base_url=base_url, timeout=None if timeout is None else int(timeout * 1000))
    try:
        return genai.Client(api_key=api_key, http_options=options)
    except ValueError as exc:  # no key given nor in the environment
        raise ConfigurationError(f"GeminiAdapter: cannot build the google-genai client: {exc}") from exc
