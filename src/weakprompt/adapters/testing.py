"""Adapters for tests: no network, no model, fully predictable replies.

They let users test their own prompts and tools through the real evaluation
loop: the loop cannot tell a scripted reply from a provider's. That includes
usage: a reply that does not state its usage is charged what the configured
token counter counts in the request and in the reply, so budgets and usage
reports behave as they would with a provider.

Both stream too: a plain scripted turn streams as a provider would send it
(text in pieces, each call's arguments in pieces), and a
:class:`StreamScript` scripts the stream itself, down to a reply that stops
without a finish reason or a provider failing half-way.
"""

from __future__ import annotations

import inspect
import itertools
import json
import re
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from typing import Literal, TypeAlias, TypeVar

import attrs

from ..errors import AdapterError
from ..jsontypes import JSONValue
from ..messages import AssistantTurn, FinishReason, ToolCall, Usage
from ..model import (
    ModelEvent,
    ModelRequest,
    ReasoningDelta,
    ReplyAssembler,
    ReplyCompleted,
    TextDelta,
    ToolCallDelta,
    ToolCallReady,
    ToolCallStarted,
    UsageReported,
    assemble,
)
from ..parts import ReasoningPart, TextPart
from ..tokens import DEFAULT_TOKEN_COUNTER, TokenCounter
from ._support import AdapterIdentity

__all__ = [
    "FunctionAdapter",
    "Reply",
    "ScriptedAdapter",
    "StreamPart",
    "StreamScript",
    "as_turn",
    "estimate_usage",
    "streamed",
    "text_turn",
    "tool_call",
    "tool_call_turn",
]

# The usage a turn gets when its author gave none; recognised by identity, so
# an explicit ``Usage(...)`` (even an all-zero one) is always kept as given.
_ONE_CALL = Usage(model_calls=1)
_UNSTATED_USAGE = (_ONE_CALL, attrs.fields(AssistantTurn).usage.default)
_call_ids = itertools.count(1)


def text_turn(text: str, *, usage: Usage = _ONE_CALL, finish_reason: FinishReason = "stop") -> AssistantTurn:
    """A final answer with no tool calls."""
    return AssistantTurn(text=text, usage=usage, finish_reason=finish_reason)


def tool_call(
    name: str,
    arguments: Mapping[str, JSONValue] | str | None = None,
    *,
    id: str | None = None,
) -> ToolCall:
    """One tool call; ``arguments`` may be a raw (even malformed) JSON string."""
    call_id = id if id is not None else f"call_{next(_call_ids)}"
    args: Mapping[str, JSONValue] | str = {} if arguments is None else arguments
    return ToolCall(id=call_id, name=name, arguments=args)


def tool_call_turn(*calls: ToolCall, text: str = "", usage: Usage = _ONE_CALL) -> AssistantTurn:
    """A turn in which the model asks for ``calls``, in order."""
    return AssistantTurn(text=text, tool_calls=calls, usage=usage, finish_reason="tool_calls")


def as_turn(reply: AssistantTurn | str) -> AssistantTurn:
    """Strings become plain text answers counted as one model call."""
    return text_turn(reply) if isinstance(reply, str) else reply


def _json_text(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=repr)


def _turn_tokens(counter: TokenCounter, text: str, calls: Sequence[ToolCall]) -> int:
    return counter.count(text) + sum(
        counter.count(call.name) + counter.count(call.arguments_json())
        for call in calls  # the call's own text
    )


def estimate_usage(request: ModelRequest, turn: AssistantTurn, counter: TokenCounter) -> Usage:
    """One model call's usage as ``counter`` counts it.

    Input: every compiled message (text and tool calls), every offered tool's
    definition and the output schema, as JSON. Output: the reply's text and
    tool calls.
    """
    messages = request.context.messages
    input_tokens = sum(_turn_tokens(counter, message.content, message.tool_calls) for message in messages)
    input_tokens += sum(counter.count(_json_text(tool.spec())) for tool in request.tools)
    if request.output_schema is not None:
        input_tokens += counter.count(_json_text(request.output_schema))
    return Usage(
        input_tokens=input_tokens,
        output_tokens=_turn_tokens(counter, turn.text, turn.tool_calls),
        model_calls=max(1, turn.usage.model_calls),
    )


StreamPart: TypeAlias = (
    TextDelta | ReasoningDelta | ToolCallStarted | ToolCallDelta | ToolCallReady | UsageReported
)
_STREAM_PARTS = (TextDelta, ReasoningDelta, ToolCallStarted, ToolCallDelta, ToolCallReady, UsageReported)


def _parts(value: Sequence[StreamPart]) -> tuple[StreamPart, ...]:
    parts = tuple(value)
    for position, part in enumerate(parts):
        if not isinstance(part, _STREAM_PARTS):
            kind = (
                "the adapter adds ReplyCompleted itself" if isinstance(part, ReplyCompleted) else "not a part"
            )
            raise TypeError(f"StreamScript part {position} is {type(part).__name__}: {kind}")
    return parts


@attrs.frozen
class StreamScript:
    """One reply scripted as the stream a provider sends.

    ``parts`` are streamed in order; the adapter then closes the calls still
    open and completes the reply with ``finish_reason`` (``"auto"``:
    ``"tool_calls"`` when the parts start a call, else ``"stop"``; ``None``: the
    stream ends without one, which the turn records as ``"other"``). With
    ``error`` the stream raises it after the parts instead of completing,
    as a provider failing mid-stream does; ``complete`` raises it too.
    """

    parts: tuple[StreamPart, ...] = attrs.field(converter=_parts)
    finish_reason: FinishReason | Literal["auto"] | None = "auto"
    error: Exception | None = None

    def play(
        self, *, provider: str = "", estimate: Callable[[AssistantTurn], Usage] | None = None
    ) -> Iterator[ModelEvent]:
        """The events of this reply, as an adapter streams them.

        When the parts report no usage and ``estimate`` is given, the calls
        are closed and the estimate of the reply so far is reported before
        the completion (the scripted adapters charge unstated usage so).
        """
        assembler = ReplyAssembler(provider=provider)
        ready: dict[int, ToolCall] = {}
        for part in self.parts:
            if isinstance(part, ToolCallReady):
                ready[part.index] = part.call
            yield assembler.add(part)
        if self.error is not None:
            raise self.error
        finish = self.finish_reason
        if finish == "auto":
            starts_call = any(isinstance(part, ToolCallStarted) for part in self.parts)
            finish = "tool_calls" if starts_call else "stop"
        if estimate is not None and assembler.usage is None:
            for closed in assembler.close_open_calls():
                ready[closed.index] = closed.call
                yield closed
            so_far = AssistantTurn(text=assembler.text, tool_calls=tuple(ready[i] for i in sorted(ready)))
            yield assembler.add(UsageReported(estimate(so_far)))
        yield from assembler.finish(finish)


Reply: TypeAlias = AssistantTurn | str | StreamScript | Sequence[StreamPart]
"""What a script entry or a reply function gives: a turn, a text answer, or a stream."""

_WORDS = re.compile(r"\S+\s*|\s+")
_ARGUMENT_PIECES = 3


def streamed(turn: AssistantTurn) -> StreamScript:
    """``turn`` as a provider would stream it: reasoning and text word by word, arguments in pieces.

    Playing the script completes with ``turn`` itself (same text, reasoning,
    calls, usage and finish reason).
    """
    parts = _content_deltas(turn)
    for index, call in enumerate(turn.tool_calls):
        parts.append(ToolCallStarted(index, call.id, call.name))
        # a scripted mapping may hold values JSON cannot (a hostile test): the deltas show their repr,
        # ToolCallReady carries the call exactly as scripted
        parts.extend(ToolCallDelta(index, piece) for piece in _split(call.arguments_json()))
    parts.append(UsageReported(turn.usage))
    parts.extend(ToolCallReady(index, call) for index, call in enumerate(turn.tool_calls))
    return StreamScript(parts, finish_reason=turn.finish_reason)


def _content_deltas(turn: AssistantTurn) -> list[StreamPart]:
    """The reply's reasoning and text as deltas, in the order of its parts."""
    words: list[StreamPart] = [TextDelta(piece) for piece in _WORDS.findall(turn.text)]
    if not turn.reasoning:
        return words
    deltas: list[StreamPart] = []
    reasoning = 0
    for part in turn.parts:
        if isinstance(part, ReasoningPart):
            deltas.extend(_reasoning_deltas(reasoning, part))
            reasoning += 1
        elif isinstance(part, TextPart) and words:
            deltas.extend(words)
            words = []
    return deltas + words


def _reasoning_deltas(index: int, part: ReasoningPart) -> list[StreamPart]:
    """One reasoning part as a provider streams it: who wrote it first, its text, its opaque state last."""
    deltas: list[StreamPart] = [ReasoningDelta(index, issuer=part.issuer, id=part.id, redacted=part.redacted)]
    deltas.extend(ReasoningDelta(index, piece) for piece in _WORDS.findall(part.text))
    if part.signature is not None or part.encrypted is not None:
        deltas.append(ReasoningDelta(index, signature=part.signature, encrypted=part.encrypted))
    return deltas


def _split(text: str) -> list[str]:
    size = max(1, -(-len(text) // _ARGUMENT_PIECES))
    return [text[start : start + size] for start in range(0, len(text), size)]


def _as_reply(reply: Reply) -> AssistantTurn | StreamScript:
    if isinstance(reply, AssistantTurn | StreamScript):
        return reply
    if isinstance(reply, str):
        return text_turn(reply)
    return StreamScript(reply)


class _RecordingAdapter(AdapterIdentity):
    """Identity plus a thread-safe record of every request seen, and usage estimates."""

    def __init__(
        self, *, name: str, model: str, context_window: int | None, token_counter: TokenCounter | None
    ) -> None:
        super().__init__(name=name, model=model, context_window=context_window)
        self._lock = threading.Lock()
        self._requests: list[ModelRequest] = []
        self._token_counter = token_counter

    @property
    def token_counter(self) -> TokenCounter | None:
        """The counter given to the constructor (``None``: the default estimate is used)."""
        return self._token_counter

    def _with_usage(self, request: ModelRequest, turn: AssistantTurn) -> AssistantTurn:
        """``turn`` with an estimated usage when its author stated none."""
        if not any(turn.usage is unstated for unstated in _UNSTATED_USAGE):
            return turn
        return attrs.evolve(turn, usage=self._estimate(request, turn))

    def _estimate(self, request: ModelRequest, turn: AssistantTurn) -> Usage:
        return estimate_usage(request, turn, self._token_counter or DEFAULT_TOKEN_COUNTER)

    def _turn(self, request: ModelRequest, reply: AssistantTurn | StreamScript) -> AssistantTurn:
        """The turn ``stream`` completes with for ``reply`` (a script is played as ``stream`` plays it)."""
        if isinstance(reply, AssistantTurn):
            return self._with_usage(request, reply)
        return assemble(self._events(request, reply), provider=self._name)

    def _events(self, request: ModelRequest, reply: AssistantTurn | StreamScript) -> Iterator[ModelEvent]:
        """The events ``stream`` yields for ``reply``."""
        if isinstance(reply, AssistantTurn):
            return streamed(self._with_usage(request, reply)).play(provider=self._name)
        return reply.play(provider=self._name, estimate=lambda turn: self._estimate(request, turn))

    @property
    def requests(self) -> tuple[ModelRequest, ...]:
        """Every request seen so far, oldest first."""
        with self._lock:
            return tuple(self._requests)


class ScriptedAdapter(_RecordingAdapter):
    """Replies with a fixed list of turns, in order, and records every request.

    Running past the end of the script raises :class:`AdapterError` naming how
    many turns the script had, so a loop that keeps going is easy to spot.
    Turns without an explicit ``usage`` are charged an estimate made with
    ``token_counter`` (default: :data:`~weakprompt.tokens.DEFAULT_TOKEN_COUNTER`).
    """

    def __init__(
        self,
        turns: Sequence[Reply],
        *,
        name: str = "scripted",
        model: str = "scripted",
        context_window: int | None = None,
        token_counter: TokenCounter | None = None,
    ) -> None:
        super().__init__(name=name, model=model, context_window=context_window, token_counter=token_counter)
        self._turns = tuple(_as_reply(turn) for turn in turns)

    @property
    def remaining(self) -> int:
        """Turns not yet returned."""
        with self._lock:
            return len(self._turns) - len(self._requests)

    def complete(self, request: ModelRequest) -> AssistantTurn:
        return self._turn(request, self._next(request))

    async def complete_async(self, request: ModelRequest) -> AssistantTurn:
        return self.complete(request)

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        for event in self._events(request, self._next(request)):
            yield event

    def _next(self, request: ModelRequest) -> AssistantTurn | StreamScript:
        with self._lock:
            index = len(self._requests)
            if index >= len(self._turns):
                raise AdapterError(
                    f"{self._name}: the script has {len(self._turns)} turn(s) and all were used; "
                    f"call number {index + 1} has no reply",
                    provider=self._name,
                )
            self._requests.append(request)
            return self._turns[index]


_R = TypeVar("_R")


def _wait(awaitable: Awaitable[_R]) -> _R:
    """The result of ``awaitable`` from synchronous code, with or without a running event loop."""

    import asyncio  # on first use: keeps importing this module cheap
    import concurrent.futures

    async def result() -> _R:
        return await awaitable

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(result())
    # This thread's loop is busy running our caller: run the function on a loop of its own.
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as worker:
        return worker.submit(asyncio.run, result()).result()


class FunctionAdapter(_RecordingAdapter):
    """Computes each reply with a function of the request (context, tools, choice).

    Replies without an explicit ``usage`` are charged an estimate, as with
    :class:`ScriptedAdapter`. The function may be ``async``; it returns what a
    script entry holds (a turn, a text answer, a :class:`StreamScript` or a
    list of stream parts).

    Every request is kept for :attr:`requests`. A long-lived stand-in model
    (a load test, a demo server) passes ``keep_requests=False``: nothing is
    kept, and :attr:`requests` stays empty.
    """

    def __init__(
        self,
        fn: Callable[[ModelRequest], Reply | Awaitable[Reply]],
        *,
        name: str = "function",
        model: str = "function",
        context_window: int | None = None,
        token_counter: TokenCounter | None = None,
        keep_requests: bool = True,
    ) -> None:
        super().__init__(name=name, model=model, context_window=context_window, token_counter=token_counter)
        self._fn = fn
        self._keep = keep_requests

    def complete(self, request: ModelRequest) -> AssistantTurn:
        reply = self._call(request)
        if inspect.isawaitable(reply):
            reply = _wait(reply)
        return self._turn(request, _as_reply(reply))

    async def complete_async(self, request: ModelRequest) -> AssistantTurn:
        reply = self._call(request)
        if inspect.isawaitable(reply):
            reply = await reply
        return self._turn(request, _as_reply(reply))

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        reply = self._call(request)
        if inspect.isawaitable(reply):
            reply = await reply
        for event in self._events(request, _as_reply(reply)):
            yield event

    def _call(self, request: ModelRequest) -> Reply | Awaitable[Reply]:
        if self._keep:
            with self._lock:
                self._requests.append(request)
        return self._fn(request)
