"""The status/message table behind every adapter's typed errors."""

from __future__ import annotations

import anthropic
import httpx2
import openai
import pytest
from hypothesis import given
from hypothesis import strategies as st

from weakprompt.adapters.error_mapping import classify_status, from_anthropic_error, from_openai_error
from weakprompt.errors import (
    AdapterError,
    AuthenticationError,
    ContextLengthError,
    ProviderError,
    RateLimitError,
)


@pytest.mark.parametrize(
    ("status", "message", "code", "expected"),
    [
        (401, "bad key", None, AuthenticationError),
        (403, "no access to model", None, AuthenticationError),
        (429, "slow down", None, RateLimitError),
        (413, "request too large", None, ContextLengthError),
        (400, "anything", "context_length_exceeded", ContextLengthError),
        (400, "prompt is too long: 210000 tokens > 200000 maximum", None, ContextLengthError),
        (400, "Requested tokens (261) exceed context window of 256", None, ContextLengthError),
        (400, "This model's maximum context length is 8192 tokens", None, ContextLengthError),
        (400, "Invalid value for 'temperature'", "invalid_value", ProviderError),
        (500, "maximum context length", None, ProviderError),  # only a 400 can be a context error
        (529, "Overloaded", None, ProviderError),
        (404, "model not found", "model_not_found", ProviderError),
    ],
)
def test_classification_table(
    status: int, message: str, code: str | None, expected: type[AdapterError]
) -> None:
    assert classify_status(status, message, code) is expected


@given(st.integers(min_value=500, max_value=599), st.text(max_size=40))
def test_server_errors_are_always_provider_errors(status: int, message: str) -> None:
    assert classify_status(status, message) is ProviderError


def _response(status: int) -> httpx2.Response:
    return httpx2.Response(status, request=httpx2.Request("POST", "http://fake.test/v1/x"))


def test_blank_text_body_falls_back_to_the_sdk_message() -> None:
    exc = openai.InternalServerError("Error code: 502", response=_response(502), body="   ")
    error = from_openai_error(exc)
    assert str(error) == "openai error 502: Error code: 502"


def test_long_text_bodies_are_cut() -> None:
    exc = openai.InternalServerError("Error code: 502", response=_response(502), body="<html>" + "x" * 5000)
    assert len(str(from_openai_error(exc))) < 1100


def test_non_mapping_bodies_use_the_sdk_message() -> None:
    exc = anthropic.InternalServerError("Error code: 500", response=_response(500), body=["odd"])
    error = from_anthropic_error(exc, provider="claude")
    assert (str(error), error.provider, error.status_code) == (
        "claude error 500: Error code: 500",
        "claude",
        500,
    )


def test_flat_error_bodies_are_read_too() -> None:
    exc = anthropic.RateLimitError(
        "Error code: 429", response=_response(429), body={"type": "rate_limit_error", "message": "too fast"}
    )
    error = from_anthropic_error(exc)
    assert isinstance(error, RateLimitError)
    assert str(error) == "anthropic error 429 (rate_limit_error): too fast"


def test_errors_outside_the_api_are_provider_errors() -> None:
    assert isinstance(from_openai_error(openai.OpenAIError("client misuse")), ProviderError)
    error = from_anthropic_error(anthropic.AnthropicError("client misuse"))
    assert isinstance(error, ProviderError) and "client misuse" in str(error)
    assert error.status_code is None


def test_the_providers_error_type_is_kept_with_the_word_that_classifies_it() -> None:
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    exc = anthropic.APIStatusError("Overloaded", response=_response(529), body=overloaded)
    assert from_anthropic_error(exc).provider_error_type == "overloaded_error"

    # OpenAI's telling word is often the code ("rate_limit_exceeded"), the type being vaguer ("requests")
    limited = {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}
    in_stream = openai.APIError(
        "Rate limit reached", httpx2.Request("POST", "http://fake.test"), body=limited
    )
    error = from_openai_error(in_stream)
    assert type(error) is RateLimitError and error.provider_error_type == "rate_limit_exceeded"
    assert error.status_code is None

    unknown = {"message": "odd", "type": "something_new", "code": "odd_code"}
    odd = openai.APIError("odd", httpx2.Request("POST", "http://fake.test"), body=unknown)
    assert from_openai_error(odd).provider_error_type == "something_new"
