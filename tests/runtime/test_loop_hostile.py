"""Odd values from a model or a tool do not end a run: the loop stores them and the model reads why."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import pytest

from weakprompt.adapters.testing import ScriptedAdapter, tool_call, tool_call_turn
from weakprompt.messages import ToolCall
from weakprompt.prompt import MarkdownSection, Prompt, PromptTemplate
from weakprompt.runtime import evaluate
from weakprompt.session import Session
from weakprompt.store import Store
from weakprompt.tools import NoParams, ToolContext, ToolResult, tool
from weakprompt.transcript import Transcript


class IntRender:
    def render(self) -> int:
        return 5


@tool(name="odd", description="Renders as an int.")
def odd(params: NoParams, *, context: ToolContext) -> ToolResult[object]:
    return ToolResult.ok(IntRender())


@tool(name="broken_text", description="Returns text that is not valid Unicode.")
def broken_text(params: NoParams, *, context: ToolContext) -> ToolResult[None]:
    return ToolResult(message="bad \udc80 text")


@dataclass
class Value:
    x: float


@tool(name="mean", description="Returns NaN.")
def mean(params: Value, *, context: ToolContext) -> ToolResult[Value]:
    return ToolResult.ok(Value(math.nan))


def prompt() -> Prompt[None]:
    section = MarkdownSection(title="T", key="t", template="Use the tools.", tools=[odd, broken_text, mean])
    return Prompt(PromptTemplate(ns="tests/hostile", key="loop", name="hostile", sections=[section]))


@pytest.mark.parametrize(
    ("call", "reason"),
    [
        (tool_call("odd"), "rendered as int, not as text"),
        (tool_call("broken_text"), "lone surrogate (\\udc80) at character 4"),
        (tool_call("mean", {"x": 1.0}), "could not be rendered: ValueError: Out of range float"),
        (tool_call("mean", {"x": math.nan}), "refused at $.x: NaN is not a JSON number"),
        (tool_call("mean", '{"x": Infinity}'), "refused at $.x: Infinity is not a JSON number"),
        (tool_call("mean", {"x": object()}), "not valid JSON"),  # type: ignore[dict-item]
        (tool_call("mean", '{"x": "\udc80"}'), "refused at $.x: the string holds a lone surrogate"),
        (ToolCall(id="c\ud800", name="nope\udc80", arguments="{}"), "Unknown tool 'nope\\\\udc80'"),
    ],
    ids=[
        "render-int",
        "surrogate-result",
        "nan-result",
        "nan-mapping",
        "infinity-text",
        "object",
        "surrogate-arg",
        "surrogate-name",
    ],
)
def test_odd_values_become_failed_results_and_the_run_finishes(
    tmp_path: Path, call: ToolCall, reason: str
) -> None:
    adapter = ScriptedAdapter([tool_call_turn(call), "done"])
    with Store.open(tmp_path / "run.db") as store:
        response = evaluate(prompt(), adapter=adapter, session=Session(), store=store)
        assert response.text == "done" and response.failed_tool_calls == 1
        (execution,) = response.tool_executions
        assert reason in execution.message
        log = Transcript(store, response.transcript_id).log()
        assert [commit.role for commit in log] == ["system", "assistant", "tool", "assistant"]
        assert log[2].content.is_error and reason in log[2].content.content


class Liar:
    @property
    def __class__(self) -> type:  # type: ignore[override]
        raise RuntimeError("no class")


def test_storable_call_keeps_plain_calls_and_repairs_the_rest() -> None:
    plain = ToolCall(id="a", name="b", arguments="{}")
    assert plain.storable() is plain
    mapped = ToolCall(id="a", name="b", arguments={"x": [1]}).storable()
    # a mapping is recorded as its JSON text, and keeps its decode: nothing parses it again
    assert mapped.arguments == '{"x":[1]}' and mapped.decoded_arguments == {"x": [1]}
    odd = ToolCall(id=5, name=Liar(), arguments={"x": math.nan}).storable()  # type: ignore[arg-type]
    assert odd.id == "5" and "Liar" in odd.name and odd.arguments == '{"x":NaN}'
    escaped = ToolCall(id="i\ud800", name="n", arguments='{"x": "\udc80"}').storable()
    assert escaped.id == "i\\ud800" and escaped.arguments == '{"x": "\\udc80"}'
    assert "Liar" in str(ToolCall(id="a", name="b", arguments=Liar()).storable().arguments)  # type: ignore[arg-type]
