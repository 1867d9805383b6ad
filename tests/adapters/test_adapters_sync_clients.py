"""A user's own sync SDK client, given alone, serves ``evaluate``, ``run`` and ``stream``.

Passing one ready client is how users bring Azure, proxy or custom-transport
settings. The adapter then streams on that client in worker threads: the
request, every read of the body and the close run off the event loop, which
stays free for other work meanwhile. The fake transport records the threads
that send and read.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable

import anthropic
import openai
import pytest

from adapters_support import ANSWER_TURN, FAST_RETRY, USER, make_request, openai_error_body
from stream_support import (
    StreamServer,
    anthropic_stream_events,
    collect,
    final_turn,
    openai_stream_chunks,
    sse_data,
    sse_events,
)
from weakprompt.adapters.anthropic import AnthropicAdapter
from weakprompt.adapters.openai import OpenAIAdapter
from weakprompt.errors import RateLimitError
from weakprompt.messages import AssistantTurn
from weakprompt.model import ProviderAdapter, drain
from weakprompt.prompt import MarkdownSection, Prompt, PromptTemplate
from weakprompt.runtime import RunFinished, TextDelta, evaluate, run, stream
from weakprompt.session import Session

MakeAdapter = Callable[[StreamServer], ProviderAdapter]


def openai_sync_only(server: StreamServer) -> ProviderAdapter:
    client = openai.OpenAI(
        api_key="sk-test", base_url="http://fake.test/v1", http_client=server.sync_client()
    )
    return OpenAIAdapter("gpt-test", client=client)


def anthropic_sync_only(server: StreamServer) -> ProviderAdapter:
    client = anthropic.Anthropic(api_key="k", base_url="http://fake.test", http_client=server.sync_client())
    return AnthropicAdapter("claude-test", client=client)


def openai_answer() -> bytes:
    return sse_data(*openai_stream_chunks(ANSWER_TURN), "[DONE]")


def anthropic_answer() -> bytes:
    return sse_events(*anthropic_stream_events(ANSWER_TURN))


PROVIDERS = pytest.mark.parametrize(
    ("make", "answer"),
    [(openai_sync_only, openai_answer), (anthropic_sync_only, anthropic_answer)],
    ids=["openai", "anthropic"],
)


def plain_prompt() -> Prompt[None]:
    template: PromptTemplate[None] = PromptTemplate(
        ns="tests/sync-clients",
        key="plain",
        sections=[MarkdownSection(title="Task", key="task", template="Say something.")],
    )
    return Prompt(template)


@PROVIDERS
def test_a_sync_client_alone_serves_evaluate(make: MakeAdapter, answer: Callable[[], bytes]) -> None:
    server = StreamServer().stream(answer())

    response = evaluate(plain_prompt(), adapter=make(server), session=Session())

    assert response.text == ANSWER_TURN.text
    # the request and every read of the body ran on worker threads, not on the loop's (this) thread
    assert len(server.threads) > 2 and threading.current_thread() not in server.threads


@PROVIDERS
def test_a_sync_client_alone_serves_run(make: MakeAdapter, answer: Callable[[], bytes]) -> None:
    server = StreamServer().stream(answer())

    async def go() -> tuple[threading.Thread, str]:
        response = await run(plain_prompt(), adapter=make(server), session=Session())
        return threading.current_thread(), response.text

    loop_thread, text = asyncio.run(go())

    assert text == ANSWER_TURN.text and loop_thread not in server.threads


@PROVIDERS
def test_a_sync_client_alone_serves_stream(make: MakeAdapter, answer: Callable[[], bytes]) -> None:
    server = StreamServer().stream(answer())

    async def go() -> list[object]:
        async with stream(plain_prompt(), adapter=make(server), session=Session()) as events:
            return [event async for event in events]

    events = asyncio.run(go())

    texts = [event for event in events if isinstance(event, TextDelta)]
    assert len(texts) > 1 and "".join(t.text for t in texts) == ANSWER_TURN.text
    assert isinstance(events[-1], RunFinished) and events[-1].response.text == ANSWER_TURN.text


@PROVIDERS
def test_the_event_loop_runs_other_work_while_a_sync_client_waits(
    make: MakeAdapter, answer: Callable[[], bytes]
) -> None:
    ticked = threading.Event()
    waited: list[bool] = []
    server = StreamServer().stream(answer())
    # The server answers only once a task on the event loop has run: it could not, were the loop blocked.
    server.before_answer = lambda: waited.append(ticked.wait(timeout=30))
    adapter = make(server)

    async def go() -> AssistantTurn:
        ticker = asyncio.ensure_future(_set(ticked))
        turn = await drain(adapter, make_request([USER]))
        await ticker
        return turn

    assert asyncio.run(go()) == ANSWER_TURN
    assert waited == [True]


async def _set(event: threading.Event) -> None:
    event.set()


def test_a_sync_client_stream_is_retried_and_typed_like_the_async_one() -> None:
    limited = openai_error_body("Rate limit reached", "requests", "rate_limit_exceeded")
    server = StreamServer().json(429, limited, **FAST_RETRY).stream(openai_answer())

    assert final_turn(collect(openai_sync_only(server), make_request([USER]))) == ANSWER_TURN
    assert len(server.requests) == 2

    always = StreamServer().json(429, limited).json(429, limited).json(429, limited)
    client = openai.OpenAI(
        api_key="sk-test", base_url="http://fake.test/v1", http_client=always.sync_client(), max_retries=0
    )
    with pytest.raises(RateLimitError):
        collect(OpenAIAdapter("gpt-test", client=client), make_request([USER]))
