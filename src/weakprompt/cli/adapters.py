"""Choosing the model provider for ``weakprompt run``.

Three names are built in (``local``, ``openai``, ``anthropic``). Anything
else is a ``module:name`` reference to an adapter object or to a factory
returning one, which is also how tests plug in a scripted model.
"""

from __future__ import annotations

import inspect

from ..errors import ConfigurationError
from ..model import ProviderAdapter
from .loading import load_attribute

__all__ = ["BUILTIN_ADAPTERS", "build_adapter"]

BUILTIN_ADAPTERS = ("local", "openai", "anthropic")


def build_adapter(spec: str, *, model: str | None = None, base_url: str | None = None) -> ProviderAdapter:
    """The adapter named by ``spec``; ``model`` is a GGUF path for ``local``, a model name otherwise."""
    if spec == "local":
        if base_url is not None:
            raise ConfigurationError("--base-url applies to the openai and anthropic adapters, not local")
        from ..adapters.local import LocalAdapter

        return LocalAdapter(model)
    if spec in ("openai", "anthropic"):
        if not model:
            raise ConfigurationError(f"--adapter {spec} needs --model (the provider's model name)")
        if spec == "openai":
            from ..adapters.openai import OpenAIAdapter

            return OpenAIAdapter(model, base_url=base_url)
        from ..adapters.anthropic import AnthropicAdapter

        return AnthropicAdapter(model, base_url=base_url)
    if ":" not in spec:
        raise ConfigurationError(
            f"unknown adapter {spec!r}: use one of {', '.join(BUILTIN_ADAPTERS)} "
            "or a module:name reference to an adapter or adapter factory"
        )
    return _custom_adapter(spec, model)


def _custom_adapter(spec: str, model: str | None) -> ProviderAdapter:
    value = load_attribute(spec)
    # A class passes the protocol check through its properties, so test for it first.
    if isinstance(value, type) or (not isinstance(value, ProviderAdapter) and callable(value)):
        value = _call_factory(value, spec, model)
    if isinstance(value, type) or not isinstance(value, ProviderAdapter):
        raise ConfigurationError(
            f"{spec} is a {type(value).__name__}, not a provider adapter "
            "(an object with name, model, context_window, token_counter, complete() and stream())"
        )
    return value


def _call_factory(factory: object, spec: str, model: str | None) -> object:
    """Call a factory, passing ``model=`` only when it accepts that keyword."""
    assert callable(factory)
    try:
        accepts_model = "model" in inspect.signature(factory).parameters
    except (TypeError, ValueError):
        accepts_model = False
    if model is not None and not accepts_model:
        raise ConfigurationError(f"--model was given but the adapter factory {spec} takes no model argument")
    return factory(model=model) if accepts_model else factory()
