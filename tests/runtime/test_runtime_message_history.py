"""Explicit message history: a stateless run given prior messages hands back new ones (issue 30 item 5)."""

from __future__ import annotations

import asyncio
import json

import anthropic
import openai
import pytest

from loop_support import arithmetic_prompt
from stream_support import StreamServer, anthropic_stream_events, openai_stream_chunks, sse_data, sse_events
from weakprompt.adapters.anthropic import AnthropicAdapter
from weakprompt.adapters.openai import OpenAIAdapter
from weakprompt.adapters.testing import ScriptedAdapter, text_turn, tool_call, tool_call_turn
from weakprompt.errors import ConfigurationError
from weakprompt.messages import Message
from weakprompt.model import ProviderAdapter
from weakprompt.runtime.history import HISTORY_KEY
from weakprompt.runtime.loop import evaluate, run
from weakprompt.session import Session
from weakprompt.store import Store
from weakprompt.transcript import Transcript


def test_a_second_run_given_the_first_runs_messages_continues_the_conversation_without_a_store() -> None:
    first = evaluate(
        arithmetic_prompt(),
        adapter=ScriptedAdapter([tool_call_turn(tool_call("add", {"a": 2, "b": 3})), "It is 5."]),
        session=Session(),
        input="What is 2 + 3?",
    )
    assert [m.role for m in first.messages] == ["user", "assistant", "tool", "assistant"]
    assert first.new_messages == first.messages
    assert first.messages[0].content == "What is 2 + 3?" and first.messages[-1].content == "It is 5."

    adapter = ScriptedAdapter(["You asked about 2 + 3."])
    second = evaluate(
        arithmetic_prompt(),
        adapter=adapter,
        session=Session(),  # a new session: nothing stored anywhere connects the two runs
        input="What did I ask?",
        message_history=first.messages,
    )
    seen = adapter.requests[0].context.messages
    assert [m.role for m in seen] == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert [m.content for m in seen[1:-1]] == [m.content for m in first.messages]
    assert seen[3].tool_call_id == first.messages[2].tool_call_id
    assert [(m.role, m.content) for m in second.new_messages] == [
        ("user", "What did I ask?"),
        ("assistant", "You asked about 2 + 3."),
    ]
    assert second.messages[: len(first.messages)] == first.messages
    assert len(second.messages) == len(first.messages) + 2


def test_history_with_a_session_that_holds_a_stored_conversation_is_refused() -> None:
    store = Store.open("sqlite://")
    session = Session(session_id="user-42")
    evaluate(
        arithmetic_prompt(), adapter=ScriptedAdapter(["hi"]), session=session, store=store, input="hello"
    )
    history = (Message("user", "earlier"), Message("assistant", "reply"))
    with pytest.raises(ConfigurationError, match=r"already holds a stored conversation.*not both"):
        evaluate(
            arithmetic_prompt(),
            adapter=ScriptedAdapter(["unused"]),
            session=Session(session_id="user-42"),
            store=store,
            input="again",
            message_history=history,
        )
    assert len(Transcript(store, "user-42").log()) == 3  # nothing written by the refused run


def test_history_into_a_new_session_of_a_store_is_stored_and_marked() -> None:
    store = Store.open("sqlite://")
    history = (
        Message("user", "earlier"),
        Message("assistant", "reply", metadata={"usage": {"input_tokens": 9}}),
    )
    response = evaluate(
        arithmetic_prompt(),
        adapter=ScriptedAdapter(["ok"]),
        session=Session(session_id="fresh"),
        store=store,
        input="now",
        message_history=history,
    )
    log = Transcript(store, "fresh").log()
    assert [c.role for c in log] == ["system", "user", "assistant", "user", "assistant"]
    assert [c.metadata for c in log[1:3]] == [{HISTORY_KEY: True}, {HISTORY_KEY: True}]  # not its usage
    assert [m.content for m in response.new_messages] == ["now", "ok"]


def test_a_fixed_session_id_continues_the_stored_conversation() -> None:
    store = Store.open("sqlite://")
    evaluate(
        arithmetic_prompt(), adapter=ScriptedAdapter(["first"]), session=Session(session_id="s"), store=store
    )
    adapter = ScriptedAdapter(["second"])
    response = evaluate(
        arithmetic_prompt(), adapter=adapter, session=Session(session_id="s"), store=store, input="more"
    )
    assert [m.content for m in adapter.requests[0].context.messages[1:]] == ["first", "more"]
    assert [m.content for m in response.messages] == ["first", "more", "second"]
    assert [m.content for m in response.new_messages] == ["more", "second"]


@pytest.mark.parametrize(
    ("history", "message"),
    [
        ("hello", r"sequence of weakprompt.messages.Message, got str"),
        ([Message("user", "a"), {"role": "user"}], r"message_history\[1\] is a dict"),
        ([Message("system", "s")], r"message_history\[0\] is a system message"),
    ],
)
def test_bad_history_is_refused_naming_the_item(history: object, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        evaluate(
            arithmetic_prompt(),
            adapter=ScriptedAdapter(["x"]),
            session=Session(),
            message_history=history,  # type: ignore[arg-type]
        )


def test_an_empty_history_is_a_fresh_conversation_and_run_takes_it_too() -> None:
    async def main() -> None:
        response = await run(
            arithmetic_prompt(),
            adapter=ScriptedAdapter(["hi"]),
            session=Session(),
            input="a",
            message_history=[],
        )
        assert (
            [m.content for m in response.new_messages]
            == ["a", "hi"]
            == [m.content for m in response.messages]
        )

    asyncio.run(main())


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_history_with_tool_calls_reaches_the_providers_wire_through_the_official_sdks(
    provider: str,
) -> None:
    first = evaluate(
        arithmetic_prompt(),
        adapter=ScriptedAdapter(
            [tool_call_turn(tool_call("add", {"a": 2, "b": 3}, id="call_1")), "It is 5."]
        ),
        session=Session(),
        input="What is 2 + 3?",
    )
    server = StreamServer()
    if provider == "openai":
        server.stream(sse_data(*openai_stream_chunks(text_turn("Still 5.")), "[DONE]"))
        client = openai.OpenAI(
            api_key="sk-test", base_url="http://fake.test/v1", http_client=server.sync_client()
        )
        adapter: ProviderAdapter = OpenAIAdapter("gpt-test", client=client)
    else:
        server.stream(sse_events(*anthropic_stream_events(text_turn("Still 5."))))
        anthropic_client = anthropic.Anthropic(
            api_key="k", base_url="http://fake.test", http_client=server.sync_client()
        )
        adapter = AnthropicAdapter("claude-test", client=anthropic_client)
    second = evaluate(
        arithmetic_prompt(), adapter=adapter, session=Session(), input="Sure?", message_history=first.messages
    )
    assert second.text == "Still 5."
    wire = json.dumps(server.bodies()[0])
    assert "call_1" in wire and "What is 2 + 3?" in wire and "It is 5." in wire and "Sure?" in wire
    assert [m.content for m in second.new_messages] == ["Sure?", "Still 5."]
