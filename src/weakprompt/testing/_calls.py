"""Tool calls a model might make against a rendered prompt: good, bad and unknown."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from hypothesis import strategies as st
from hypothesis.strategies import SearchStrategy

from weakprompt.jsontypes import JSONObject
from weakprompt.messages import ToolCall
from weakprompt.prompt import RenderedPrompt
from weakprompt.tools import AnyTool

from ._invalid import InvalidArguments, invalid_arguments_for
from ._values import arguments_for

__all__ = ["tool_calls_for", "tools_of"]

_CALL_IDS = st.integers(1, 10**6).map(lambda number: f"call_{number}")
_TOOL_NAME = re.compile(r"[a-z][a-z0-9_]{0,15}")


def tools_of(source: RenderedPrompt[Any] | Iterable[AnyTool]) -> tuple[AnyTool, ...]:
    """The tools a rendered prompt offers (its enabled sections' tools), or the given ones."""
    if isinstance(source, RenderedPrompt):
        return source.tools
    return tuple(source)


def tool_calls_for(
    source: RenderedPrompt[Any] | Iterable[AnyTool], *, invalid: bool = True, unknown: bool = True
) -> SearchStrategy[ToolCall]:
    """``ToolCall`` s across the offered tools.

    Valid arguments come as JSON text or as an already decoded mapping (both
    reach dispatchers in practice). ``invalid=True`` adds calls with
    arguments the tool must refuse; ``unknown=True`` adds calls naming a tool
    that is not on offer.
    """
    tools = tools_of(source)
    options: list[SearchStrategy[ToolCall]] = []
    for tool in tools:
        options.append(_valid_calls(tool))
        if invalid:
            options.append(_invalid_calls(tool))
    names = {tool.name for tool in tools}
    if unknown or not tools:
        options.append(_unknown_calls(names))
    return st.one_of(options)


def _valid_calls(tool: AnyTool) -> SearchStrategy[ToolCall]:
    def build(call_id: str, arguments: JSONObject, as_text: bool) -> ToolCall:
        return ToolCall(id=call_id, name=tool.name, arguments=json.dumps(arguments) if as_text else arguments)

    return st.builds(build, _CALL_IDS, arguments_for(tool), st.booleans())


def _invalid_calls(tool: AnyTool) -> SearchStrategy[ToolCall]:
    def build(call_id: str, bad: InvalidArguments) -> ToolCall:
        return ToolCall(id=call_id, name=tool.name, arguments=bad.text)

    return st.builds(build, _CALL_IDS, invalid_arguments_for(tool))


def _unknown_calls(known: set[str]) -> SearchStrategy[ToolCall]:
    names = st.from_regex(_TOOL_NAME, fullmatch=True).filter(lambda name: name not in known)
    arguments = st.sampled_from(("{}", '{"query": "x"}', ""))

    def build(call_id: str, name: str, text: str) -> ToolCall:
        return ToolCall(id=call_id, name=name, arguments=text)

    return st.builds(build, _CALL_IDS, names, arguments)
