"""Retries of model calls: backoff with jitter, retry-after, the deadline, events; on a fake clock.

The servers are the scripted HTTP transports under the official SDKs. The
adapters turn the SDK's own retries off, so every request the server sees
is one of the policy's attempts, and the waits are recorded by an injected
sleep that moves a ``FakeClock`` instead of sleeping.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import anthropic
import httpx2
import openai
import pytest

from adapters_support import ANSWER_TURN, FIRST_PROMPT, USER, FakeServer, make_request, openai_completion_body
from loop_support import Recorder
from stream_support import (
    StreamServer,
    anthropic_stream_events,
    collect,
    collect_until_error,
    final_turn,
    openai_stream_chunks,
    sse_data,
    sse_events,
)
from weakprompt.adapters.anthropic import AnthropicAdapter
from weakprompt.adapters.error_mapping import retry_after_seconds
from weakprompt.adapters.openai import OpenAIAdapter
from weakprompt.adapters.retries import (
    DEFAULT_RETRIES,
    Retrier,
    RetryPolicy,
    adapter_retrier,
    is_transient,
)
from weakprompt.clock import FakeClock
from weakprompt.deadlines import Deadline
from weakprompt.errors import (
    AuthenticationError,
    ConfigurationError,
    DeadlineExceededError,
    ProviderConnectionError,
    ProviderError,
    RateLimitError,
)
from weakprompt.events import EventBus, ModelCallRetried
from weakprompt.prompt import MarkdownSection, Prompt, PromptTemplate
from weakprompt.runtime.loop import evaluate
from weakprompt.session import Session

RATE_LIMITED = {"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}}
UNAVAILABLE = {"error": {"message": "upstream unavailable", "type": "server_error", "code": None}}


class FakeSleep:
    """An async sleep that records the wait and moves the clock by it."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.clock.advance(seconds)

    def sync(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.clock.advance(seconds)


def highest(low: float, high: float) -> float:
    """A jitter draw that always takes the top of the range (deterministic)."""
    return high


def retrier(sleep: FakeSleep, policy: RetryPolicy = DEFAULT_RETRIES, provider: str = "openai") -> Retrier:
    return Retrier(policy, provider=provider, model="m", sleep=sleep, sync_sleep=sleep.sync, draw=highest)


def openai_stream_adapter(server: StreamServer, retries: Any) -> OpenAIAdapter:
    client = openai.AsyncOpenAI(
        api_key="sk-test", base_url="http://fake.test/v1", http_client=server.async_client(), max_retries=2
    )
    return OpenAIAdapter("gpt-test", async_client=client, retries=retries)


def answer_stream() -> bytes:
    return sse_data(*openai_stream_chunks(ANSWER_TURN), "[DONE]")


def plain_prompt() -> Prompt[None]:
    template: PromptTemplate[None] = PromptTemplate(
        ns="tests/retries",
        key="plain",
        sections=[MarkdownSection(title="Task", key="task", template="Say something.")],
    )
    return Prompt(template)


def test_a_429_with_retry_after_then_200_waits_what_the_server_asked_and_reports_it() -> None:
    clock = FakeClock()
    sleep = FakeSleep(clock)
    server = StreamServer().json(429, RATE_LIMITED, **{"retry-after": "7"}).stream(answer_stream())
    adapter = openai_stream_adapter(server, retrier(sleep))
    session = Session()
    events = Recorder(session.bus)

    response = evaluate(
        plain_prompt(), adapter=adapter, session=session, deadline=Deadline.after(60, clock=clock)
    )

    assert response.text == ANSWER_TURN.text
    assert sleep.waits == [7.0]
    assert len(server.requests) == 2  # the SDK did not retry on its own
    assert adapter.async_client.max_retries == 0
    (retried,) = [e for e in events.events if isinstance(e, ModelCallRetried)]
    assert (retried.provider, retried.model, retried.attempt) == ("openai", "m", 1)
    assert (retried.wait_seconds, retried.retry_after, retried.status_code) == (7.0, 7.0, 429)
    assert retried.error_type == "RateLimitError" and "Rate limit reached" in retried.error


def test_the_waits_follow_the_exponential_policy_with_jitter_and_its_cap() -> None:
    sleep = FakeSleep(FakeClock())
    policy = RetryPolicy(attempts=4, initial_wait=1.0, exp_base=2.0, jitter=0.5, max_wait=3.0)
    server = StreamServer().json(503, UNAVAILABLE).json(503, UNAVAILABLE).json(503, UNAVAILABLE)
    server.stream(answer_stream())

    turn = final_turn(
        collect(openai_stream_adapter(server, retrier(sleep, policy)), make_request(FIRST_PROMPT))
    )

    assert turn == ANSWER_TURN
    assert sleep.waits == [1.5, 2.5, 3.0]  # 1*2^0+0.5, 1*2^1+0.5, min(3, 4.5)


def test_the_deadline_cuts_retries_off() -> None:
    clock = FakeClock()
    sleep = FakeSleep(clock)
    server = StreamServer()
    for _ in range(5):
        server.json(429, RATE_LIMITED, **{"retry-after": "4"})
    adapter = openai_stream_adapter(server, retrier(sleep, RetryPolicy(attempts=5)))
    request = make_request(FIRST_PROMPT)
    request = type(request)(context=request.context, deadline=Deadline.after(10, clock=clock))

    _, raised = collect_until_error(adapter, request)

    # waits of 4 s at t=0 and t=4 fit; at t=8 only 2 s are left, so the third attempt is the last
    assert sleep.waits == [4.0, 4.0]
    assert len(server.requests) == 3
    assert isinstance(raised, DeadlineExceededError)
    assert "no retry after attempt 3" in str(raised) and "RateLimitError" in str(raised)
    assert isinstance(raised.__cause__, RateLimitError)


def test_exhausted_retries_raise_the_last_error_saying_so() -> None:
    sleep = FakeSleep(FakeClock())
    server = StreamServer().json(500, UNAVAILABLE).json(500, UNAVAILABLE).json(500, UNAVAILABLE)

    _, raised = collect_until_error(openai_stream_adapter(server, retrier(sleep)), make_request([USER]))

    assert isinstance(raised, ProviderError) and raised.status_code == 500
    assert raised.attempts == 3
    assert "gave up after 3 attempts" in "\n".join(raised.__notes__)
    assert len(sleep.waits) == 2


def test_a_retry_after_beyond_the_policys_patience_is_not_waited() -> None:
    sleep = FakeSleep(FakeClock())
    server = StreamServer().json(429, RATE_LIMITED, **{"retry-after": "3600"})
    policy = RetryPolicy(max_retry_after=60)

    _, raised = collect_until_error(
        openai_stream_adapter(server, retrier(sleep, policy)), make_request([USER])
    )

    assert isinstance(raised, RateLimitError) and sleep.waits == []
    assert "asked to wait 3600s" in "\n".join(raised.__notes__)


@pytest.mark.parametrize("status", [400, 401, 404])
def test_errors_about_the_request_are_not_retried(status: int) -> None:
    sleep = FakeSleep(FakeClock())
    body = {"error": {"message": "nope", "type": "invalid_request_error", "code": None}}
    server = StreamServer().json(status, body)

    _, raised = collect_until_error(openai_stream_adapter(server, retrier(sleep)), make_request([USER]))

    assert isinstance(raised, ProviderError | AuthenticationError)
    assert len(server.requests) == 1 and sleep.waits == []
    assert not getattr(raised, "__notes__", [])


def test_whole_replies_retry_on_the_sync_client_too() -> None:
    sleep = FakeSleep(FakeClock())
    fake = FakeServer().reply(529, {"error": {"message": "Overloaded", "type": "overloaded_error"}})
    fake.reply(200, openai_completion_body(ANSWER_TURN))
    client = openai.OpenAI(api_key="k", base_url="http://fake.test/v1", http_client=fake.client())
    adapter = OpenAIAdapter("gpt-test", client=client, retries=retrier(sleep))

    assert adapter.complete(make_request([USER])) == ANSWER_TURN
    assert sleep.waits == [1.5]  # initial 0.5 + the full jitter of 1.0
    assert len(fake.requests) == 2


def test_a_connection_that_fails_is_retried_and_names_the_url() -> None:
    sleep = FakeSleep(FakeClock())
    fake = FakeServer()
    fake.fail_with = lambda request: httpx2.ConnectError("connection refused", request=request)
    client = openai.OpenAI(api_key="k", base_url="http://127.0.0.1:9/v1", http_client=fake.client())
    adapter = OpenAIAdapter("gpt-test", client=client, retries=retrier(sleep, RetryPolicy(attempts=2)))

    with pytest.raises(ProviderConnectionError, match=r"http://127\.0\.0\.1:9/v1/chat/completions"):
        adapter.complete(make_request([USER]))
    assert len(fake.requests) == 2 and len(sleep.waits) == 1


def test_anthropic_overloaded_with_retry_after_ms_is_retried() -> None:
    sleep = FakeSleep(FakeClock())
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    server = StreamServer().json(529, overloaded, **{"retry-after-ms": "250"})
    server.stream(sse_events(*anthropic_stream_events(ANSWER_TURN)))
    client = anthropic.AsyncAnthropic(
        api_key="k", base_url="http://fake.test", http_client=server.async_client(), max_retries=3
    )
    adapter = AnthropicAdapter(
        "claude-test", async_client=client, retries=retrier(sleep, provider="anthropic")
    )

    turn = final_turn(collect(adapter, make_request([USER])))

    assert turn.text == ANSWER_TURN.text
    assert sleep.waits == [0.25]
    assert adapter.async_client.max_retries == 0


def test_a_ready_clients_max_retries_becomes_the_policy() -> None:
    client = openai.OpenAI(api_key="k", max_retries=4)
    adapter = OpenAIAdapter("m", client=client)
    assert adapter.retrier.policy.attempts == 5
    assert adapter.client.max_retries == 0
    assert OpenAIAdapter("m", api_key="k").retrier.policy == DEFAULT_RETRIES
    assert OpenAIAdapter("m", api_key="k", retries=RetryPolicy(attempts=9)).retrier.policy.attempts == 9


def test_retry_settings_are_checked() -> None:
    with pytest.raises(ConfigurationError, match="not both"):
        OpenAIAdapter("m", api_key="k", retries=1, max_retries=1)
    with pytest.raises(ConfigurationError, match="retries must be an int >= 0"):
        OpenAIAdapter("m", api_key="k", retries=-1)
    with pytest.raises(ValueError, match="attempts must be an int >= 1"):
        RetryPolicy(attempts=0)
    with pytest.raises(ValueError, match="jitter must be >= 0"):
        RetryPolicy(jitter=-1.0)
    ready = Retrier(DEFAULT_RETRIES, provider="p", model="m")
    assert (
        adapter_retrier("A", provider="p", model="m", retries=ready, max_retries=None, client_retries=None)
        is ready
    )


def test_the_backoff_saturates_instead_of_overflowing() -> None:
    policy = RetryPolicy(initial_wait=1.0, exp_base=10.0, max_wait=30.0, jitter=0.0)
    assert policy.backoff(1) == 1.0
    assert policy.backoff(10_000) == 30.0


def test_which_errors_are_transient() -> None:
    assert is_transient(RateLimitError("x", status_code=429))
    assert is_transient(ProviderError("x", status_code=529))
    assert is_transient(ProviderError("x", status_code=408))
    assert is_transient(ProviderConnectionError("x"))
    assert not is_transient(ProviderError("x", status_code=400))
    assert not is_transient(ProviderError("in-stream error", status_code=None))
    assert not is_transient(ProviderError("x 500: response_format json_schema unsupported", status_code=500))


def test_retry_after_headers_are_read_in_every_form() -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    assert retry_after_seconds({"retry-after-ms": "1500"}) == 1.5
    assert retry_after_seconds({"retry-after": "12"}) == 12.0
    later = format_datetime(now + timedelta(seconds=30), usegmt=True)
    assert retry_after_seconds({"retry-after": later}, now=now) == 30.0
    assert retry_after_seconds({"retry-after": "Wed, 21 Oct 2015 07:28:00"}, now=now) == 0.0
    assert retry_after_seconds({"retry-after": "soon"}) is None
    assert retry_after_seconds({"retry-after": "-3"}) is None
    assert retry_after_seconds({"retry-after-ms": "x", "retry-after": "2"}) == 2.0
    assert retry_after_seconds({}) is None


def test_a_retry_without_a_dispatcher_is_only_logged() -> None:
    sleep = FakeSleep(FakeClock())
    server = StreamServer().json(503, UNAVAILABLE).stream(answer_stream())
    dispatcher = EventBus()
    seen: list[object] = []
    dispatcher.subscribe_all(seen.append)

    collect(openai_stream_adapter(server, retrier(sleep)), make_request([USER]))

    assert seen == [] and len(sleep.waits) == 1


def test_a_stream_with_no_events_at_all_ends_quietly() -> None:
    async def nothing(request: Any) -> Any:
        return
        yield  # pragma: no cover

    async def read() -> list[Any]:
        return [e async for e in retrier(FakeSleep(FakeClock())).stream(make_request([USER]), nothing)]

    import asyncio

    assert asyncio.run(read()) == []


def test_the_deadline_cuts_whole_reply_retries_off_too() -> None:
    clock = FakeClock()
    sleep = FakeSleep(clock)
    fake = FakeServer().reply(503, UNAVAILABLE).reply(503, UNAVAILABLE)
    client = openai.OpenAI(api_key="k", base_url="http://fake.test/v1", http_client=fake.client())
    adapter = OpenAIAdapter("gpt-test", client=client, retries=retrier(sleep))
    request = make_request([USER])
    request = type(request)(context=request.context, deadline=Deadline.after(1.0, clock=clock))

    with pytest.raises(DeadlineExceededError, match="would pass during the wait"):
        adapter.complete(request)
    assert len(fake.requests) == 1 and sleep.waits == []


def test_sdk_errors_without_a_status_or_body_are_provider_errors() -> None:
    from weakprompt.adapters.error_mapping import from_anthropic_error, from_openai_error

    request = httpx2.Request("POST", "http://fake.test/v1/chat/completions")
    plain = from_openai_error(openai.APIError("odd failure", request, body=None))
    assert type(plain) is ProviderError and "odd failure" in str(plain)
    plain = from_anthropic_error(anthropic.APIError("odd failure", request, body=None))
    assert type(plain) is ProviderError and "odd failure" in str(plain)
    refused = from_anthropic_error(anthropic.APIConnectionError(request=request))
    assert isinstance(refused, ProviderConnectionError) and "http://fake.test" in str(refused)


def test_a_traced_run_records_each_retry_on_its_model_call_span() -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from weakprompt.otel import OTelTracing
    from weakprompt.otel import attributes as attr

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    clock = FakeClock()
    sleep = FakeSleep(clock)
    server = StreamServer().json(429, RATE_LIMITED, **{"retry-after": "3"}).stream(answer_stream())
    adapter = openai_stream_adapter(server, retrier(sleep))

    evaluate(plain_prompt(), adapter=adapter, session=Session(), tracing=OTelTracing(provider))

    (chat,) = [s for s in exporter.get_finished_spans() if s.name.startswith("chat")]
    (event,) = [e for e in chat.events if e.name == attr.EVENT_RETRY]
    assert dict(event.attributes or {})[attr.RETRY_ATTEMPT] == 1
    assert dict(event.attributes or {})[attr.RETRY_DELAY] == 3.0
