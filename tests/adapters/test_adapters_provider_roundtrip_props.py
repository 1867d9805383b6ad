"""Property: any well-formed neutral conversation survives the Responses and Gemini wire formats.

Requests go neutral -> wire (``build_params`` / ``build_request``) -> the SDK's own request
types -> decoded back; replies go wire (the SDK's response models) -> neutral turn. Both
must give back what went in, and the wire must keep each provider's pairing rule (every
function result follows the call it answers).
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import openai
from google import genai
from google.genai import types
from hypothesis import given
from hypothesis import strategies as st
from openai.types.responses import Response
from openai.types.responses.response_create_params import ResponseCreateParamsNonStreaming
from pydantic import TypeAdapter

from adapters_support import TOOLS, make_request, normalized, normalized_turn
from weakprompt.adapters.gemini import GeminiAdapter
from weakprompt.adapters.gemini import turn_from_response as turn_from_gemini
from weakprompt.adapters.openai_responses import OpenAIResponsesAdapter, turn_from_response
from weakprompt.messages import AssistantTurn, Message, ToolCall, Usage

RESPONSES = OpenAIResponsesAdapter("m", client=openai.OpenAI(api_key="k"))
GEMINI = GeminiAdapter("m", client=genai.Client(api_key="k"))
PARAMS = TypeAdapter(ResponseCreateParamsNonStreaming)

texts = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=30).filter(
    lambda t: t.strip() == t and t != ""
)
json_scalars = st.one_of(st.none(), st.booleans(), st.integers(-1000, 1000), texts)
arguments = st.dictionaries(st.sampled_from(["city", "query", "limit", "unit"]), json_scalars, max_size=3)
tool_names = st.sampled_from([tool.name for tool in TOOLS])


@st.composite
def tool_rounds(draw: st.DrawFn, index: int) -> list[Message]:
    calls = tuple(
        ToolCall(id=f"call_{index}_{n}", name=draw(tool_names), arguments=json.dumps(draw(arguments)))
        for n in range(draw(st.integers(1, 3)))
    )
    preface = draw(st.one_of(st.just(""), texts))
    results = [
        Message(
            role="tool", content=draw(texts), tool_call_id=c.id, name=c.name, is_error=draw(st.booleans())
        )
        for c in calls
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
        ToolCall(id=f"call_{n}", name=draw(tool_names), arguments=json.dumps(draw(arguments)))
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


# ---------------------------------------------------------------- Responses


def decode_responses_input(items: list[dict[str, Any]]) -> list[Message]:
    out: list[Message] = []
    names: dict[str, str] = {}
    for item in items:
        if item["type"] == "message":
            out.append(Message(role=item["role"], content=item["content"]))
        elif item["type"] == "function_call":
            call = ToolCall(id=item["call_id"], name=item["name"], arguments=item["arguments"])
            names[call.id] = call.name
            last = out[-1]
            if last.role == "assistant":  # the text item of the same message
                out[-1] = Message(role="assistant", content=last.content, tool_calls=(*last.tool_calls, call))
            else:
                out.append(Message(role="assistant", content="", tool_calls=(call,)))
        else:
            call_id = item["call_id"]
            out.append(
                Message(role="tool", content=item["output"], tool_call_id=call_id, name=names[call_id])
            )
    return out


@given(conversations())
def test_responses_input_is_valid_paired_and_decodes_to_the_conversation(conversation: list[Message]) -> None:
    params = RESPONSES.build_params(make_request(conversation, tools=TOOLS))
    PARAMS.validate_python(params)
    items: list[dict[str, Any]] = [dict(item) for item in params["input"]]  # type: ignore[arg-type]
    seen: set[str] = set()
    for item in items:  # every output follows the call it answers
        if item["type"] == "function_call":
            seen.add(item["call_id"])
        elif item["type"] == "function_call_output":
            assert item["call_id"] in seen
    decoded = decode_responses_input(items)
    assert normalized(decoded, keep_errors=False) == normalized(conversation, keep_errors=False)


def responses_reply(turn: AssistantTurn) -> dict[str, Any]:
    output: list[dict[str, Any]] = []
    if turn.text:
        content = (
            {"type": "refusal", "refusal": turn.text}
            if turn.finish_reason == "content_filter"
            else {"type": "output_text", "text": turn.text, "annotations": []}
        )
        output.append(
            {"id": "msg", "type": "message", "role": "assistant", "status": "completed", "content": [content]}
        )
    output += [
        {
            "id": f"fc{n}",
            "type": "function_call",
            "call_id": c.id,
            "name": c.name,
            "arguments": c.arguments,
            "status": "completed",
        }
        for n, c in enumerate(turn.tool_calls)
    ]
    status, reason = (
        ("incomplete", "max_output_tokens") if turn.finish_reason == "length" else ("completed", None)
    )
    usage = turn.usage
    return {
        "id": "resp",
        "object": "response",
        "created_at": 0,
        "model": "m",
        "status": status,
        "incomplete_details": {"reason": reason} if reason else None,
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": usage.input_tokens,
            "input_tokens_details": {"cached_tokens": usage.cached_input_tokens, "cache_write_tokens": 0},
            "output_tokens": usage.output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": usage.input_tokens + usage.output_tokens,
        },
    }


@given(turns())
def test_a_responses_reply_decodes_to_the_turn(turn: AssistantTurn) -> None:
    back = turn_from_response(Response.model_validate(responses_reply(turn)))
    assert normalized_turn(back) == normalized_turn(turn)


# ---------------------------------------------------------------- Gemini


def decode_gemini(system: str, contents: list[types.Content]) -> list[Message]:
    out = [Message(role="system", content=system)]
    for content in contents:
        parts = content.parts or []
        if content.role == "model":
            text = "".join(p.text for p in parts if p.text)
            calls = tuple(
                ToolCall(
                    id=p.function_call.id or "",
                    name=p.function_call.name or "",
                    arguments=dict(p.function_call.args or {}),
                )
                for p in parts
                if p.function_call is not None
            )
            out.append(Message(role="assistant", content=text, tool_calls=calls))
            continue
        for part in parts:
            answer = part.function_response
            if answer is None:
                out.append(Message(role="user", content=part.text or ""))
                continue
            response = answer.response or {}
            failed = "error" in response
            out.append(
                Message(
                    role="tool",
                    content=str(response["error" if failed else "output"]),
                    tool_call_id=answer.id,
                    name=answer.name,
                    is_error=failed,
                )
            )
    return out


@given(conversations())
def test_gemini_contents_alternate_pair_and_decode_to_the_conversation(conversation: list[Message]) -> None:
    contents, config = GEMINI.build_request(make_request(conversation, tools=TOOLS))
    wire = [
        types.Content.model_validate(c.model_dump(mode="json", by_alias=True, exclude_none=True))
        for c in contents
    ]
    roles = [c.role for c in wire]
    assert all(a != b for a, b in itertools.pairwise(roles))  # turns alternate
    for earlier, later in itertools.pairwise(wire):  # a model turn's calls are answered by the next turn
        calls = [p.function_call.id for p in earlier.parts or [] if p.function_call is not None]
        answers = [p.function_response.id for p in later.parts or [] if p.function_response is not None]
        if calls:
            assert answers == calls
    assert isinstance(config.system_instruction, str)
    assert normalized(decode_gemini(config.system_instruction, wire)) == normalized(conversation)


def gemini_reply(turn: AssistantTurn) -> dict[str, Any]:
    parts: list[dict[str, Any]] = [{"text": turn.text}] if turn.text else []
    parts += [
        {"functionCall": {"id": c.id, "name": c.name, "args": json.loads(c.arguments_json())}}
        for c in turn.tool_calls
    ]
    finish = {"length": "MAX_TOKENS", "content_filter": "SAFETY"}.get(turn.finish_reason, "STOP")
    usage = turn.usage
    return {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": finish, "index": 0}],
        "usageMetadata": {
            "promptTokenCount": usage.input_tokens,
            "candidatesTokenCount": usage.output_tokens,
            "cachedContentTokenCount": usage.cached_input_tokens,
        },
    }


@given(turns())
def test_a_gemini_reply_decodes_to_the_turn(turn: AssistantTurn) -> None:
    back = turn_from_gemini(types.GenerateContentResponse.model_validate(gemini_reply(turn)))
    assert normalized_turn(back) == normalized_turn(turn)
