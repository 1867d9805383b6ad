"""Chat Completions stream chunks (as JSON) -> neutral stream events.

OpenAI, every OpenAI-compatible server and llama-cpp-python's own
``create_chat_completion(stream=True)`` send the same chunk shape, so one
reader serves the OpenAI and the local adapter. Only the first choice is
read, as for a whole reply.

How chunks map:

- ``delta.content`` -> :class:`TextDelta` (empty pieces are dropped);
  ``delta.refusal`` is kept aside and becomes the text, with finish reason
  ``content_filter``, when the reply has no other text (as for a whole reply).
- ``delta.tool_calls[i]``: the first piece seen for an ``index`` starts that
  call with the id and name it carries; later pieces add their
  ``function.arguments``. Servers that repeat the id and name on every piece
  (llama.cpp does) are read the same way.
- ``finish_reason`` completes every call (:class:`ToolCallReady`): calls may
  interleave, so none is complete before the choice says it is finished.
- ``usage`` (a final chunk with no choices, when ``include_usage`` was asked
  for) -> :class:`UsageReported`.

A stream that ends before any chunk arrived is a
:class:`~weakprompt.errors.ProviderError` (llama.cpp's server answers so
when a streamed prompt does not fit). One that ends without a finish reason
completes as ``"other"``, except for a network stream (``finish(cut_from=url)``):
there, that is what a cut connection looks like, and it is a
:func:`~weakprompt.adapters.error_mapping.cut_stream` error.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ...errors import ProviderError
from ...jsontypes import JSONObject, JSONValue
from ...messages import FinishReason
from ...model import ModelEvent, ReplyAssembler, TextDelta, ToolCallDelta, ToolCallStarted, UsageReported
from ...usage import Usage
from .._support import OPENAI_FINISH_REASONS
from ..error_mapping import cut_stream

__all__ = ["CallIdRule", "ChatChunkReader", "chat_usage"]

CallIdRule = Callable[[int, str], str]
"""``(index, name) -> id`` for servers whose own call ids are not wanted."""


def chat_usage(raw: JSONValue | None) -> Usage:
    """A Chat Completions ``usage`` object as one model call's usage (no object: no tokens)."""
    if not isinstance(raw, dict):
        return Usage(model_calls=1)
    details = raw.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    output = raw.get("completion_tokens_details")
    reasoning = output.get("reasoning_tokens") if isinstance(output, dict) else None
    written = details.get("cache_write_tokens") if isinstance(details, dict) else None
    return Usage(
        input_tokens=_int(raw.get("prompt_tokens")),
        output_tokens=_int(raw.get("completion_tokens")),
        cached_input_tokens=_int(cached),
        model_calls=1,
        reasoning_tokens=_int(reasoning),
        cache_write_tokens=_int(written),
    )


def _int(value: JSONValue | None) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


class ChatChunkReader:
    """Folds one streamed reply, chunk by chunk, into neutral events.

    ``read`` returns the events one chunk yields; ``finish`` (once the stream
    is over) returns the last ones, ending with the ``ReplyCompleted``.
    ``pieces`` counts the chunks that carried reply text (even empty) or
    argument text: llama-cpp-python sends one per generated token.
    """

    def __init__(self, *, provider: str, call_id: CallIdRule | None = None) -> None:
        self._provider = provider
        self._assembler = ReplyAssembler(provider=provider)
        self._call_id = call_id
        self._chunks = 0
        self._finish: FinishReason | None = None
        self._refusal: list[str] = []
        self._pieces = 0

    @property
    def pieces(self) -> int:
        return self._pieces

    @property
    def usage(self) -> Usage | None:
        """The last usage reported, if any."""
        return self._assembler.usage

    def report(self, event: UsageReported) -> ModelEvent:
        """Add a usage report the chunks did not carry (a local model measures its own)."""
        return self._assembler.add(event)

    def read(self, chunk: Mapping[str, JSONValue]) -> list[ModelEvent]:
        self._chunks += 1
        events: list[ModelEvent] = []
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            events.append(self._assembler.add(UsageReported(chat_usage(usage))))
        choice = _first_choice(chunk.get("choices"))
        if choice is None:
            return events
        delta = choice.get("delta")
        if isinstance(delta, dict):
            events.extend(self._delta(delta))
        reason = choice.get("finish_reason")
        if isinstance(reason, str):
            self._finish = OPENAI_FINISH_REASONS.get(reason, "other")
            events.extend(self._assembler.close_open_calls())
        return events

    def finish(self, *, cut_from: object = None) -> list[ModelEvent]:
        """The last events; ``cut_from`` (where a network stream came from) requires a finish reason."""
        if not self._chunks:
            raise ProviderError(
                f"{self._provider} error: the stream ended before any chunk arrived", provider=self._provider
            )
        if cut_from is not None and self._finish is None:
            raise cut_stream(self._provider, cut_from, "no chunk gave a finish reason")
        events: list[ModelEvent] = []
        finish = self._finish
        refusal = "".join(self._refusal)
        if refusal and not self._assembler.text:
            events.append(self._assembler.add(TextDelta(refusal)))
            finish = "content_filter"
        events.extend(self._assembler.finish(finish))
        return events

    def _delta(self, delta: JSONObject) -> list[ModelEvent]:
        events: list[ModelEvent] = []
        content = delta.get("content")
        if isinstance(content, str):
            self._pieces += 1
            if content:
                events.append(self._assembler.add(TextDelta(content)))
        refusal = delta.get("refusal")
        if isinstance(refusal, str):
            self._refusal.append(refusal)
        calls = delta.get("tool_calls")
        for position, entry in enumerate(calls if isinstance(calls, list) else ()):
            if isinstance(entry, dict):
                events.extend(self._call_piece(position, entry))
        return events

    def _call_piece(self, position: int, entry: JSONObject) -> list[ModelEvent]:
        events: list[ModelEvent] = []
        index = entry.get("index")
        index = index if isinstance(index, int) else position
        function = entry.get("function")
        function = function if isinstance(function, dict) else {}
        if not self._assembler.has_call(index):
            name = function.get("name")
            name = name if isinstance(name, str) else ""
            given = entry.get("id")
            call_id = self._call_id(index, name) if self._call_id else given if isinstance(given, str) else ""
            events.append(self._assembler.add(ToolCallStarted(index, call_id, name)))
        arguments = function.get("arguments")
        if isinstance(arguments, str) and arguments:
            self._pieces += 1
            events.append(self._assembler.add(ToolCallDelta(index, arguments)))
        return events


def _first_choice(choices: JSONValue | None) -> JSONObject | None:
    if not isinstance(choices, list):
        return None
    for choice in choices:
        if isinstance(choice, dict) and choice.get("index", 0) == 0:
            return choice
    return None
