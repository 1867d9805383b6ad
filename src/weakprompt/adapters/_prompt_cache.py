"""OpenAI's prompt-cache parameters, shared by the Chat Completions and Responses adapters.

OpenAI caches prefixes by itself; ``prompt_cache_key`` routes the requests
of one template version to the same cache, and ``prompt_cache_retention``
asks to keep it longer (``specs/CACHING.md``).
"""

from __future__ import annotations

from typing import Literal, TypeAlias

from ..errors import ConfigurationError
from ..model import ModelRequest

__all__ = ["PROMPT_CACHE_RETENTIONS", "PromptCacheRetention", "check_retention", "prompt_cache_params"]

PromptCacheRetention: TypeAlias = Literal["in_memory", "24h"]
"""OpenAI's ``prompt_cache_retention`` values."""

PROMPT_CACHE_RETENTIONS: tuple[PromptCacheRetention, ...] = ("in_memory", "24h")


def check_retention(adapter: str, value: object) -> PromptCacheRetention | None:
    """``value`` when it is ``None`` or one of OpenAI's retention values; a clear error otherwise."""
    if value is None:
        return None
    for known in PROMPT_CACHE_RETENTIONS:
        if value == known:
            return known
    raise ConfigurationError(
        f"{adapter}: prompt_cache_retention must be one of {', '.join(PROMPT_CACHE_RETENTIONS)} or None, "
        f"got {value!r}"
    )


def prompt_cache_params(
    request: ModelRequest, *, keyed: bool, retention: PromptCacheRetention | None
) -> dict[str, str]:
    """``prompt_cache_key`` (the template version's, for a request from the loop) and the retention."""
    params: dict[str, str] = {}
    if keyed and request.cache is not None:
        params["prompt_cache_key"] = request.cache.key
    if retention is not None:
        params["prompt_cache_retention"] = retention
    return params
