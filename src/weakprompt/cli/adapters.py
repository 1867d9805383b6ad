"""Choosing the model provider for ``weakprompt run``.

Five names are built in (``local``, ``openai``, ``anthropic``, ``gemini``,
``openai-responses``); each provider SDK is imported only when its adapter is
built, so a missing extra is named then, not at start-up. Anything
else is a reference to an adapter object or to a factory returning one:
``./my_models.py:factory`` (a file) or ``my_models:factory`` (a module,
found from the current directory first), which is also how tests plug in a
scripted model. A factory gets ``model=`` and the other adapter options it
names among its parameters (``output_mode``, ``temperature``, ``retries``,
``strict_tools``, ``max_tokens_field``); an option it cannot take is an error,
never silently dropped.
"""

from __future__ import annotations

import inspect

import attrs

from ..adapters.anthropic import AnthropicAdapter
from ..adapters.gemini import GeminiAdapter
from ..adapters.local import LocalAdapter
from ..adapters.openai import OpenAIAdapter
from ..adapters.openai_responses import OpenAIResponsesAdapter
from ..errors import ConfigurationError
from ..model import ModelSettings, OutputMode, ProviderAdapter
from .loading import load_attribute

__all__ = ["BUILTIN_ADAPTERS", "AdapterOptions", "build_adapter"]

BUILTIN_ADAPTERS = ("local", "openai", "anthropic", "gemini", "openai-responses")
# The built-in adapters that call a provider by name: they need --model and take --base-url.
_PROVIDER_ADAPTERS = ("openai", "anthropic", "gemini", "openai-responses")


@attrs.frozen(kw_only=True)
class AdapterOptions:
    """Adapter settings from the command line; ``None`` leaves the adapter's default."""

    output_mode: OutputMode | None = None
    temperature: float | None = None
    retries: int | None = None
    strict_tools: bool | None = None
    max_tokens_field: str | None = None

    def given(self) -> dict[str, object]:
        """The options that were set, by parameter name."""
        return {name: value for name, value in attrs.asdict(self).items() if value is not None}


_OPTION_FLAGS = {
    "output_mode": "--output-mode",
    "temperature": "--temperature",
    "retries": "--retries",
    "strict_tools": "--strict-tools/--no-strict-tools",
    "max_tokens_field": "--max-tokens-field",
}
# What each built-in adapter takes of the options.
_BUILTIN_TAKES = {
    "local": ("output_mode", "temperature"),
    "openai": ("output_mode", "temperature", "retries", "strict_tools", "max_tokens_field"),
    "anthropic": ("output_mode", "retries", "strict_tools"),  # this Messages API has no temperature
    "gemini": ("output_mode", "temperature", "retries"),
    "openai-responses": ("output_mode", "temperature", "retries", "strict_tools"),
}


def build_adapter(
    spec: str,
    *,
    model: str | None = None,
    base_url: str | None = None,
    options: AdapterOptions | None = None,
) -> ProviderAdapter:
    """The adapter named by ``spec``; ``model`` is a GGUF path for ``local``, a model name otherwise."""
    given = (options or AdapterOptions()).given()
    if spec in BUILTIN_ADAPTERS:
        _refuse_unknown(spec, given, _BUILTIN_TAKES[spec])
    if spec == "local":
        if base_url is not None:
            raise ConfigurationError(
                f"--base-url applies to the {', '.join(_PROVIDER_ADAPTERS)} adapters, not local"
            )
        return LocalAdapter(model, **given)  # pyright: ignore[reportArgumentType] - checked above
    if spec in _PROVIDER_ADAPTERS:
        if not model:
            raise ConfigurationError(f"--adapter {spec} needs --model (the provider's model name)")
        if spec == "openai":
            return OpenAIAdapter(model, base_url=base_url, **given)  # pyright: ignore[reportArgumentType]
        if spec == "anthropic":
            return AnthropicAdapter(model, base_url=base_url, **given)  # pyright: ignore[reportArgumentType]
        # These two take the temperature as a model setting, like every setting beyond the basics.
        temperature = given.pop("temperature", None)
        settings = ModelSettings(temperature=temperature) if isinstance(temperature, float) else None
        if spec == "gemini":
            return GeminiAdapter(model, base_url=base_url, settings=settings, **given)  # pyright: ignore[reportArgumentType]
        return OpenAIResponsesAdapter(model, base_url=base_url, settings=settings, **given)  # pyright: ignore[reportArgumentType]
    if ":" not in spec:
        raise ConfigurationError(
            f"unknown adapter {spec!r}: use one of {', '.join(BUILTIN_ADAPTERS)} "
            "or a reference to an adapter or adapter factory: ./file.py:name or module:name"
        )
    return _custom_adapter(spec, model, given)


def _refuse_unknown(adapter: str, given: dict[str, object], takes: tuple[str, ...]) -> None:
    extra = [_OPTION_FLAGS[name] for name in given if name not in takes]
    if extra:
        raise ConfigurationError(f"{', '.join(extra)} does not apply to the {adapter} adapter")


def _custom_adapter(spec: str, model: str | None, given: dict[str, object]) -> ProviderAdapter:
    value = load_attribute(spec)
    # A class passes the protocol check through its properties, so test for it first.
    if isinstance(value, type) or (not isinstance(value, ProviderAdapter) and callable(value)):
        value = _call_factory(value, spec, model, given)
    elif model is not None or given:
        flags = (["--model"] if model is not None else []) + [_OPTION_FLAGS[name] for name in given]
        raise ConfigurationError(f"{spec} is a ready adapter object: {', '.join(flags)} cannot apply to it")
    if isinstance(value, type) or not isinstance(value, ProviderAdapter):
        raise ConfigurationError(
            f"{spec} is a {type(value).__name__}, not a provider adapter "
            "(an object with name, model, context_window, token_counter, complete() and stream())"
        )
    return value


def _call_factory(factory: object, spec: str, model: str | None, given: dict[str, object]) -> object:
    """Call a factory with ``model=`` and the given options, each only when it names that parameter."""
    assert callable(factory)
    try:
        parameters = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        parameters = {}
    if model is not None and "model" not in parameters:
        raise ConfigurationError(f"--model was given but the adapter factory {spec} takes no model argument")
    refused = [_OPTION_FLAGS[name] for name in given if name not in parameters]
    if refused:
        raise ConfigurationError(f"the adapter factory {spec} takes no {', '.join(refused)} option")
    arguments = dict(given)
    if "model" in parameters:
        arguments["model"] = model
    return factory(**arguments)
