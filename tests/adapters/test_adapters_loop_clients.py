"""Async clients an adapter built are rebuilt for each event loop and closed by it; given ones are kept."""

from __future__ import annotations

import asyncio
import gc
import http.server
import logging
import sys
import threading
from collections.abc import Iterator

import openai
import pytest

from adapters_support import ANSWER_TURN
from stream_support import anthropic_stream_events, openai_stream_chunks, sse_data, sse_events
from weakprompt.adapters._support import LoopBoundClient
from weakprompt.adapters.anthropic import AnthropicAdapter
from weakprompt.adapters.openai import OpenAIAdapter
from weakprompt.prompt import MarkdownSection, Prompt, PromptTemplate
from weakprompt.runtime.loop import evaluate
from weakprompt.session import Session


class Client:
    """Stands for an async SDK client: records whether (and on which loop) it was closed."""

    def __init__(self) -> None:
        self.closed_on: asyncio.AbstractEventLoop | None = None

    async def close(self) -> None:
        self.closed_on = asyncio.get_running_loop()


def test_a_built_client_is_rebuilt_for_a_new_event_loop_and_kept_within_one() -> None:
    first_client = Client()
    built: list[Client] = []

    def rebuild() -> Client:
        built.append(Client())
        return built[-1]

    clients = LoopBoundClient(first_client, rebuild)

    async def twice() -> tuple[Client | None, Client | None]:
        return await clients.for_running_loop(), await clients.for_running_loop()

    first_a, first_b = asyncio.run(twice())
    second_a, second_b = asyncio.run(twice())

    assert first_a is first_b is first_client and second_a is second_b
    assert first_a is not second_a and built == [second_a]
    assert clients.current is second_a


def test_a_built_client_is_closed_on_its_own_loop_when_that_loop_ends() -> None:
    clients = LoopBoundClient(Client(), Client)
    loops: list[asyncio.AbstractEventLoop] = []

    async def use() -> Client | None:
        loops.append(asyncio.get_running_loop())
        client = await clients.for_running_loop()
        assert client is not None and client.closed_on is None  # open while its loop runs
        return client

    first, second = asyncio.run(use()), asyncio.run(use())

    assert first is not None and second is not None
    assert first.closed_on is loops[0] and second.closed_on is loops[1]


def test_a_client_that_fails_to_close_at_the_end_of_its_loop_is_only_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Failing(Client):
        async def close(self) -> None:
            raise RuntimeError("already gone")

    clients = LoopBoundClient(Failing(), Failing)

    async def use() -> None:
        await clients.for_running_loop()

    with caplog.at_level(logging.DEBUG, logger="weakprompt.adapters"):
        asyncio.run(use())

    assert any("closing an async client" in r.message and r.exc_info for r in caplog.records)


def test_loops_running_at_once_in_threads_get_a_client_each_and_close_only_their_own() -> None:
    clients = LoopBoundClient(Client(), Client)
    both_running = threading.Barrier(2)
    seen: dict[str, tuple[Client, asyncio.AbstractEventLoop, bool]] = {}

    async def use(name: str) -> None:
        client = await clients.for_running_loop()
        assert client is not None
        await asyncio.to_thread(both_running.wait, 30)  # the other loop has its client too
        again = await clients.for_running_loop()
        seen[name] = (client, asyncio.get_running_loop(), again is client and client.closed_on is None)

    threads = [threading.Thread(target=asyncio.run, args=(use(name),)) for name in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    (a, loop_a, kept_a), (b, loop_b, kept_b) = seen["a"], seen["b"]
    assert a is not b and kept_a and kept_b  # neither was replaced nor closed while its loop ran
    assert a.closed_on is loop_a and b.closed_on is loop_b


def test_a_loop_closed_by_hand_is_forgotten_quietly_when_the_next_loop_comes() -> None:
    clients = LoopBoundClient(Client(), Client)
    unraisable: list[object] = []

    async def use() -> Client | None:
        return await clients.for_running_loop()

    loop = asyncio.new_event_loop()
    first = loop.run_until_complete(use())
    loop.close()  # without shutdown_asyncgens(): the loop never closes its client
    hook, sys.unraisablehook = sys.unraisablehook, unraisable.append
    try:
        second = asyncio.run(use())
        gc.collect()
    finally:
        sys.unraisablehook = hook

    assert first is not None and second is not None and first is not second
    assert first.closed_on is None and second.closed_on is not None
    assert unraisable == []  # nothing asked the closed loop to close anything


def test_a_given_client_is_never_replaced_nor_closed() -> None:
    given = Client()
    clients = LoopBoundClient(given, None)

    async def get() -> Client | None:
        return await clients.for_running_loop()

    assert asyncio.run(get()) is given and asyncio.run(get()) is given
    assert given.closed_on is None


def test_the_openai_adapter_rebuilds_only_what_it_built() -> None:
    own = OpenAIAdapter("m", api_key="k", base_url="http://compatible.test/v1")
    given = OpenAIAdapter("m", async_client=openai.AsyncOpenAI(api_key="k"))

    async def current(adapter: OpenAIAdapter) -> object:
        return await adapter._async_clients.for_running_loop()

    own_first, own_second = asyncio.run(current(own)), asyncio.run(current(own))
    assert own_first is not own_second
    assert isinstance(own_second, openai.AsyncOpenAI) and own_second.max_retries == 0
    assert str(own_second.base_url).startswith("http://compatible.test/v1")
    assert asyncio.run(current(given)) is asyncio.run(current(given))


# ---------------------------------------------------------------- many evaluate() calls on one adapter


class _Answers(http.server.BaseHTTPRequestHandler):
    """A loopback server that answers both APIs with a whole streamed reply, keeping connections open."""

    protocol_version = "HTTP/1.1"  # keep-alive: the client pools the connection on its event loop

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["content-length"]))
        if self.path.endswith("/chat/completions"):
            body = sse_data(*openai_stream_chunks(ANSWER_TURN), "[DONE]")
        else:
            body = sse_events(*anthropic_stream_events(ANSWER_TURN))
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def loopback() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Answers)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def _plain_prompt() -> Prompt[None]:
    template: PromptTemplate[None] = PromptTemplate(
        ns="tests/loop-clients",
        key="plain",
        sections=[MarkdownSection(title="Task", key="task", template="Say something.")],
    )
    return Prompt(template)


@pytest.mark.parametrize(("provider", "calls"), [("openai", 40), ("anthropic", 12)])
def test_repeated_evaluate_calls_on_one_built_adapter_print_nothing(
    provider: str,
    calls: int,
    loopback: str,
    capfd: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Before, each dropped client closed itself on a later loop: "Task exception was never retrieved"."""
    adapter = (
        OpenAIAdapter("m", base_url=f"{loopback}/v1", retries=0)
        if provider == "openai"
        else AnthropicAdapter("claude-test", base_url=loopback, api_key="k", retries=0)
    )
    prompt = _plain_prompt()

    with caplog.at_level(logging.DEBUG, logger="asyncio"):
        texts = {evaluate(prompt, adapter=adapter, session=Session()).text for _ in range(calls)}
        gc.collect()

    assert texts == {ANSWER_TURN.text}
    out, err = capfd.readouterr()
    assert "Event loop is closed" not in out + err and "never retrieved" not in out + err
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert adapter.async_client.is_closed()  # the last loop closed the client it was given
