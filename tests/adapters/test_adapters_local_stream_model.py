"""LocalAdapter.stream on the real SmolLM2-135M-Instruct model (llama.cpp in process)."""

from __future__ import annotations

import asyncio
import json

import jsonschema
import pytest

from adapters_support import FIRST_PROMPT, TOOLS, get_weather, make_request
from stream_support import collect, final_turn, of_type
from weakprompt.adapters.local import LocalAdapter
from weakprompt.messages import AssistantTurn, Message
from weakprompt.model import ForceTool, TextDelta, ToolCallDelta, assemble, complete_async

pytestmark = pytest.mark.real_model


@pytest.fixture(scope="module")
def adapter() -> LocalAdapter:
    return LocalAdapter(n_ctx=2048, progress=False)


def test_text_streams_token_by_token(adapter: LocalAdapter) -> None:
    request = make_request(FIRST_PROMPT, max_output_tokens=32)

    adapter.complete(request)  # leave the model's cache in the state the streamed call will see again
    events = collect(adapter, request)
    whole = adapter.complete(request)

    texts = of_type(events, TextDelta)
    turn = final_turn(events)
    assert len(texts) > 1
    assert "".join(t.text for t in texts) == turn.text and turn.text.strip()
    assert assemble(events) == turn
    assert turn == whole  # same text, finish reason and token counts as the whole reply
    assert turn.usage.input_tokens > 0 and turn.usage.output_tokens == len(texts)


def test_a_forced_tool_call_streams_grammar_constrained_arguments(adapter: LocalAdapter) -> None:
    request = make_request(
        FIRST_PROMPT, tools=TOOLS, tool_choice=ForceTool("get_weather"), max_output_tokens=48
    )

    events = collect(adapter, request)

    (call,) = final_turn(events).tool_calls
    assert isinstance(call.arguments, str)
    assert len(of_type(events, ToolCallDelta)) > 1
    jsonschema.validate(json.loads(call.arguments), get_weather.parameters_schema())
    assert final_turn(events) == adapter.complete(request)


def test_sessions_sharing_the_model_stream_at_the_same_time(adapter: LocalAdapter) -> None:
    other = LocalAdapter(n_ctx=2048, progress=False)
    assert other.loaded_model is adapter.loaded_model
    requests = [
        make_request(
            [Message(role="user", content=f"What is the weather in {city}?")],
            tools=TOOLS,
            tool_choice=ForceTool("get_weather"),
            max_output_tokens=48,
        )
        for city in ("Paris", "Rome", "Oslo")
    ]
    one_by_one = [adapter.complete(request) for request in requests]

    async def together() -> list[AssistantTurn]:
        pairs = zip((adapter, other, adapter), requests, strict=True)
        return list(await asyncio.gather(*(complete_async(a, r) for a, r in pairs)))

    turns = asyncio.run(together())

    assert turns == one_by_one  # no session saw another's tokens
    for turn in turns:
        (call,) = turn.tool_calls
        jsonschema.validate(json.loads(str(call.arguments)), get_weather.parameters_schema())
