"""Async clients an adapter built are rebuilt for each event loop and closed by it; given ones are kept."""

from __future__ import annotations

import asyncio
import logging

import openai
import pytest

from weakprompt.adapters._support import LoopBoundClient
from weakprompt.adapters.openai import OpenAIAdapter


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
