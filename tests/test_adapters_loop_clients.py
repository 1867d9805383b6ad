"""Async clients an adapter built are rebuilt for each event loop; given ones are kept."""

from __future__ import annotations

import asyncio

import openai

from weakprompt.adapters._support import LoopBoundClient
from weakprompt.adapters.openai import OpenAIAdapter


def test_a_built_client_is_rebuilt_for_a_new_event_loop_and_kept_within_one() -> None:
    built: list[object] = []

    def rebuild() -> object:
        built.append(object())
        return built[-1]

    clients = LoopBoundClient(object(), rebuild)

    async def twice() -> tuple[object, object]:
        return clients.for_running_loop(), clients.for_running_loop()

    first_a, first_b = asyncio.run(twice())
    second_a, second_b = asyncio.run(twice())

    assert first_a is first_b and second_a is second_b
    assert first_a is not second_a and built == [second_a]
    assert clients.current is second_a


def test_a_given_client_is_never_replaced() -> None:
    given = object()
    clients = LoopBoundClient(given, None)

    async def get() -> object:
        return clients.for_running_loop()

    assert asyncio.run(get()) is given and asyncio.run(get()) is given


def test_the_openai_adapter_rebuilds_only_what_it_built() -> None:
    own = OpenAIAdapter("m", api_key="k", base_url="http://compatible.test/v1")
    given = OpenAIAdapter("m", async_client=openai.AsyncOpenAI(api_key="k"))

    async def current(adapter: OpenAIAdapter) -> object:
        return adapter._async_clients.for_running_loop()

    own_first, own_second = asyncio.run(current(own)), asyncio.run(current(own))
    assert own_first is not own_second
    assert isinstance(own_second, openai.AsyncOpenAI) and own_second.max_retries == 0
    assert str(own_second.base_url).startswith("http://compatible.test/v1")
    assert asyncio.run(current(given)) is asyncio.run(current(given))
