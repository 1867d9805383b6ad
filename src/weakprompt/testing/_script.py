"""Scripted models: write down what the "model" does, or let hypothesis draw it.

``script().call(add_note, {"text": "hi"}).answer("done")`` reads as the
conversation it produces. ``scripts_for(rendered)`` draws such scripts
(calls with valid generated arguments, then a final answer of the prompt's
output type) so a test can run the real evaluation loop over many of them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import attrs
from hypothesis import strategies as st
from hypothesis.strategies import DrawFn, SearchStrategy

from weakprompt.adapters.testing import ScriptedAdapter, text_turn, tool_call_turn
from weakprompt.jsontypes import JSONValue
from weakprompt.messages import AssistantTurn, ToolCall, Usage
from weakprompt.prompt import RenderedPrompt
from weakprompt.serde import dump
from weakprompt.tokens import TokenCounter
from weakprompt.tools import AnyTool

from ._calls import tool_calls_for, tools_of
from ._values import values_for

__all__ = ["Script", "script", "scripts_for"]


@attrs.frozen
class Script:
    """An immutable list of model turns; every method returns a longer script."""

    turns: tuple[AssistantTurn, ...] = ()

    def __len__(self) -> int:
        return len(self.turns)

    def __iter__(self) -> Iterator[AssistantTurn]:
        return iter(self.turns)

    @property
    def call_count(self) -> int:
        return sum(len(turn.tool_calls) for turn in self.turns)

    def call(
        self,
        tool: AnyTool | str,
        args: object = None,
        *,
        id: str | None = None,
        text: str = "",
        usage: Usage | None = None,
    ) -> Script:
        """A turn in which the model calls ``tool`` once.

        ``args`` is a params object (dumped with serde), a mapping, raw JSON
        text (possibly broken, to test refusals) or ``None`` for ``{}``.
        """
        return self.calls(self._call(tool, args, id), text=text, usage=usage)

    def calls(self, *calls: ToolCall, text: str = "", usage: Usage | None = None) -> Script:
        """A turn with several tool calls at once (see :meth:`tool_call`)."""
        # Without usage= the adapter estimates it from the request and the reply.
        turn = (
            tool_call_turn(*calls, text=text)
            if usage is None
            else tool_call_turn(*calls, text=text, usage=usage)
        )
        return self._add(turn)

    def tool_call(self, tool: AnyTool | str, args: object = None, *, id: str | None = None) -> ToolCall:
        """One call for :meth:`calls`, numbered after the calls already in the script."""
        return self._call(tool, args, id)

    def answer(self, output: object, *, usage: Usage | None = None) -> Script:
        """The final answer: text as is, anything else as serde-dumped JSON."""
        text = output if isinstance(output, str) else json.dumps(dump(output), ensure_ascii=False)
        return self._add(text_turn(text) if usage is None else text_turn(text, usage=usage))

    def then(self, turn: AssistantTurn) -> Script:
        """Any hand-made turn."""
        return self._add(turn)

    def adapter(
        self,
        *,
        name: str = "scripted",
        model: str = "scripted",
        context_window: int | None = None,
        token_counter: TokenCounter | None = None,
    ) -> ScriptedAdapter:
        """A :class:`ScriptedAdapter` that plays this script."""
        return ScriptedAdapter(
            self.turns, name=name, model=model, context_window=context_window, token_counter=token_counter
        )

    def _add(self, turn: AssistantTurn) -> Script:
        return Script((*self.turns, turn))

    def _call(self, tool: AnyTool | str, args: object, call_id: str | None) -> ToolCall:
        name = tool if isinstance(tool, str) else tool.name
        return ToolCall(
            id=call_id if call_id is not None else f"call_{self.call_count + 1}",
            name=name,
            arguments=_arguments(args),
        )


def script(*turns: AssistantTurn) -> Script:
    """Start a script (optionally with hand-made turns)."""
    return Script(turns)


def _arguments(args: object) -> str | Mapping[str, JSONValue]:
    if args is None:
        return {}
    if isinstance(args, str):
        return args
    data = dump(args)
    if not isinstance(data, dict):
        raise TypeError(f"tool arguments must be an object, got {type(args).__name__}: {args!r}")
    return data


def scripts_for(
    source: RenderedPrompt[Any] | Iterable[AnyTool],
    *,
    max_calls: int = 3,
    answers: SearchStrategy[str] | None = None,
    invalid: bool = False,
) -> SearchStrategy[Script]:
    """Scripts that call offered tools up to ``max_calls`` times, then answer.

    Calls carry valid generated arguments (``invalid=True`` mixes in bad
    arguments and unknown tool names). The answer is drawn from ``answers``,
    else it is a generated value of the rendered prompt's output type as
    JSON, else short text.
    """
    tools = tools_of(source)
    calls = tool_calls_for(tools, invalid=invalid, unknown=invalid) if tools else st.nothing()
    if answers is None:
        output_type = source.output_type if isinstance(source, RenderedPrompt) else None
        answers = (
            values_for(output_type).map(_as_json_text) if output_type is not None else st.text(max_size=40)
        )
    return _scripts(st.lists(calls, max_size=max_calls if tools else 0), answers)


def _as_json_text(value: object) -> str:
    return json.dumps(dump(value), ensure_ascii=False)


@st.composite
def _scripts(draw: DrawFn, calls: SearchStrategy[list[ToolCall]], answers: SearchStrategy[str]) -> Script:
    built = script()
    for call in draw(calls):
        built = built.call(call.name, call.arguments)
    return built.answer(draw(answers))
