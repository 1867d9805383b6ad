"""Gemini's wire shapes: a neutral conversation as contents, and a reply (whole or streamed) as a turn.

Gemini wants the system text apart and the turns alternating between
``user`` and ``model``; a model turn's function calls carry back the thought
signatures Gemini gave them, which it requires for function calling with
thinking models. A reply's thoughts and signatures are its reasoning parts
(issuer ``gemini:<model>``): a thought's text (with the signature it may
carry), and each signed call's signature (``id`` the call's id). Only the
signatures go back, and only to Gemini; turns stored before the parts
existed keep their signatures in the metadata (``gemini.thought_signatures``),
which is still read.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, cast

from ...jsontypes import JSONValue
from ...messages import AssistantTurn, FinishReason, Message, Usage
from ...model import (
    ModelEvent,
    ReasoningDelta,
    ReplyAssembler,
    ReplyCompleted,
    TextDelta,
    ToolCallDelta,
    ToolCallStarted,
    UsageReported,
)
from .arguments import arguments_object
from .media import gemini_content_parts, gemini_media_parts, has_media
from .reasoning import ForeignReasoning, issuer_of, split_reasoning

if TYPE_CHECKING:
    from google.genai import types

__all__ = [
    "GENERATED_ID",
    "METADATA_KEY",
    "PROVIDER",
    "GeminiChunkReader",
    "gemini_contents",
    "turn_from_response",
]

_FINISH: dict[str, FinishReason] = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "BLOCKLIST": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "SPII": "content_filter",
    "IMAGE_SAFETY": "content_filter",
    "IMAGE_PROHIBITED_CONTENT": "content_filter",
    "MALFORMED_FUNCTION_CALL": "error",
}

METADATA_KEY = "gemini"
"""Turn-metadata key where turns stored before reasoning parts kept what Gemini needs back:
``{"thought_signatures": {call_id: base64}}`` (read, no longer written)."""

PROVIDER = "gemini"
"""The provider half of the issuer of the reasoning Gemini writes and takes back."""

GENERATED_ID = "gemini-call-"
"""Prefix of the ids given to calls Gemini sent without one (never sent back to Gemini)."""


def gemini_contents(
    messages: Sequence[Message], *, foreign_reasoning: ForeignReasoning = "drop"
) -> tuple[str, list[types.Content]]:
    """``(system_instruction, contents)``: system text joined, the rest as alternating turns.

    Consecutive messages of one side merge into one turn (a user message
    after tool results joins their turn). A tool result is matched to its
    call's name through the calls seen before it when it names none.
    """
    from google.genai import types

    system = [m.content for m in messages if m.role == "system" and m.content]
    names: dict[str, str] = {}
    contents: list[types.Content] = []
    for message in messages:
        if message.role == "system":
            continue
        role = "model" if message.role == "assistant" else "user"
        parts = _parts(message, names, foreign_reasoning)
        if not parts:
            continue
        last = contents[-1] if contents else None
        if last is not None and last.role == role and last.parts is not None:
            last.parts.extend(parts)
        else:
            contents.append(types.Content(role=role, parts=parts))
    return "\n\n".join(system), contents


def _parts(message: Message, names: dict[str, str], foreign: ForeignReasoning = "drop") -> list[types.Part]:
    from google.genai import types

    if message.role == "tool":
        call_id = message.tool_call_id or ""
        response: dict[str, object] = {"error" if message.is_error else "output": message.content}
        function_response = types.FunctionResponse(
            name=message.name or names.get(call_id, ""), response=response
        )
        if call_id and not call_id.startswith(GENERATED_ID):
            function_response.id = call_id
        # Images and documents of a result go in the same user turn, after its function response.
        return [types.Part(function_response=function_response), *gemini_media_parts(message)]
    if message.role == "user" and message.parts and has_media(message):
        return gemini_content_parts(message)
    parts: list[types.Part] = []
    split = split_reasoning(message, PROVIDER, foreign)
    if split.foreign_text:
        parts.append(types.Part(text=split.foreign_text))
    text = types.Part(text=message.content) if message.content else None
    if text is not None:
        parts.append(text)
    if message.role != "assistant":
        return parts
    signatures = {**_signatures(message.metadata), **reasoning_signatures(message, text)}
    for call in message.tool_calls:
        names[call.id] = call.name
        function_call = types.FunctionCall(name=call.name, args=dict[str, object](arguments_object(call)))
        if not call.id.startswith(GENERATED_ID):
            function_call.id = call.id
        part = types.Part(function_call=function_call)
        signature = signatures.get(call.id)
        if signature is not None:
            part.thought_signature = signature
        parts.append(part)
    return parts


def reasoning_signatures(message: Message, text: types.Part | None) -> dict[str, bytes]:
    """The signatures of a model turn's Gemini reasoning parts, by call id.

    A signature that belongs to no call (a signed thought or text) goes back
    on the turn's text part, when it has one (Gemini asks for it there, but
    does not insist); the thought text itself is not sent back.
    """
    by_call: dict[str, bytes] = {}
    for part in split_reasoning(message, PROVIDER).own:
        signature = _decoded(part.signature)
        if signature is None:
            continue
        if part.id is not None:
            by_call[part.id] = signature
        elif text is not None and text.thought_signature is None:
            text.thought_signature = signature
    return by_call


def _decoded(text: str | None) -> bytes | None:
    if text is None:
        return None
    with contextlib.suppress(binascii.Error, ValueError):
        return base64.b64decode(text, validate=True)
    return None


def _signatures(metadata: Mapping[str, JSONValue]) -> dict[str, bytes]:
    """The thought signatures a stored Gemini turn kept, by call id (unreadable entries skipped)."""
    kept = metadata.get(METADATA_KEY)
    by_call = kept.get("thought_signatures") if isinstance(kept, dict) else None
    signatures: dict[str, bytes] = {}
    for call_id, text in (by_call if isinstance(by_call, dict) else {}).items():
        signature = _decoded(text) if isinstance(text, str) else None
        if signature is not None:
            signatures[call_id] = signature
    return signatures


# ---------------------------------------------------------------- replies -> neutral


def turn_from_response(
    response: types.GenerateContentResponse, *, provider: str = "gemini", model: str = ""
) -> AssistantTurn:
    """Read a whole reply (its first candidate) as a neutral turn.

    Text parts are joined (thought summaries are reasoning parts, see
    :class:`GeminiChunkReader`); each
    ``function_call`` part is a call whose arguments are the object Gemini
    sent, under Gemini's id or a generated one. A prompt blocked before any
    candidate is an empty turn with finish reason ``content_filter``.
    """
    reader = GeminiChunkReader(provider, model=model)
    for _event in reader.read(response):
        pass
    if reader.finish_reason is None:
        reader.finish_reason = "content_filter" if _blocked(response) else "other"
    completed = reader.finish()[-1]
    assert isinstance(completed, ReplyCompleted)
    return completed.turn


def _blocked(response: types.GenerateContentResponse) -> bool:
    feedback = response.prompt_feedback
    return feedback is not None and feedback.block_reason is not None


def _usage(meta: types.GenerateContentResponseUsageMetadata) -> Usage:
    """Thinking tokens are billed as output: they count with the candidates' tokens."""
    return Usage(
        input_tokens=meta.prompt_token_count or 0,
        output_tokens=(meta.candidates_token_count or 0) + (meta.thoughts_token_count or 0),
        cached_input_tokens=meta.cached_content_token_count or 0,
        model_calls=1,
        reasoning_tokens=meta.thoughts_token_count or 0,
    )


class GeminiChunkReader:
    """Gemini replies (a whole one, or stream chunks) -> neutral events.

    A function call arrives whole in one part: it is started, given its
    arguments and completed at once. Calls are numbered in order. Every
    chunk's ``usage_metadata`` is the running total. The first candidate's
    ``finish_reason`` ends the reply (``STOP`` with calls means tool calls).
    Consecutive thought parts are one reasoning part (their text, and a
    signature one carries); a signed call adds a reasoning part holding its
    signature (base64), its ``id`` the call's; a signed text part, one
    holding the signature alone.
    """

    def __init__(self, provider: str, *, model: str = "") -> None:
        self._provider = provider
        self._assembler = ReplyAssembler(provider=provider)
        self._calls = 0
        self._reasoning = 0  # reasoning parts begun
        self._thought_open = False  # whether the last part was a thought (the next one continues it)
        self._issuer = issuer_of(PROVIDER, model)
        self.finish_reason: FinishReason | None = None
        """Set by the chunk that gives a finish reason; until then the reply is not complete."""

    def read(self, chunk: types.GenerateContentResponse) -> list[ModelEvent]:
        events: list[ModelEvent] = []
        candidate = chunk.candidates[0] if chunk.candidates else None
        content = candidate.content if candidate is not None else None
        for part in (content.parts if content is not None else None) or ():
            events.extend(self._part(part))
        if chunk.usage_metadata is not None:
            events.append(self._assembler.add(UsageReported(_usage(chunk.usage_metadata))))
        reason = candidate.finish_reason if candidate is not None else None
        if reason is not None:
            finish = _FINISH.get(str(reason.value), "other")
            self.finish_reason = "tool_calls" if finish == "stop" and self._calls else finish
        elif _blocked(chunk):
            self.finish_reason = "content_filter"
        return events

    def _part(self, part: types.Part) -> list[ModelEvent]:
        add = self._assembler.add
        call = part.function_call
        signature = (
            base64.b64encode(part.thought_signature).decode("ascii") if part.thought_signature else None
        )
        if part.thought:
            if not self._thought_open:
                self._thought_open = True
                self._reasoning += 1
                return [
                    add(
                        ReasoningDelta(
                            self._reasoning - 1, part.text or "", issuer=self._issuer, signature=signature
                        )
                    )
                ]
            return [add(ReasoningDelta(self._reasoning - 1, part.text or "", signature=signature))]
        self._thought_open = False
        events: list[ModelEvent] = []
        if call is not None:
            index = self._calls
            self._calls += 1
            call_id = call.id or f"{GENERATED_ID}{uuid.uuid4().hex}"
            arguments = cast("dict[str, JSONValue]", dict(call.args or {}))
            if signature is not None:
                events.append(self._signed(signature, call_id))
            return [
                *events,
                add(ToolCallStarted(index, call_id, call.name or "")),
                add(ToolCallDelta(index, json.dumps(arguments))),
                self._assembler.close_call(index, arguments=arguments),
            ]
        if signature is not None:
            events.append(self._signed(signature, None))
        if part.text:
            events.append(add(TextDelta(part.text)))
        return events

    def _signed(self, signature: str, call_id: str | None) -> ModelEvent:
        """A reasoning part holding a signature alone (of the call ``call_id``, or of the text)."""
        self._reasoning += 1
        delta = ReasoningDelta(self._reasoning - 1, issuer=self._issuer, signature=signature, id=call_id)
        return self._assembler.add(delta)

    def finish(self) -> list[ModelEvent]:
        """The last events, ending with the completed reply."""
        return list(self._assembler.finish(self.finish_reason))
