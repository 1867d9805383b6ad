"""Per-provider request rules: a request that breaks one is refused by index and rule, and never sent."""

from __future__ import annotations

from typing import Any

import anthropic
import openai
import pytest
from google import genai
from google.genai import types

from adapters_support import TOOLS, USER, FakeServer, make_request
from weakprompt.adapters import AnthropicAdapter, GeminiAdapter, OpenAIAdapter, OpenAIResponsesAdapter
from weakprompt.adapters.request_rules import (
    check_anthropic_messages,
    check_chat_messages,
    check_gemini_contents,
    check_responses_input,
)
from weakprompt.errors import AdapterError, InvalidRequestError
from weakprompt.messages import Message, ToolCall
from weakprompt.model import ModelSettings
from weakprompt.parts import ReasoningPart

CALL = ToolCall("c1", "get_weather", '{"city":"Paris"}')
ORPHAN_RESULT = [USER, Message("tool", "18 C", tool_call_id="nope", name="get_weather")]
UNANSWERED = [USER, Message("assistant", "", tool_calls=(CALL,)), Message("user", "and?")]


def _rule(error: pytest.ExceptionInfo[InvalidRequestError]) -> tuple[int | None, str]:
    return error.value.index, error.value.rule


# ---------------------------------------------------------------- every adapter refuses before sending


def _adapters(server: FakeServer) -> list[Any]:
    gemini = types.HttpOptions(base_url="https://gemini.test", httpx_client=server.client())
    return [
        AnthropicAdapter(
            "claude-test",
            client=anthropic.Anthropic(api_key="k", base_url="http://f.test", http_client=server.client()),
        ),
        OpenAIAdapter(
            "gpt-test",
            client=openai.OpenAI(api_key="k", base_url="http://f.test", http_client=server.client()),
        ),
        OpenAIResponsesAdapter(
            "gpt-test",
            client=openai.OpenAI(api_key="k", base_url="http://f.test", http_client=server.client()),
        ),
        GeminiAdapter("gemini-test", client=genai.Client(api_key="k", http_options=gemini)),
    ]


@pytest.mark.parametrize(
    "conversation", [ORPHAN_RESULT, UNANSWERED], ids=["result-without-call", "call-without-result"]
)
def test_every_adapter_refuses_a_broken_pairing_by_index_and_rule_and_sends_nothing(
    conversation: list[Message],
) -> None:
    server = FakeServer()
    for adapter in _adapters(server):
        with pytest.raises(
            InvalidRequestError, match=r"invalid request at message \d+ \(tool-pairing\)"
        ) as raised:
            adapter.complete(make_request(conversation, tools=TOOLS))
        assert isinstance(raised.value, AdapterError) and raised.value.rule == "tool-pairing"
    assert server.requests == []


def test_the_error_is_not_retried_nor_a_reason_to_fall_back() -> None:
    from weakprompt.adapters.fallback import default_fall_back_on
    from weakprompt.adapters.retries import is_transient

    error = InvalidRequestError("x", provider="p", index=1, rule="roles")
    assert not is_transient(error) and not default_fall_back_on(error)


# ---------------------------------------------------------------- Anthropic


def _tool_use(call_id: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": "f", "input": {}}


def _result(call_id: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": call_id, "content": "ok"}


THINK = {"type": "thinking", "thinking": "t", "signature": "s"}


@pytest.mark.parametrize(
    ("messages", "thinking", "where"),
    [
        ([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}], False, (1, "roles")),
        ([{"role": "system", "content": "a"}], False, (0, "roles")),
        (
            [
                {"role": "user", "content": "a"},
                {"role": "assistant", "content": [_tool_use("t1")]},
                {"role": "user", "content": [{"type": "text", "text": "x"}, _result("t1")]},
            ],
            False,
            (2, "tool-result-first"),
        ),
        (
            [
                {"role": "user", "content": "a"},
                {"role": "assistant", "content": [_tool_use("t1"), _tool_use("t1")]},
                {"role": "user", "content": [_result("t1")]},
            ],
            False,
            (1, "tool-pairing"),
        ),
        (
            [
                {"role": "user", "content": "a"},
                {"role": "assistant", "content": [_tool_use("t1")]},
                {"role": "user", "content": [_result("t1"), _result("t1")]},
            ],
            False,
            (2, "tool-pairing"),
        ),
        (
            [{"role": "user", "content": "a"}, {"role": "assistant", "content": [_tool_use("t1")]}],
            False,
            (1, "tool-pairing"),
        ),
        (
            [
                {"role": "user", "content": "a"},
                {"role": "assistant", "content": [{"type": "text", "text": "x"}, _tool_use("t1")]},
                {"role": "user", "content": [_result("t1")]},
            ],
            True,
            (1, "thinking-first"),
        ),
    ],
)
def test_anthropic_rules(messages: list[dict[str, Any]], thinking: bool, where: tuple[int, str]) -> None:
    with pytest.raises(InvalidRequestError) as raised:
        check_anthropic_messages(messages, thinking=thinking)
    assert _rule(raised) == where


def test_anthropic_accepts_a_thinking_tool_turn() -> None:
    check_anthropic_messages(
        [
            {"role": "user", "content": "a"},
            {"role": "assistant", "content": [THINK, _tool_use("t1")]},
            {"role": "user", "content": [_result("t1")]},
        ],
        thinking=True,
    )


def test_anthropic_thinking_stays_off_for_a_tool_turn_begun_without_it() -> None:
    """A tool-use turn another provider began has no thinking block: the request turns thinking off."""
    server = FakeServer().reply(
        200,
        {
            "id": "m",
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "content": [{"type": "text", "text": "ok"}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1},
        },
    )
    client = anthropic.Anthropic(api_key="k", base_url="http://f.test", http_client=server.client())
    adapter = AnthropicAdapter("claude-test", client=client, settings=ModelSettings(thinking_budget=2048))
    foreign = Message.of(
        "assistant", [ReasoningPart("x", issuer="openai:o4", encrypted="e", id="rs")], tool_calls=(CALL,)
    )
    result = Message("tool", "18 C", tool_call_id="c1", name="get_weather")
    adapter.complete(make_request([USER, foreign, result], tools=TOOLS))
    assert "thinking" not in server.bodies()[0]
    assert server.bodies()[0]["max_tokens"] == 1024


# ---------------------------------------------------------------- Chat Completions


def _chat_call(*ids: str) -> dict[str, Any]:
    calls = [{"id": i, "type": "function", "function": {"name": "f", "arguments": "{}"}} for i in ids]
    return {"role": "assistant", "content": "", "tool_calls": calls}


@pytest.mark.parametrize(
    ("messages", "where"),
    [
        (
            [{"role": "user", "content": "a"}, {"role": "tool", "tool_call_id": "x", "content": "r"}],
            (1, "tool-pairing"),
        ),
        ([_chat_call("a"), {"role": "user", "content": "b"}], (1, "tool-pairing")),
        ([_chat_call("a", "a")], (0, "tool-pairing")),
        ([_chat_call("a")], (0, "tool-pairing")),
    ],
)
def test_chat_rules(messages: list[dict[str, Any]], where: tuple[int, str]) -> None:
    with pytest.raises(InvalidRequestError) as raised:
        check_chat_messages(messages)
    assert _rule(raised) == where


# ---------------------------------------------------------------- Responses


def _fc(call_id: str) -> dict[str, Any]:
    return {"type": "function_call", "call_id": call_id, "name": "f", "arguments": "{}"}


def _out(call_id: str) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": "r"}


REASONING_ITEM = {"type": "reasoning", "id": "rs", "summary": []}


@pytest.mark.parametrize(
    ("items", "where"),
    [
        ([_out("a")], (0, "tool-pairing")),
        ([_fc("a"), _fc("a")], (1, "tool-pairing")),
        ([_fc("a")], (0, "tool-pairing")),
        ([REASONING_ITEM, {"type": "message", "role": "user", "content": "x"}], (0, "reasoning-follows")),
        ([_fc("a"), _out("a"), REASONING_ITEM], (2, "reasoning-follows")),
    ],
)
def test_responses_rules(items: list[dict[str, Any]], where: tuple[int, str]) -> None:
    with pytest.raises(InvalidRequestError) as raised:
        check_responses_input(items)
    assert _rule(raised) == where


def test_responses_accepts_reasoning_before_its_call_and_its_message() -> None:
    check_responses_input(
        [
            REASONING_ITEM,
            REASONING_ITEM,
            _fc("a"),
            _out("a"),
            REASONING_ITEM,
            {"type": "message", "role": "assistant", "content": "ok"},
        ]
    )


# ---------------------------------------------------------------- Gemini


def _content(role: str, *parts: types.Part) -> types.Content:
    return types.Content(role=role, parts=list(parts))


CALLED = types.Part(function_call=types.FunctionCall(id="g1", name="f", args={}))
NAMED_CALL = types.Part(function_call=types.FunctionCall(name="f", args={}))
ANSWER = types.Part(function_response=types.FunctionResponse(id="g1", name="f", response={"output": "r"}))
NAMED_ANSWER = types.Part(function_response=types.FunctionResponse(name="f", response={"output": "r"}))
TEXT = types.Part(text="hi")


@pytest.mark.parametrize(
    ("contents", "where"),
    [
        ([_content("user", TEXT), _content("user", TEXT)], (1, "roles")),
        ([_content("system", TEXT)], (0, "roles")),
        ([_content("user", TEXT), _content("model", CALLED)], (1, "tool-pairing")),
        ([_content("user", TEXT), _content("model", CALLED), _content("user", TEXT)], (2, "tool-pairing")),
        ([_content("user", ANSWER)], (0, "tool-pairing")),
        (
            [_content("user", TEXT), _content("model", CALLED), _content("user", ANSWER, ANSWER)],
            (2, "tool-pairing"),
        ),
    ],
)
def test_gemini_rules(contents: list[types.Content], where: tuple[int, str]) -> None:
    with pytest.raises(InvalidRequestError) as raised:
        check_gemini_contents(contents)
    assert _rule(raised) == where


def test_gemini_pairs_calls_without_ids_by_name() -> None:
    check_gemini_contents(
        [_content("user", TEXT), _content("model", NAMED_CALL), _content("user", NAMED_ANSWER, TEXT)]
    )
