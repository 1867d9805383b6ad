"""Output modes as adapters apply them: which they support, what ``auto`` learned, the final-answer tool.

Each adapter holds one :class:`OutputModes`: the modes it supports, its
default (``auto`` unless told otherwise) and the order ``auto`` tries. A
request with a structured output is sent in one concrete mode; when a server
answers that it does not support that mode (``is_format_refusal``), ``auto``
moves to the next mode once and remembers it for the adapter's lifetime, so
a second run does not ask for the refused mode again.

What the modes share lives here too: the schema instruction that
``json_object`` and ``prompted`` add to the system message, and the
``tool`` mode's final-answer tool, whose call is handed to the loop as the
reply's text (the loop parses it like any final answer, and the corrective
turn works unchanged).
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import AsyncIterator, Callable, Mapping

import attrs

from ..canonical import canonical_json
from ..errors import AdapterError, ConfigurationError, ProviderError
from ..jsontypes import JSONValue
from ..messages import AssistantTurn, Message
from ..model import (
    ConcreteOutputMode,
    ForceTool,
    ModelEvent,
    ModelRequest,
    OutputMode,
    ReplyCompleted,
    TextDelta,
    ToolCallDelta,
    ToolCallReady,
    ToolCallStarted,
    ToolChoice,
)
from ._support import json_answer_instruction

__all__ = [
    "FINAL_ANSWER_TOOL",
    "FinalAnswerReader",
    "OutputModes",
    "UnsupportedOutputModeError",
    "final_answer_choice",
    "final_answer_turn",
    "is_format_refusal",
    "with_schema_instruction",
]

logger = logging.getLogger(__name__)

FINAL_ANSWER_TOOL = "final_answer"
FINAL_ANSWER_DESCRIPTION = (
    "Give the final answer. Call this once, when you are done, with the answer as arguments."
)

# What servers say when they do not take a response format (llama.cpp's server: "Input should be
# 'text' or 'json_object'"; OpenAI: "'response_format' of type 'json_schema' is not supported").
_FORMAT_WORDS = re.compile(
    r"response_format|json_schema|json_object|output_config|output_format|structured output", re.IGNORECASE
)
_REFUSAL_STATUSES = frozenset({400, 404, 415, 422, 500, 501})


class UnsupportedOutputModeError(ConfigurationError):
    """An output mode the adapter cannot send (a ``FallbackAdapter`` moves on by default)."""


def is_format_refusal(error: AdapterError) -> bool:
    """True when a provider error says the requested output format is not supported.

    Only a plain :class:`ProviderError` with a client or server status that
    names the response format counts: a rate limit, bad credentials or a
    broken connection is never a reason to change the mode.
    """
    return (
        type(error) is ProviderError
        and error.status_code in _REFUSAL_STATUSES
        and _FORMAT_WORDS.search(str(error)) is not None
    )


class OutputModes:
    """An adapter's output modes and what ``auto`` learned from refusals (thread-safe)."""

    def __init__(
        self,
        adapter: str,
        *,
        supported: tuple[ConcreteOutputMode, ...],
        auto_order: tuple[ConcreteOutputMode, ...],
        default: OutputMode = "auto",
    ) -> None:
        if default != "auto" and default not in supported:
            raise UnsupportedOutputModeError(_unsupported(adapter, default, supported))
        self._adapter = adapter
        self.supported = supported
        self.auto_order = auto_order
        self.default: OutputMode = default
        self._learned = 0  # index into auto_order of the first mode not refused yet
        self._lock = threading.Lock()

    @property
    def auto_mode(self) -> ConcreteOutputMode:
        """The mode ``auto`` uses now (the best one no server of this adapter refused)."""
        return self.auto_order[self._learned]

    def resolve(self, request: ModelRequest) -> ConcreteOutputMode | None:
        """The concrete mode for ``request`` (``None`` without an output schema).

        The request's own mode wins over the adapter's default; a mode the
        adapter does not support is a :class:`ConfigurationError`.
        """
        if request.output_schema is None:
            return None
        wanted = request.output_mode or self.default
        if wanted == "auto":
            return self.auto_mode
        if wanted not in self.supported:
            raise UnsupportedOutputModeError(_unsupported(self._adapter, wanted, self.supported))
        return wanted

    def fall_back(
        self, request: ModelRequest, tried: ConcreteOutputMode, error: AdapterError
    ) -> tuple[ModelRequest, ConcreteOutputMode] | None:
        """``request`` in ``auto``'s next mode after ``tried`` was refused, or ``None`` to give up.

        Only ``auto`` falls back, and only on a refusal of the format
        (:func:`is_format_refusal`). The move is remembered: later requests
        start from the new mode.
        """
        if (request.output_mode or self.default) != "auto" or not is_format_refusal(error):
            return None
        with self._lock:
            position = self.auto_order.index(tried)
            if position + 1 >= len(self.auto_order):
                return None
            self._learned = max(self._learned, position + 1)
            following = self.auto_order[position + 1]
        logger.info(
            "%s: output mode %r refused (%s); using %r from now on", self._adapter, tried, error, following
        )
        return attrs.evolve(request, output_mode=following), following

    def pinned(self, request: ModelRequest) -> tuple[ModelRequest, ConcreteOutputMode | None]:
        """``request`` with its mode resolved, and that mode."""
        mode = self.resolve(request)
        return (request if mode is None else attrs.evolve(request, output_mode=mode)), mode

    async def stream(
        self, request: ModelRequest, open_stream: Callable[[ModelRequest], AsyncIterator[ModelEvent]]
    ) -> AsyncIterator[ModelEvent]:
        """``open_stream`` in the resolved mode, falling back (``auto``) on a refusal before any event."""
        pinned, mode = self.pinned(request)
        while True:
            started = False
            try:
                events = open_stream(pinned)
                if mode == "tool":
                    events = FinalAnswerReader().read(events)
                async for event in events:
                    started = True
                    yield event
                return
            except AdapterError as exc:
                following = None if started or mode is None else self.fall_back(request, mode, exc)
                if following is None:
                    raise
                pinned, mode = following

    def complete(self, request: ModelRequest, call: Callable[[ModelRequest], AssistantTurn]) -> AssistantTurn:
        """``call`` in the resolved mode, falling back (``auto``) on a refusal."""
        pinned, mode = self.pinned(request)
        while True:
            try:
                turn = call(pinned)
            except AdapterError as exc:
                following = None if mode is None else self.fall_back(request, mode, exc)
                if following is None:
                    raise
                pinned, mode = following
                continue
            return final_answer_turn(turn) if mode == "tool" else turn


def _unsupported(adapter: str, mode: str, supported: tuple[ConcreteOutputMode, ...]) -> str:
    return f"{adapter} does not support output mode {mode!r} (supported: auto, {', '.join(supported)})"


def with_schema_instruction(request: ModelRequest) -> ModelRequest:
    """``request`` with the JSON-answer instruction (and schema) added to its first system message.

    Used by ``json_object`` and ``prompted``. Only what this model call sees
    changes; the transcript keeps the prompt as rendered.
    """
    schema = request.output_schema
    assert schema is not None
    instruction = json_answer_instruction(schema)
    messages = list(request.context.messages)
    for index, message in enumerate(messages):
        if message.role == "system":
            messages[index] = attrs.evolve(message, content=f"{message.content}\n\n{instruction}")
            break
    else:
        messages.insert(0, Message(role="system", content=instruction))
    context = attrs.evolve(request.context, messages=tuple(messages))
    return attrs.evolve(request, context=context)


def final_answer_choice(request: ModelRequest) -> ToolChoice:
    """The tool choice for ``tool`` mode: the model must either call a tool or give the final answer.

    ``auto`` becomes "required" (or forcing the final answer when no other
    tool is offered); an explicit choice is kept. A request tool that is
    itself called ``final_answer`` is refused, since the two would be confused.
    """
    names = [tool.name for tool in request.tools]
    if FINAL_ANSWER_TOOL in names:
        raise ConfigurationError(
            f"output mode 'tool' adds a tool named {FINAL_ANSWER_TOOL!r}, and the prompt already offers one; "
            "rename that tool or choose another output mode"
        )
    if request.tool_choice == "auto":
        return "required" if names else ForceTool(FINAL_ANSWER_TOOL)
    return request.tool_choice


def final_answer_turn(turn: AssistantTurn) -> AssistantTurn:
    """A whole reply in ``tool`` mode: the final-answer call becomes the text; other calls stay in order."""
    names = [call.name for call in turn.tool_calls]
    if FINAL_ANSWER_TOOL not in names:
        return turn
    index = names.index(FINAL_ANSWER_TOOL)
    others = turn.tool_calls[:index] + turn.tool_calls[index + 1 :]
    return attrs.evolve(
        turn,
        text=_joined(turn.text, _answer_text(turn.tool_calls[index].arguments)),
        tool_calls=others,
        finish_reason=turn.finish_reason if others else "stop",
    )


def _answer_text(arguments: str | Mapping[str, JSONValue]) -> str:
    return arguments if isinstance(arguments, str) else canonical_json(dict(arguments))


def _joined(text: str, answer: str) -> str:
    return f"{text}\n\n{answer}" if text.strip() else answer


class FinalAnswerReader:
    """Rewrites a ``tool``-mode stream so the final-answer call arrives as the reply's text.

    The call's argument text becomes one ``TextDelta`` when the call is
    ready; other calls keep their events, renumbered to close the gap. The
    completed turn is rebuilt to match (:func:`final_answer_turn`'s rule).
    """

    def __init__(self) -> None:
        self._final: int | None = None
        self._text = ""
        self._answer: str | None = None

    async def read(self, events: AsyncIterator[ModelEvent]) -> AsyncIterator[ModelEvent]:
        try:
            async for event in events:
                for rewritten in self._rewrite(event):
                    yield rewritten
        finally:
            aclose = getattr(events, "aclose", None)
            if aclose is not None:
                await aclose()

    def _index(self, index: int) -> int:
        return index - 1 if self._final is not None and index > self._final else index

    def _rewrite(self, event: ModelEvent) -> list[ModelEvent]:
        if isinstance(event, ToolCallStarted):
            if event.name == FINAL_ANSWER_TOOL and self._final is None:
                self._final = event.index
                return []
            return [attrs.evolve(event, index=self._index(event.index))]
        if isinstance(event, ToolCallDelta):
            if event.index == self._final:
                return []
            return [attrs.evolve(event, index=self._index(event.index))]
        if isinstance(event, ToolCallReady):
            if event.index == self._final:
                answer = _answer_text(event.call.arguments)
                self._answer = answer
                piece = f"\n\n{answer}" if self._text.strip() else answer
                self._text += piece
                return [TextDelta(piece)] if piece else []
            return [attrs.evolve(event, index=self._index(event.index))]
        if isinstance(event, TextDelta):
            self._text += event.text
            return [event]
        if isinstance(event, ReplyCompleted) and self._final is not None and self._answer is not None:
            turn = event.turn
            others = turn.tool_calls[: self._final] + turn.tool_calls[self._final + 1 :]
            finish = turn.finish_reason if others else "stop"
            return [
                ReplyCompleted(attrs.evolve(turn, text=self._text, tool_calls=others, finish_reason=finish))
            ]
        return [event]
