"""FallbackAdapter: the next adapter answers when one gives up; the transcript and the events say so."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import openai
import pytest

from adapters_support import ANSWER_TURN, USER, FakeServer, make_request, openai_completion_body
from loop_support import Recorder
from stream_support import StreamServer, collect, collect_until_error, final_turn, openai_chunk, sse_data
from test_adapters_output_modes import GOOD, City, city_prompt
from test_adapters_retries import FakeSleep, retrier
from weakprompt.adapters import FallbackAdapter, default_fall_back_on
from weakprompt.adapters.anthropic import AnthropicAdapter
from weakprompt.adapters.openai import OpenAIAdapter
from weakprompt.adapters.output_modes import UnsupportedOutputModeError
from weakprompt.adapters.retries import RetryPolicy
from weakprompt.adapters.testing import ScriptedAdapter
from weakprompt.clock import FakeClock
from weakprompt.errors import (
    AuthenticationError,
    ConfigurationError,
    ProviderError,
    RateLimitError,
)
from weakprompt.events import AdapterFellBack, ModelCallRetried
from weakprompt.messages import AssistantTurn
from weakprompt.model import ModelEvent, ModelRequest, ProviderAdapter, TextDelta
from weakprompt.prompt import MarkdownSection, Prompt, PromptTemplate
from weakprompt.runtime.loop import evaluate
from weakprompt.session import Session
from weakprompt.store import Store
from weakprompt.transcript import Transcript

SERVER_ERROR = {"error": {"message": "internal error", "type": "server_error", "code": None}}


def failing_openai(server: StreamServer, sleep: FakeSleep) -> OpenAIAdapter:
    client = openai.AsyncOpenAI(
        api_key="sk-test", base_url="http://fake.test/v1", http_client=server.async_client()
    )
    return OpenAIAdapter("gpt-primary", async_client=client, retries=retrier(sleep, RetryPolicy(attempts=3)))


def plain_prompt() -> Prompt[None]:
    template: PromptTemplate[None] = PromptTemplate(
        ns="tests/fallback",
        key="plain",
        sections=[MarkdownSection(title="Task", key="task", template="Say something.")],
    )
    return Prompt(template)


def test_three_500s_then_the_second_adapter_answers_and_the_transcript_records_it() -> None:
    sleep = FakeSleep(FakeClock())
    server = StreamServer().json(500, SERVER_ERROR).json(500, SERVER_ERROR).json(500, SERVER_ERROR)
    backup = ScriptedAdapter(["from the backup"], name="backup", model="small-model")
    adapter = FallbackAdapter([failing_openai(server, sleep), backup])
    session = Session()
    events = Recorder(session.bus)
    store = Store.open("sqlite://")

    response = evaluate(plain_prompt(), adapter=adapter, session=session, store=store)

    assert response.text == "from the backup"
    assert len(server.requests) == 3 and len(sleep.waits) == 2
    assistant = [c for c in Transcript(store, session.session_id).log() if c.content.role == "assistant"]
    (record,) = [c.content.metadata["adapter"] for c in assistant]
    assert record["name"] == "backup" and record["model"] == "small-model" and record["position"] == 1
    (failed,) = record["fell_back_from"]  # type: ignore[misc]
    assert failed["name"] == "openai" and failed["model"] == "gpt-primary"  # type: ignore[index]
    assert "ProviderError" in failed["error"] and "500" in failed["error"]  # type: ignore[index]
    retried = [e for e in events.events if isinstance(e, ModelCallRetried)]
    (switched,) = [e for e in events.events if isinstance(e, AdapterFellBack)]
    assert [e.attempt for e in retried] == [1, 2]
    assert (switched.from_adapter, switched.to_adapter, switched.to_model) == (
        "openai",
        "backup",
        "small-model",
    )
    assert switched.error_type == "ProviderError"
    assert events.events.index(retried[-1]) < events.events.index(switched)


def test_a_traced_turn_keeps_who_answered_beside_its_span_ids() -> None:
    from opentelemetry.sdk.trace import TracerProvider

    from weakprompt.otel import OTelTracing
    from weakprompt.runtime.loop import TRACE_KEY

    adapter = FallbackAdapter([ScriptedAdapter(["first"], name="a"), ScriptedAdapter(["unused"], name="b")])
    session = Session()
    store = Store.open("sqlite://")

    evaluate(
        plain_prompt(), adapter=adapter, session=session, store=store, tracing=OTelTracing(TracerProvider())
    )

    (assistant,) = [c for c in Transcript(store, session.session_id).log() if c.content.role == "assistant"]
    assert assistant.content.metadata["adapter"]["name"] == "a"  # type: ignore[index]
    assert set(assistant.content.metadata[TRACE_KEY]) == {"trace_id", "span_id"}  # type: ignore[arg-type]


def test_the_first_adapter_answering_is_recorded_too() -> None:
    adapter = FallbackAdapter([ScriptedAdapter(["first"], name="a"), ScriptedAdapter(["unused"], name="b")])

    turn = final_turn(collect(adapter, make_request([USER])))

    assert turn.text == "first"
    assert turn.metadata["adapter"] == {"name": "a", "model": "scripted", "position": 0, "fell_back_from": []}


def test_an_error_the_user_does_not_classify_is_raised_without_trying_the_next() -> None:
    server = StreamServer().json(401, {"error": {"message": "bad key", "type": "invalid_request_error"}})
    backup = ScriptedAdapter(["never"])
    adapter = FallbackAdapter([failing_openai(server, FakeSleep(FakeClock())), backup])

    _, raised = collect_until_error(adapter, make_request([USER]))

    assert isinstance(raised, AuthenticationError)
    assert backup.requests == ()


def test_a_user_classifier_decides() -> None:
    server = StreamServer().json(401, {"error": {"message": "bad key", "type": "invalid_request_error"}})
    backup = ScriptedAdapter(["answer"])
    adapter = FallbackAdapter(
        [failing_openai(server, FakeSleep(FakeClock())), backup],
        fall_back_on=lambda error: isinstance(error, AuthenticationError),
    )

    assert final_turn(collect(adapter, make_request([USER]))).text == "answer"


def test_when_every_adapter_fails_the_last_error_names_the_others() -> None:
    sleep = FakeSleep(FakeClock())
    first = StreamServer().json(500, SERVER_ERROR).json(500, SERVER_ERROR).json(500, SERVER_ERROR)
    second = StreamServer().json(503, SERVER_ERROR).json(503, SERVER_ERROR).json(503, SERVER_ERROR)
    adapter = FallbackAdapter([failing_openai(first, sleep), failing_openai(second, sleep)], name="chain")

    _, raised = collect_until_error(adapter, make_request([USER]))

    assert isinstance(raised, ProviderError) and raised.status_code == 503
    assert "chain: the adapters before openai failed too: openai (ProviderError)" in "\n".join(
        raised.__notes__
    )


class HalfThenFail:
    """Streams some text, then fails: too late to switch."""

    name = "half"
    model = "half"
    context_window = 100
    token_counter = None

    def complete(self, request: ModelRequest) -> AssistantTurn:
        raise ProviderError("half error 500: gone", status_code=500)

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        yield TextDelta("Hal")
        raise ProviderError("half error 500: gone", status_code=500)


def test_a_stream_that_already_started_does_not_switch() -> None:
    backup = ScriptedAdapter(["never"])
    adapter = FallbackAdapter([HalfThenFail(), backup])

    seen, raised = collect_until_error(adapter, make_request([USER]))

    assert seen == [TextDelta("Hal")] and isinstance(raised, ProviderError)
    assert backup.requests == ()


def test_whole_replies_fall_back_too() -> None:
    fake = FakeServer().reply(200, openai_completion_body(ANSWER_TURN))
    client = openai.OpenAI(api_key="k", base_url="http://fake.test/v1", http_client=fake.client())
    adapter = FallbackAdapter([HalfThenFail(), OpenAIAdapter("gpt-backup", client=client, name="backup")])

    turn = adapter.complete(make_request([USER]))

    assert turn == ANSWER_TURN
    assert turn.metadata["adapter"]["name"] == "backup"  # type: ignore[index]


def test_an_adapter_without_the_mode_hands_over_to_one_with_it() -> None:
    anthropic = AnthropicAdapter("claude-test", api_key="k")
    server = StreamServer().stream(sse_data(openai_chunk({"content": GOOD}, "stop"), "[DONE]"))
    client = openai.AsyncOpenAI(
        api_key="k", base_url="http://fake.test/v1", http_client=server.async_client()
    )
    adapter = FallbackAdapter([anthropic, OpenAIAdapter("gpt-test", async_client=client)])

    response = evaluate(city_prompt("json_object"), adapter=adapter, session=Session())

    assert response.output == City("Paris", 2100000)
    assert server.bodies()[0]["response_format"] == {"type": "json_object"}


def test_identity_and_construction() -> None:
    a = ScriptedAdapter([], name="a", model="m1", context_window=8000)
    b = ScriptedAdapter([], name="b", model="m2", context_window=4000)
    c = ScriptedAdapter([], name="c", model="m3")
    adapter = FallbackAdapter([a, b, c], name="chain")
    assert isinstance(adapter, ProviderAdapter)
    assert (adapter.name, adapter.model, adapter.context_window, adapter.token_counter) == (
        "chain",
        "m1",
        4000,
        None,
    )
    assert FallbackAdapter([c]).context_window is None
    with pytest.raises(ConfigurationError, match="at least one"):
        FallbackAdapter([])
    with pytest.raises(ConfigurationError, match="adapter #1 is a str"):
        FallbackAdapter([a, "gpt-4"])  # type: ignore[list-item]


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (RateLimitError("x", status_code=429), True),
        (ProviderError("x", status_code=502), True),
        (ProviderError("x", status_code=400), False),
        (ProviderError("x 400: response_format not supported", status_code=400), True),
        (AuthenticationError("x", status_code=401), False),
        (UnsupportedOutputModeError("no json_object"), True),
        (ValueError("a bug"), False),
    ],
)
def test_the_default_classification(error: Exception, expected: bool) -> None:
    assert default_fall_back_on(error) is expected


def test_stream_closes_the_adapters_it_read() -> None:
    closed: list[str] = []

    class Closing:
        name = model = "closing"
        context_window = None
        token_counter = None

        def complete(self, request: ModelRequest) -> AssistantTurn:
            return AssistantTurn(text="x")

        async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
            try:
                if request.tools == ():
                    raise ProviderError("closing error 503", status_code=503)
                yield TextDelta("never")  # pragma: no cover
            finally:
                closed.append("closing")

    adapter = FallbackAdapter([Closing(), ScriptedAdapter(["ok"])])

    async def read() -> list[Any]:
        return [event async for event in adapter.stream(make_request([USER]))]

    assert asyncio.run(read())[-1].turn.text == "ok"
    assert closed == ["closing"]
