"""Adapters for tests: no network, no model, fully predictable replies.

They let users test their own prompts and tools through the real evaluation
loop: the loop cannot tell a scripted reply from a provider's. That includes
usage: a reply that does not state its usage is charged what the configured
token counter counts in the request and in the reply, so budgets and usage
reports behave as they would with a provider.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable, Mapping, Sequence

import attrs

from ..errors import AdapterError
from ..jsontypes import JSONValue
from ..messages import AssistantTurn, FinishReason, ToolCall, Usage
from ..model import ModelRequest
from ..tokens import DEFAULT_TOKEN_COUNTER, TokenCounter
from ._support import AdapterIdentity

__all__ = [
    "FunctionAdapter",
    "ScriptedAdapter",
    "as_turn",
    "estimate_usage",
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
        counter = self._token_counter or DEFAULT_TOKEN_COUNTER
        return attrs.evolve(turn, usage=estimate_usage(request, turn, counter))

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
        turns: Sequence[AssistantTurn | str],
        *,
        name: str = "scripted",
        model: str = "scripted",
        context_window: int | None = None,
        token_counter: TokenCounter | None = None,
    ) -> None:
        super().__init__(name=name, model=model, context_window=context_window, token_counter=token_counter)
        self._turns = tuple(as_turn(turn) for turn in turns)

    @property
    def remaining(self) -> int:
        """Turns not yet returned."""
        with self._lock:
            return len(self._turns) - len(self._requests)

    def complete(self, request: ModelRequest) -> AssistantTurn:
        with self._lock:
            index = len(self._requests)
            if index >= len(self._turns):
                raise AdapterError(
                    f"{self._name}: the script has {len(self._turns)} turn(s) and all were used; "
                    f"call number {index + 1} has no reply",
                    provider=self._name,
                )
            self._requests.append(request)
            turn = self._turns[index]
        return self._with_usage(request, turn)


class FunctionAdapter(_RecordingAdapter):
    """Computes each reply with a function of the request (context, tools, choice).

    Replies without an explicit ``usage`` are charged an estimate, as with
    :class:`ScriptedAdapter`.
    """

    def __init__(
        self,
        fn: Callable[[ModelRequest], AssistantTurn | str],
        *,
        name: str = "function",
        model: str = "function",
        context_window: int | None = None,
        token_counter: TokenCounter | None = None,
    ) -> None:
        super().__init__(name=name, model=model, context_window=context_window, token_counter=token_counter)
        self._fn = fn

    def complete(self, request: ModelRequest) -> AssistantTurn:
        with self._lock:
            self._requests.append(request)
        return self._with_usage(request, as_turn(self._fn(request)))
