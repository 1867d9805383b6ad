"""Provider SDK exceptions -> weakprompt's typed adapter errors.

Callers catch :class:`~weakprompt.errors.AuthenticationError`,
:class:`~weakprompt.errors.RateLimitError`, :class:`~weakprompt.errors.ContextLengthError`
or :class:`~weakprompt.errors.ProviderError` whatever the provider, and still
read the provider's own message and HTTP status. The SDKs have already retried
(their own ``max_retries``) by the time an exception reaches this module.

An error can also arrive inside a stream, after the HTTP status (200) was
sent: the provider then names only an error type (``overloaded_error``,
``rate_limit_error``...). Such an error is classified by that type, as the
status the type stands for would be, and carries no status code; it keeps
the type (``provider_error_type``), and :func:`classified_status` gives
the status it stands for, which is what retries and fallbacks read. A stream that
stops before its end marker was cut off (:func:`cut_stream`).

The SDKs are imported inside the functions: an exception from an SDK means the
SDK is already loaded, and importing this module must stay free of them.
"""

from __future__ import annotations

import email.utils
import math
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, cast

from ..errors import (
    AdapterError,
    AuthenticationError,
    ContextLengthError,
    ProviderConnectionError,
    ProviderError,
    RateLimitError,
)

if TYPE_CHECKING:
    import anthropic
    import openai

__all__ = [
    "classified_status",
    "classify_status",
    "cut_stream",
    "from_anthropic_error",
    "from_error_body",
    "from_openai_error",
    "retry_after_seconds",
]

# Wording providers (and OpenAI-compatible servers) use for an over-long prompt.
_CONTEXT_WORDS = re.compile(
    r"context[ _]length|context window|maximum context|prompt is too long|too many tokens"
    r"|exceeds the (?:model'?s )?(?:maximum|context)",
    re.IGNORECASE,
)
_MAX_TEXT = 1000  # a proxy's HTML error page is not worth more than this
_CONTEXT_CODES = frozenset({"context_length_exceeded", "string_above_max_length"})
# The HTTP status each error type stands for, to classify errors sent inside a stream.
_TYPE_STATUS = {
    "authentication_error": 401,
    "invalid_api_key": 401,
    "permission_error": 403,
    "rate_limit_error": 429,
    "rate_limit_exceeded": 429,
    "insufficient_quota": 429,
    "request_too_large": 413,
    "invalid_request_error": 400,
    "context_length_exceeded": 400,
    "overloaded_error": 529,
    "api_error": 500,
    "server_error": 500,
}


def classify_status(status: int | None, message: str, code: str | None = None) -> type[AdapterError]:
    """Which typed error a provider failure becomes.

    401/403 -> authentication, 429 -> rate limit, 413 or a 400 that talks
    about the context window -> context length, anything else -> provider.
    """
    if status in (401, 403):
        return AuthenticationError
    if status == 429:
        return RateLimitError
    if status == 413:
        return ContextLengthError
    if status == 400 and (code in _CONTEXT_CODES or _CONTEXT_WORDS.search(message)):
        return ContextLengthError
    return ProviderError


def classified_status(error: AdapterError) -> int | None:
    """The HTTP status ``error`` came with, or the one its in-stream error type stands for."""
    if error.status_code is not None:
        return error.status_code
    return _TYPE_STATUS.get(error.provider_error_type or "")


def cut_stream(provider: str, where: object, problem: str) -> ProviderConnectionError:
    """A streamed reply that broke off: the partial reply is not a reply, and trying again may work."""
    return ProviderConnectionError(
        f"{provider} error: the stream from {where} broke off before the reply was complete ({problem}); "
        "the partial reply was dropped",
        provider=provider,
    )


def _error_fields(body: object) -> tuple[str | None, str | None, str | None]:
    """(message, type, code) from an error body, nested ``{"error": {...}}``, flat, or plain text."""
    if isinstance(body, str):
        text = body.strip()
        return (text[:_MAX_TEXT] if text else None), None, None
    if not isinstance(body, Mapping):
        return None, None, None
    fields = cast("Mapping[str, object]", body)
    inner = fields.get("error")
    if isinstance(inner, Mapping):
        fields = cast("Mapping[str, object]", inner)
    message, kind, code = fields.get("message"), fields.get("type"), fields.get("code")
    return (
        message if isinstance(message, str) else None,
        kind if isinstance(kind, str) else None,
        code if isinstance(code, str) else None,
    )


def retry_after_seconds(headers: Mapping[str, str], now: datetime | None = None) -> float | None:
    """The wait a provider asked for: ``retry-after-ms``, or ``retry-after`` in seconds or as an HTTP date.

    Anything unreadable or negative is ignored (``None``): the retry policy's
    own backoff applies then.
    """
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            value = float(millis) / 1000
        except ValueError:
            value = -1.0
        if value >= 0 and math.isfinite(value):
            return value
    given = headers.get("retry-after")
    if given is None:
        return None
    try:
        seconds = float(given)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(given)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = (when - (now or datetime.now(UTC))).total_seconds()
        return max(seconds, 0.0)
    return seconds if seconds >= 0 and math.isfinite(seconds) else None


def _headers(exc: object) -> Mapping[str, str]:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    return cast("Mapping[str, str]", headers) if isinstance(headers, Mapping) else {}


def _connection_error(provider: str, exc: object, reason: str) -> ProviderConnectionError:
    """A failure to reach the server, naming where it tried to go."""
    request = getattr(exc, "_request", None) or getattr(exc, "request", None)
    url = getattr(request, "url", None)
    where = f" ({url})" if url is not None else ""
    return ProviderConnectionError(
        f"{provider} error: the connection to the server{where} failed: {reason}", provider=provider
    )


def _build(
    provider: str,
    status: int | None,
    body: object,
    fallback: str,
    code: str | None = None,
    *,
    retry_after: float | None = None,
) -> AdapterError:
    message, kind, body_code = _error_fields(body)
    text = message or fallback
    code = code or body_code
    # OpenAI puts the telling word in the code ("rate_limit_exceeded") as often as in the type.
    named = code if code in _TYPE_STATUS else kind or code
    if status is None or status < 400:  # sent inside a stream: the type says what went wrong
        status = None
        error_class = classify_status(_TYPE_STATUS.get(named or ""), text, code)
    else:
        error_class = classify_status(status, text, code)
    label = f"{provider} error"
    if status is not None:
        label += f" {status}"
    if kind or code:
        label += f" ({kind or code})"
    return error_class(
        f"{label}: {text}",
        provider=provider,
        status_code=status,
        retry_after=retry_after,
        provider_error_type=named,
    )


def from_error_body(
    body: object, *, provider: str, status: int | None = None, retry_after: float | None = None
) -> AdapterError:
    """An error a provider described in a body of its own (a failed response event, an error chunk).

    Without ``status`` it is classified by its type or code, as an error
    sent inside a stream is.
    """
    return _build(provider, status, body, "the provider reported an error", retry_after=retry_after)


def from_openai_error(exc: openai.OpenAIError, *, provider: str = "openai") -> AdapterError:
    """Translate any exception the ``openai`` SDK raised during a request."""
    import openai

    if isinstance(exc, openai.APIStatusError):
        return _build(
            provider,
            exc.status_code,
            exc.body,
            exc.message,
            exc.code,
            retry_after=retry_after_seconds(_headers(exc)),
        )
    if isinstance(exc, openai.APIConnectionError):  # timeouts included
        return _connection_error(provider, exc, exc.message)
    if isinstance(exc, openai.APIError) and exc.body is not None:
        return _build(provider, None, exc.body, exc.message)  # an error chunk inside a stream
    if isinstance(exc, openai.APIError):
        # Connection failures and timeouts (after retries) have no status.
        return ProviderError(f"{provider} error: {exc.message}", provider=provider)
    return ProviderError(f"{provider} error: {exc}", provider=provider)


def from_anthropic_error(exc: anthropic.AnthropicError, *, provider: str = "anthropic") -> AdapterError:
    """Translate any exception the ``anthropic`` SDK raised during a request."""
    import anthropic

    if isinstance(exc, anthropic.APIStatusError):
        return _build(
            provider, exc.status_code, exc.body, exc.message, retry_after=retry_after_seconds(_headers(exc))
        )
    if isinstance(exc, anthropic.APIConnectionError):  # timeouts included
        return _connection_error(provider, exc, exc.message)
    if isinstance(exc, anthropic.APIError):
        return ProviderError(f"{provider} error: {exc.message}", provider=provider)
    return ProviderError(f"{provider} error: {exc}", provider=provider)
