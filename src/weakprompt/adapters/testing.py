"""Adapters for tests: no network, no model, fully predictable replies.

They let users test their own prompts and tools through the real evaluation
loop: the loop cannot tell a scripted reply from a provider's.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Mapping, Sequence

from ..errors import AdapterError
from ..jsontypes import JSONValue
from ..messages import AssistantTurn, FinishReason, ToolCall, Usage
from ..model import ModelRequest
from ._support import AdapterIdentity

__all__ = [
    "FunctionAdapter",
    "ScriptedAdapter",
    "as_turn",
    "text_turn",
    "tool_call",
    "tool_call_turn",
]

_ONE_CALL = Usage(model_calls=1)
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


class _RecordingAdapter(AdapterIdentity):
    """Identity plus a thread-safe record of every request seen."""

    def __init__(self, *, name: str, model: str, context_window: int | None) -> None:
        super().__init__(name=name, model=model, context_window=context_window)
        self._lock = threading.Lock()
        self._requests: list[ModelRequest] = []

    @property
    def requests(self) -> tuple[ModelRequest, ...]:
        """Every request seen so far, oldest first."""
        with self._lock:
            return tuple(self._requests)


class ScriptedAdapter(_RecordingAdapter):
    """Replies with a fixed list of turns, in order, and records every request.

    Running past the end of the script raises :class:`AdapterError` naming how
    many turns the script had, so a loop that keeps going is easy to spot.
    """

    def __init__(
        self,
        turns: Sequence[AssistantTurn | str],
        *,
        name: str = "scripted",
        model: str = "scripted",
        context_window: int | None = None,
    ) -> None:
        super().__init__(name=name, model=model, context_window=context_window)
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
            return self._turns[index]


class FunctionAdapter(_RecordingAdapter):
    """Computes each reply with a function of the request (context, tools, choice)."""

    def __init__(
        self,
        fn: Callable[[ModelRequest], AssistantTurn | str],
        *,
        name: str = "function",
        model: str = "function",
        context_window: int | None = None,
    ) -> None:
        super().__init__(name=name, model=model, context_window=context_window)
        self._fn = fn

    def complete(self, request: ModelRequest) -> AssistantTurn:
        with self._lock:
            self._requests.append(request)
        return as_turn(self._fn(request))
