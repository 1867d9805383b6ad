"""What every SDK and test adapter repeats apart from its wire mapping.

The identity properties the loop reads (name, model, context window, token
counter), the "ready client or build one" rule and the OpenAI-style finish
reasons live here once, so each adapter module keeps only how it talks to
its provider.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ParamSpec, TypeVar

from ..messages import FinishReason
from ..tokens import TokenCounter
from ._shared import reject_ignored_settings

__all__ = ["OPENAI_FINISH_REASONS", "AdapterIdentity", "client_or_build"]

# Chat Completions' finish reasons; llama.cpp's OpenAI-style replies use the same words.
OPENAI_FINISH_REASONS: dict[str, FinishReason] = {
    "stop": "stop",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "length": "length",
    "content_filter": "content_filter",
}

_P = ParamSpec("_P")
_C = TypeVar("_C")


class AdapterIdentity:
    """The read-only facts a :class:`~weakprompt.runtime.ProviderAdapter` exposes.

    None of these adapters counts tokens locally, so ``token_counter`` is None.
    """

    def __init__(self, *, name: str, model: str, context_window: int | None) -> None:
        self._name = name
        self._model = model
        self._context_window = context_window

    @property
    def name(self) -> str:
        return self._name

    @property
    def model(self) -> str:
        return self._model

    @property
    def context_window(self) -> int | None:
        return self._context_window

    @property
    def token_counter(self) -> TokenCounter | None:
        return None


def client_or_build(
    adapter: str, client: _C | None, build: Callable[_P, _C], *args: _P.args, **settings: _P.kwargs
) -> _C:
    """``client`` when given (refusing settings it would ignore), else ``build(**settings)``."""
    if client is not None:
        reject_ignored_settings(adapter, **settings)
        return client
    return build(*args, **settings)
