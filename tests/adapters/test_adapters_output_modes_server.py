"""Output modes against a real OpenAI-compatible server: llama.cpp's ``llama_cpp.server`` with SmolLM2.

The server takes ``response_format`` of type ``text`` or ``json_object`` only
and answers a ``json_schema`` request with an error. ``json_object`` and
``prompted`` must work on it, and ``auto`` must fall back to ``json_object``
once and not ask for ``json_schema`` again. The tiny model may not fill the
schema correctly: then there is exactly one corrective turn and a clear
``OutputParseError``.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx2
import openai
import pytest

from llama_server import LlamaServer, llama_server  # noqa: F401 - pytest fixture
from test_adapters_output_modes import City, city_prompt
from weakprompt.adapters.openai import OpenAIAdapter
from weakprompt.errors import OutputParseError
from weakprompt.runtime.loop import evaluate, run
from weakprompt.runtime.response import PromptResponse
from weakprompt.session import Session

pytestmark = pytest.mark.real_model


class Recorded:
    """The request bodies the client sent."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []

    async def __call__(self, request: httpx2.Request) -> None:
        if request.method == "POST":
            self.bodies.append(json.loads(request.content))


def server_adapter(server: LlamaServer, recorded: Recorded, **options: Any) -> OpenAIAdapter:
    client = openai.AsyncOpenAI(
        api_key="not-needed",
        base_url=server.base_url,
        max_retries=0,
        timeout=120,
        http_client=httpx2.AsyncClient(event_hooks={"request": [recorded]}),
    )
    return OpenAIAdapter(
        server.model,
        async_client=client,
        strict_tools=False,
        temperature=0.0,
        seed=0,
        max_tokens_field="max_tokens",
        **options,
    )


async def run_city(adapter: OpenAIAdapter, mode: Any) -> PromptResponse[City] | OutputParseError:
    try:
        return await run(
            city_prompt(mode), adapter=adapter, session=Session(), output_retries=1, max_output_tokens=48
        )
    except OutputParseError as exc:
        return exc


def check_parsed_or_one_correction(outcome: PromptResponse[City] | OutputParseError, calls: int) -> None:
    if isinstance(outcome, OutputParseError):
        assert calls == 2  # the first answer and the corrective turn's
        assert "1 corrective turn" in "\n".join(getattr(outcome, "__notes__", []))
    else:
        assert isinstance(outcome.output, City)
        assert calls == outcome.turns in (1, 2)


@pytest.mark.parametrize("mode", ["json_object", "prompted"])
def test_mode_on_the_real_server(llama_server: LlamaServer, mode: str) -> None:  # noqa: F811
    recorded = Recorded()
    adapter = server_adapter(llama_server, recorded)

    outcome = asyncio.run(run_city(adapter, mode))

    check_parsed_or_one_correction(outcome, len(recorded.bodies))
    for body in recorded.bodies:
        assert body.get("response_format") == ({"type": "json_object"} if mode == "json_object" else None)
        assert "JSON Schema" in body["messages"][0]["content"]
    if mode == "json_object":  # the server's JSON grammar: the answer is JSON whatever it says
        assert recorded.bodies


def test_auto_falls_back_from_json_schema_once_on_the_real_server(llama_server: LlamaServer) -> None:  # noqa: F811
    recorded = Recorded()
    adapter = server_adapter(llama_server, recorded)

    async def twice() -> tuple[Any, list[str], Any, list[str]]:
        # one event loop for both runs: the async client's connections belong to it
        first = await run_city(adapter, "auto")
        first_formats = [body["response_format"]["type"] for body in recorded.bodies]
        recorded.bodies.clear()
        second = await run_city(adapter, "auto")
        return first, first_formats, second, [body["response_format"]["type"] for body in recorded.bodies]

    first, first_formats, second, second_formats = asyncio.run(twice())

    assert first_formats[:2] == ["json_schema", "json_object"]
    assert "json_schema" not in first_formats[2:] and "json_schema" not in second_formats
    assert adapter.output_modes.auto_mode == "json_object"
    check_parsed_or_one_correction(first, len(first_formats) - 1)
    check_parsed_or_one_correction(second, len(second_formats))


def test_two_evaluations_in_a_row_on_a_built_adapter(llama_server: LlamaServer) -> None:  # noqa: F811
    # each evaluate() runs its own event loop; the adapter's own async client is rebuilt for it
    adapter = OpenAIAdapter(
        llama_server.model,
        base_url=llama_server.base_url,
        strict_tools=False,
        temperature=0.0,
        max_tokens_field="max_tokens",
        retries=0,
    )
    for _ in range(2):
        try:
            evaluate(city_prompt("auto"), adapter=adapter, session=Session(), max_output_tokens=32)
        except OutputParseError:
            pass  # the tiny model's answer; the call itself worked
    assert adapter.output_modes.auto_mode == "json_object"
