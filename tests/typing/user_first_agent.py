"""Everything a first agent uses comes from ``weakprompt`` with its precise type."""

from __future__ import annotations

from typing import assert_type

from weakprompt import (
    AssistantTurn,
    Budget,
    ConfigurationError,
    Deadline,
    FunctionAdapter,
    ModelRequest,
    ScriptedAdapter,
    Store,
    ToolCall,
    Transcript,
    Usage,
    WeakpromptError,
)


def scripted() -> ScriptedAdapter:
    call = ToolCall(id="call_1", name="lookup", arguments={"city": "Lisbon"})
    return ScriptedAdapter([AssistantTurn(tool_calls=(call,), finish_reason="tool_calls"), "done"])


def echo(request: ModelRequest) -> AssistantTurn:
    return AssistantTurn(text=request.context.messages[-1].content, usage=Usage(model_calls=1))


def transcript() -> Transcript:
    store = Store.open("sqlite://")
    return Transcript(store, "session-1")


adapter = FunctionAdapter(echo)
assert_type(Budget(max_total_tokens=1000), Budget)
assert_type(Deadline.after(5.0), Deadline)
assert issubclass(ConfigurationError, WeakpromptError)
