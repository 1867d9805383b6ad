"""Valid by construction: any generated transcript compiles, for every adapter, into a request that passes
its provider's rules and the official SDK's request types.

The transcripts mix user text and images, assistant turns with text, parallel tool calls and reasoning
parts from several issuers (Anthropic thinking and redacted thinking, OpenAI encrypted reasoning, Gemini
signatures), tool results in any order and errors. Each is built for Chat Completions, Responses,
Anthropic (thinking off and on) and Gemini, each with foreign reasoning dropped and sent as text (what a
FallbackAdapter switching between them sends). ``WEAKPROMPT_RULES_EXAMPLES`` raises the count (the issue's
10,000 runs in a few minutes).
"""

from __future__ import annotations

import base64
import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adapters_support import TOOLS, make_request
from request_rules_support import check_sdk_shapes, sdk_adapters
from weakprompt.messages import Message, ToolCall
from weakprompt.parts import ImagePart, Part, ReasoningPart, TextPart

EXAMPLES = int(os.environ.get("WEAKPROMPT_RULES_EXAMPLES", "150"))

PNG = ImagePart(media_type="image/png", data=b"\x89PNG\r\n\x1a\n")

ADAPTERS = sdk_adapters()

_words = st.text(alphabet="abc xyz\n\"'<>é", min_size=1, max_size=12)
_opaque = st.text(alphabet="ABCdef0123+/=", min_size=1, max_size=12)


@st.composite
def _reasoning(draw: st.DrawFn, call_ids: list[str]) -> ReasoningPart:
    kind = draw(st.sampled_from(["thinking", "redacted", "openai", "gemini"]))
    if kind == "thinking":
        return ReasoningPart(draw(_words), issuer="anthropic:claude-test", signature=draw(_opaque))
    if kind == "redacted":
        return ReasoningPart(issuer="anthropic:claude-test", encrypted=draw(_opaque), redacted=True)
    if kind == "openai":
        summary = draw(st.just("") | _words)
        return ReasoningPart(
            summary, issuer="openai:o4-test", encrypted=draw(_opaque), id=f"rs_{draw(_opaque)}"
        )
    signature = base64.b64encode(draw(_opaque).encode()).decode()
    owner = draw(st.none() | st.sampled_from(call_ids)) if call_ids else None
    return ReasoningPart(
        draw(st.just("") | _words), issuer="gemini:gemini-test", signature=signature, id=owner
    )


@st.composite
def _user(draw: st.DrawFn) -> Message:
    content: list[str | Part] = [draw(_words)]
    if draw(st.booleans()):
        content.append(PNG)
    return Message.of("user", content)


@st.composite
def transcripts(draw: st.DrawFn) -> list[Message]:
    messages = [Message("system", "Be brief."), draw(_user())]
    counter = 0
    for _ in range(draw(st.integers(1, 5))):
        calls: list[ToolCall] = []
        for _ in range(draw(st.integers(0, 3))):  # parallel calls
            counter += 1
            calls.append(ToolCall(f"call_{counter}", "get_weather", '{"city":"Paris"}'))
        ids = [call.id for call in calls]
        reasoning = draw(st.lists(_reasoning(ids), max_size=3))
        text = draw(_words) if not calls or draw(st.booleans()) else ""
        messages.append(
            Message.of("assistant", [*reasoning, text] if text else reasoning, tool_calls=tuple(calls))
        )
        if calls:
            for call in draw(st.permutations(calls)):
                failed = draw(st.booleans())
                messages.append(
                    Message("tool", "18 C", tool_call_id=call.id, name=call.name, is_error=failed)
                )
            if draw(st.booleans()):
                messages.append(draw(_user()))
        else:
            messages.append(draw(_user()))
    return messages


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(transcripts())
def test_every_generated_transcript_compiles_to_valid_requests_for_every_adapter(
    messages: list[Message],
) -> None:
    request = make_request(messages, tools=TOOLS)
    for adapter in ADAPTERS:
        check_sdk_shapes(adapter, request)


def test_the_generated_transcripts_cover_reasoning_images_and_parallel_calls() -> None:
    """The generator is not vacuous: it makes what the property is about."""
    seen: set[str] = set()

    @settings(max_examples=60, deadline=None)
    @given(transcripts())
    def look(messages: list[Message]) -> None:
        for message in messages:
            for part in message.parts:
                seen.add(part.kind if not isinstance(part, ReasoningPart) else part.issuer.split(":")[0])
            if len(message.tool_calls) > 1:
                seen.add("parallel")
        assert all(isinstance(p, TextPart | ImagePart | ReasoningPart) for m in messages for p in m.parts)

    look()
    assert {"image", "anthropic", "openai", "gemini", "parallel"} <= seen
