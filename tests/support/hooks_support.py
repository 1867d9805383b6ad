"""Shared helpers for the tool-result hook, summarization and compression tests."""

from __future__ import annotations

from collections.abc import Callable

from weakprompt.adapters.testing import FunctionAdapter
from weakprompt.messages import AssistantTurn, ToolCall, Usage
from weakprompt.runtime import ModelRequest
from weakprompt.transcript import CommitInfo, Transcript

GREP_OUTPUT = "src/app.py:10:def main():\n" + "src/noise.py:1: unrelated line\n" * 60
READ_OUTPUT = "def main():\n    run()\n"


def summarizer(
    reply: str | Callable[[ModelRequest], AssistantTurn | str] = "app.py:10 defines main",
    *,
    name: str = "sum",
    model: str = "tiny",
) -> FunctionAdapter:
    """A FunctionAdapter answering every summary request with ``reply`` (text or function)."""
    fn: Callable[[ModelRequest], AssistantTurn | str]
    if callable(reply):
        fn = reply
    else:
        text = reply

        def fn(_: ModelRequest) -> AssistantTurn:
            return AssistantTurn(text=text, usage=Usage(input_tokens=50, output_tokens=7, model_calls=1))

    return FunctionAdapter(fn, name=name, model=model)


def user_text(request: ModelRequest) -> str:
    """The user message of a summary request (the one that carries the tool output)."""
    return request.context.messages[-1].content


def start_call(t: Transcript, *calls: ToolCall) -> CommitInfo:
    """A user question and an assistant turn asking for ``calls``."""
    t.system("You search code.")
    t.user("Where is main defined?")
    return t.assistant("", tool_calls=list(calls))


def agent_session(t: Transcript) -> dict[str, CommitInfo]:
    """Two grep results, one read result in a two-tool turn, and a final answer."""
    out: dict[str, CommitInfo] = {}
    out["call1"] = start_call(t, ToolCall("g1", "grep", '{"pattern": "def main"}'))
    out["grep1"] = t.tool_result("g1", "grep", GREP_OUTPUT)
    out["call2"] = t.assistant(
        "Checking both.",
        tool_calls=[ToolCall("g2", "grep", '{"pattern": "main("}'), ToolCall("r1", "read", '{"path": "a"}')],
    )
    out["grep2"] = t.tool_result("g2", "grep", "src/app.py:40:    main()\n" + "src/x.py:2: other\n" * 30)
    out["read1"] = t.tool_result("r1", "read", READ_OUTPUT * 20)
    out["answer"] = t.assistant("main is defined in src/app.py line 10.")
    return out
