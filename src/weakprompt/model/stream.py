"""A model reply as a stream of neutral events, and the fold that turns it back into a turn.

Adapters stream a reply as it arrives (:meth:`ProviderAdapter.stream`), so a
caller can show text as it is written and start on a tool call as soon as its
arguments are complete. Every stream ends with exactly one
:class:`ReplyCompleted` carrying the same :class:`AssistantTurn` the
non-streamed call would have returned; the deltas before it describe that
same turn piece by piece.

Rules the fold (:class:`ReplyAssembler`) applies, and every adapter follows:

- **Text** is kept exactly as streamed, whitespace included. Whether a turn is
  a final answer is decided by its tool calls, never by its text: whitespace
  (or any text) streamed before a tool call stays the text of a tool-call
  turn, and a turn with no tool calls whose text is only whitespace is an
  empty final answer, as it is without streaming.
- **Tool calls** are keyed by ``index``, their position in the turn's
  ``tool_calls``. Argument pieces of several calls may interleave; each is
  appended to its own call. :class:`ToolCallReady` carries the call as the
  turn will hold it (an adapter may normalise the arguments there, as the
  Anthropic adapter does to match its non-streamed reply).
- **Reasoning** (:class:`ReasoningDelta`) is keyed by ``index``, its position
  among the turn's reasoning parts; its text pieces are appended and its
  opaque state (signature, encrypted content, id) set as it arrives. The
  turn's ``parts`` are then its reasoning parts and its text, in the order
  each first appeared (the text as one part); a reply with no reasoning has
  no parts, as before.
- **Usage**: each :class:`UsageReported` is the whole reply's usage as known
  so far; a later report replaces an earlier one. Without any report the turn
  counts one model call and no tokens.
- **Finish reason**: a stream that ends without one (a server that never sent
  it) completes with ``"other"``, the same value a non-streamed reply without
  one gets. The text and calls received so far are the turn.

The event classes live in :mod:`weakprompt.events` with every other event and
are re-exported here (the same classes): a run streams them too, with their
``turn`` set.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, NoReturn, TypeAlias

import attrs

from ..errors import AdapterError
from ..events import (
    ReasoningDelta,
    ReplyCompleted,
    TextDelta,
    ToolCallDelta,
    ToolCallReady,
    ToolCallStarted,
    UsageReported,
)
from ..jsontypes import JSONValue
from ..messages import AssistantTurn, FinishReason, ToolCall
from ..parts import Part, ReasoningPart, TextPart
from ..usage import Usage

if TYPE_CHECKING:
    from .adapter import ProviderAdapter
    from .request import ModelRequest

__all__ = [
    "ModelEvent",
    "ReasoningDelta",
    "ReplyAssembler",
    "ReplyCompleted",
    "TextDelta",
    "ToolCallDelta",
    "ToolCallReady",
    "ToolCallStarted",
    "UsageReported",
    "assemble",
    "complete_async",
    "drain",
    "turn_events",
]

_NO_USAGE = Usage(model_calls=1)


ModelEvent: TypeAlias = (
    TextDelta
    | ReasoningDelta
    | ToolCallStarted
    | ToolCallDelta
    | ToolCallReady
    | UsageReported
    | ReplyCompleted
)


@attrs.define
class _Call:
    call_id: str
    name: str
    pieces: list[str] = attrs.field(factory=list[str])
    ready: ToolCall | None = None


@attrs.define
class _Reasoning:
    pieces: list[str] = attrs.field(factory=list[str])
    issuer: str = ""
    signature: str | None = None
    encrypted: str | None = None
    id: str | None = None
    redacted: bool = False

    def take(self, event: ReasoningDelta) -> None:
        self.pieces.append(event.text)
        self.issuer = event.issuer or self.issuer
        self.signature = event.signature if event.signature is not None else self.signature
        self.encrypted = event.encrypted if event.encrypted is not None else self.encrypted
        self.id = event.id if event.id is not None else self.id
        self.redacted = self.redacted or event.redacted

    def part(self) -> ReasoningPart:
        return ReasoningPart(
            text="".join(self.pieces),
            issuer=self.issuer,
            signature=self.signature,
            encrypted=self.encrypted,
            redacted=self.redacted,
            id=self.id,
        )


class ReplyAssembler:
    """Folds a reply's events, in order, into the :class:`AssistantTurn` they describe.

    Adapters feed it the events they produce (``add`` hands each one back, so
    ``yield assembler.add(event)`` works) and end with :meth:`finish`, which
    closes the calls still open and builds the :class:`ReplyCompleted`.
    Consumers feed it a whole stream, ``ReplyCompleted`` included, and read
    :meth:`result`. An event that breaks the contract (arguments for a call
    never started, anything after the completion, a completed turn that
    disagrees with the deltas) raises :class:`AdapterError` naming it.
    """

    def __init__(self, *, provider: str = "") -> None:
        self._provider = provider
        self._text: list[str] = []
        self._calls: dict[int, _Call] = {}
        self._reasoning: dict[int, _Reasoning] = {}
        self._order: list[int] = []  # reasoning indexes in the order they began; -1 is the text
        self._usage: Usage | None = None
        self._completed: AssistantTurn | None = None

    @property
    def text(self) -> str:
        """The text streamed so far."""
        return "".join(self._text)

    @property
    def usage(self) -> Usage | None:
        """The last usage reported so far, if any."""
        return self._usage

    def has_call(self, index: int) -> bool:
        """Whether call ``index`` has started."""
        return index in self._calls

    def call_arguments(self, index: int) -> str:
        """The argument text streamed so far for open call ``index``."""
        return "".join(self._open_call(index, "arguments of").pieces)

    def add(self, event: ModelEvent) -> ModelEvent:
        """Fold ``event`` into the reply and return it unchanged."""
        if self._completed is not None:
            self._fail(f"{_describe(event)} arrived after the reply was completed")
        if isinstance(event, TextDelta):
            if event.text and -1 not in self._order:
                self._order.append(-1)
            self._text.append(event.text)
        elif isinstance(event, ReasoningDelta):
            if event.index not in self._reasoning:
                self._reasoning[event.index] = _Reasoning()
                self._order.append(event.index)
            self._reasoning[event.index].take(event)
        elif isinstance(event, ToolCallStarted):
            if event.index in self._calls:
                self._fail(f"tool call {event.index} was started twice")
            self._calls[event.index] = _Call(event.call_id, event.name)
        elif isinstance(event, ToolCallDelta):
            self._open_call(event.index, "arguments for").pieces.append(event.arguments_delta)
        elif isinstance(event, ToolCallReady):
            self._ready(event)
        elif isinstance(event, UsageReported):
            self._usage = event.usage
        else:
            self._check_completion(event.turn)
            self._completed = event.turn
        return event

    def close_call(
        self, index: int, *, arguments: str | Mapping[str, JSONValue] | None = None, parse: bool = False
    ) -> ToolCallReady:
        """Mark call ``index`` complete; ``arguments`` replaces the streamed pieces when given.

        ``parse=True`` keeps the streamed text as the object it decodes to
        (:meth:`ToolCall.parsed`), for a provider whose whole replies carry
        parsed arguments: the streamed call then equals the whole one, and
        its arguments are decoded here, once.
        """
        call = self._open_call(index, "closing")
        if arguments is None and parse:
            made = ToolCall.parsed(call.call_id, call.name, "".join(call.pieces))
        else:
            text = "".join(call.pieces) if arguments is None else arguments
            made = ToolCall(id=call.call_id, name=call.name, arguments=text)
        event = ToolCallReady(index, made)
        self.add(event)
        return event

    def close_open_calls(self) -> tuple[ToolCallReady, ...]:
        """Close every call still open, in index order, with its streamed arguments."""
        open_calls = [index for index in sorted(self._calls) if self._calls[index].ready is None]
        return tuple(self.close_call(index) for index in open_calls)

    def finish(self, finish_reason: FinishReason | None) -> tuple[ModelEvent, ...]:
        """Close the calls still open (in index order) and complete the reply.

        ``None`` means the provider never said why it stopped: the turn gets
        ``"other"``.
        """
        ready = self.close_open_calls()
        completed = ReplyCompleted(self._turn(finish_reason or "other"))
        self.add(completed)
        return (*ready, completed)

    def result(self) -> AssistantTurn:
        """The completed turn; a stream that never completed is an :class:`AdapterError`."""
        if self._completed is None:
            self._fail("the stream ended without a ReplyCompleted event")
        return self._completed

    def _turn(self, finish_reason: FinishReason) -> AssistantTurn:
        calls: list[ToolCall] = []
        for index in sorted(self._calls):
            call = self._calls[index]
            if call.ready is None:
                self._fail(f"tool call {index} was never completed")
            calls.append(call.ready)
        return AssistantTurn(
            text=self.text,
            tool_calls=tuple(calls),
            usage=self._usage if self._usage is not None else _NO_USAGE,
            finish_reason=finish_reason,
            parts=self._parts(),
        )

    def _parts(self) -> tuple[Part, ...]:
        """Reasoning and text in the order each began; none when there is no reasoning."""
        if not self._reasoning:
            return ()
        text = self.text
        return tuple(
            self._reasoning[index].part() if index >= 0 else TextPart(text)
            for index in self._order
            if index >= 0 or text
        )

    def _open_call(self, index: int, what: str) -> _Call:
        call = self._calls.get(index)
        if call is None:
            self._fail(f"{what} tool call {index}, which was never started")
        if call.ready is not None:
            self._fail(f"{what} tool call {index}, which was already complete")
        return call

    def _ready(self, event: ToolCallReady) -> None:
        call = self._open_call(event.index, "completion of")
        if (event.call.id, event.call.name) != (call.call_id, call.name):
            self._fail(
                f"tool call {event.index} started as {call.name!r} (id {call.call_id!r}) "
                f"but completed as {event.call.name!r} (id {event.call.id!r})"
            )
        call.ready = event.call

    def _check_completion(self, turn: AssistantTurn) -> None:
        """The completed turn must be the one the deltas describe."""
        folded = self._turn(turn.finish_reason)
        if turn.text != folded.text:
            self._fail(f"the completed text {turn.text!r} is not the streamed text {folded.text!r}")
        if turn.tool_calls != folded.tool_calls:
            self._fail(
                f"the completed tool calls {list(turn.tool_calls)!r} are not the streamed ones "
                f"{list(folded.tool_calls)!r}"
            )
        if turn.reasoning != folded.reasoning:
            self._fail(
                f"the completed reasoning {list(turn.reasoning)!r} is not the streamed one "
                f"{list(folded.reasoning)!r}"
            )
        if self._usage is not None and turn.usage != self._usage:
            self._fail(f"the completed usage {turn.usage!r} is not the last reported {self._usage!r}")

    def _fail(self, problem: str) -> NoReturn:
        who = self._provider or "adapter"
        raise AdapterError(f"{who}: malformed reply stream: {problem}", provider=self._provider)


def _describe(event: ModelEvent) -> str:
    return type(event).__name__


def assemble(events: Iterable[ModelEvent], *, provider: str = "") -> AssistantTurn:
    """The turn a whole stream describes, after checking the stream keeps the contract."""
    assembler = ReplyAssembler(provider=provider)
    for event in events:
        assembler.add(event)
    return assembler.result()


def turn_events(turn: AssistantTurn) -> tuple[ModelEvent, ...]:
    """The events of a reply that arrived whole: an adapter that cannot stream yields these."""
    events: list[ModelEvent] = []
    text_sent = not turn.text
    reasoning = 0
    for part in turn.parts or (TextPart(turn.text),):
        if isinstance(part, ReasoningPart):
            events.append(_whole_reasoning(reasoning, part))
            reasoning += 1
        elif isinstance(part, TextPart) and not text_sent:
            events.append(TextDelta(turn.text))
            text_sent = True
    for index, call in enumerate(turn.tool_calls):
        events.append(ToolCallStarted(index, call.id, call.name))
        arguments = call.arguments_json()
        if arguments:
            events.append(ToolCallDelta(index, arguments))
    events.append(UsageReported(turn.usage))
    events.extend(ToolCallReady(index, call) for index, call in enumerate(turn.tool_calls))
    events.append(ReplyCompleted(turn))
    return tuple(events)


def _whole_reasoning(index: int, part: ReasoningPart) -> ReasoningDelta:
    return ReasoningDelta(
        index,
        part.text,
        issuer=part.issuer,
        signature=part.signature,
        encrypted=part.encrypted,
        id=part.id,
        redacted=part.redacted,
    )


async def complete_async(adapter: ProviderAdapter, request: ModelRequest) -> AssistantTurn:
    """The whole reply: the adapter's own ``complete_async`` when it has one, else its stream drained."""
    whole = getattr(adapter, "complete_async", None)
    if whole is not None:
        turn = await whole(request)
        if not isinstance(turn, AssistantTurn):
            raise AdapterError(
                f"{adapter.name}: complete_async returned {type(turn).__name__}, not an AssistantTurn",
                provider=adapter.name,
            )
        return turn
    return await drain(adapter, request)


async def drain(adapter: ProviderAdapter, request: ModelRequest) -> AssistantTurn:
    """Drain ``adapter.stream(request)`` and return the completed turn."""
    assembler = ReplyAssembler(provider=adapter.name)
    events = adapter.stream(request)
    try:
        async for event in events:
            assembler.add(event)
    finally:
        # Close an async generator now, not when it is collected, should the fold fail half-way.
        aclose = getattr(events, "aclose", None)
        if aclose is not None:
            await aclose()
    return assembler.result()
