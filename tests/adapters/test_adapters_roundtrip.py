"""Property: any well-formed neutral conversation survives each adapter's wire format.

Requests go neutral -> wire (adapter.build_params, messages from the
transcript conversions) -> decoded back; replies go wire -> neutral turn.
Both must give back what went in.
"""

from __future__ import annotations

import json
from typing import Any

import anthropic
import openai
from anthropic.types import Message as AnthropicMessage
from hypothesis import given
from hypothesis import strategies as st
from openai.types.chat import ChatCompletion

from adapters_support import (
    TOOLS,
    anthropic_message_body,
    decode_anthropic_request,
    decode_openai_messages,
    make_request,
    normalized,
    normalized_turn,
    openai_completion_body,
)
from weakprompt.adapters.anthropic import AnthropicAdapter, turn_from_message
from weakprompt.adapters.local import LocalAdapter, turn_from_llama_reply
from weakprompt.adapters.openai import OpenAIAdapter, turn_from_chat_completion
from weakprompt.messages import AssistantTurn, Message, ToolCall, Usage

OPENAI = OpenAIAdapter("m", client=openai.OpenAI(api_key="k"))
ANTHROPIC = AnthropicAdapter("m", client=anthropic.Anthropic(api_key="k"))

texts = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=30).filter(
    lambda t: t.strip() == t and t != ""
)
json_scalars = st.one_of(st.none(), st.booleans(), st.integers(-1000, 1000), texts)
arguments = st.dictionaries(st.sampled_from(["city", "query", "limit", "unit"]), json_scalars, max_size=3)
tool_names = st.sampled_from([tool.name for tool in TOOLS])


@st.composite
def tool_rounds(draw: st.DrawFn, index: int) -> list[Message]:
    count = draw(st.integers(1, 3))
    calls = tuple(
        ToolCall(id=f"call_{index}_{n}", name=draw(tool_names), arguments=json.dumps(draw(arguments)))
        for n in range(count)
    )
    preface = draw(st.one_of(st.just(""), texts))
    results = [
        Message(
            role="tool",
            content=draw(texts),
            tool_call_id=call.id,
            name=call.name,
            is_error=draw(st.booleans()),
        )
        for call in calls
    ]
    return [Message(role="assistant", content=preface, tool_calls=calls), *results]


@st.composite
def conversations(draw: st.DrawFn) -> list[Message]:
    messages = [Message(role="system", content=draw(texts)), Message(role="user", content=draw(texts))]
    for index in range(draw(st.integers(0, 3))):
        messages.extend(draw(tool_rounds(index)))
    if draw(st.booleans()):
        messages.append(Message(role="assistant", content=draw(texts)))
        messages.append(Message(role="user", content=draw(texts)))
    return messages


@st.composite
def turns(draw: st.DrawFn) -> AssistantTurn:
    calls = tuple(
        ToolCall(id=f"toolu_{n}", name=draw(tool_names), arguments=json.dumps(draw(arguments)))
        for n in range(draw(st.integers(0, 3)))
    )
    text = draw(st.one_of(st.just(""), texts)) if calls else draw(texts)
    input_tokens = draw(st.integers(0, 10_000))
    usage = Usage(
        input_tokens=input_tokens,
        output_tokens=draw(st.integers(0, 4_000)),
        cached_input_tokens=draw(st.integers(0, input_tokens)),
        model_calls=1,
    )
    finish = "tool_calls" if calls else draw(st.sampled_from(["stop", "length", "content_filter"]))
    return AssistantTurn(text=text, tool_calls=calls, usage=usage, finish_reason=finish)


@given(conversations())
def test_openai_request_messages_decode_to_the_conversation(conversation: list[Message]) -> None:
    params: Any = OPENAI.build_params(make_request(conversation, tools=TOOLS))
    decoded = decode_openai_messages(params["messages"])
    assert normalized(decoded, keep_errors=False) == normalized(conversation, keep_errors=False)


@given(conversations())
def test_anthropic_request_messages_decode_to_the_conversation(conversation: list[Message]) -> None:
    params: Any = ANTHROPIC.build_params(make_request(conversation, tools=TOOLS))
    assert normalized(decode_anthropic_request(params)) == normalized(conversation)


@given(conversations())
def test_local_request_messages_decode_to_the_conversation(conversation: list[Message]) -> None:
    adapter = LocalAdapter(llama=_NoModel(), template_handles_tools=True)
    params: Any = adapter.build_params(make_request(conversation, tools=TOOLS))
    decoded = decode_openai_messages(params["messages"])
    assert normalized(decoded, keep_errors=False) == normalized(conversation, keep_errors=False)


@given(turns())
def test_openai_reply_decodes_to_the_turn(turn: AssistantTurn) -> None:
    completion = ChatCompletion.model_validate(openai_completion_body(turn))
    assert normalized_turn(turn_from_chat_completion(completion)) == normalized_turn(turn)


@given(turns())
def test_anthropic_reply_decodes_to_the_turn(turn: AssistantTurn) -> None:
    message = AnthropicMessage.model_validate(anthropic_message_body(turn))
    assert normalized_turn(turn_from_message(message)) == normalized_turn(turn)


@given(turns())
def test_local_reply_decodes_to_the_turn_but_for_call_ids(turn: AssistantTurn) -> None:
    back = turn_from_llama_reply(openai_completion_body(turn))
    expected = normalized_turn(turn)
    assert (back.text, back.finish_reason) == (expected[0], expected[3])
    assert [(c.name, json.loads(c.arguments)) for c in back.tool_calls] == [  # type: ignore[arg-type]
        (name, args) for _, name, args in expected[1]
    ]
    assert (back.usage.input_tokens, back.usage.output_tokens) == (
        turn.usage.input_tokens,
        turn.usage.output_tokens,
    )


class _NoModel:
    """Enough of a Llama for building requests; it never generates."""

    metadata: dict[str, str] = {}

    def n_ctx(self) -> int:
        return 4096

    def tokenize(self, text: bytes, add_bos: bool = True, special: bool = False) -> list[int]:
        return list(text)
