"""``Agent.as_tool``: an agent called by another runs as a child run in its own session of the same store."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

import pytest

from weakprompt import (
    Agent,
    ConfigurationError,
    FunctionAdapter,
    ModelRequest,
    ScriptedAdapter,
    Session,
    Store,
)
from weakprompt.adapters.testing import tool_call, tool_call_turn
from weakprompt.agent.as_tool import AgentInput
from weakprompt.events import ToolInvoked
from weakprompt.messages import AssistantTurn, ToolCall, Usage
from weakprompt.runtime import ToolDispatcher
from weakprompt.runtime.child_runs import CHILD_SESSION_KEY
from weakprompt.transcript import Transcript


@dataclass(frozen=True)
class Topic:
    subject: str


@dataclass(frozen=True)
class Finding:
    claim: str
    confidence: float


def _turn(text: str, tokens: int = 1) -> AssistantTurn:
    return AssistantTurn(text=text, usage=Usage(input_tokens=tokens, output_tokens=tokens, model_calls=1))


def _parent(
    child: Agent[object] | Agent[None], arguments: dict[str, object], **kwargs: object
) -> Agent[None]:
    """A parent that calls the child once (call id ``c1``), then answers with what it read."""

    def model(request: ModelRequest) -> AssistantTurn:
        last = request.context.messages[-1]
        if last.role == "tool":
            return _turn(f"parent read: {last.content}")
        return tool_call_turn(tool_call("kid", arguments, id="c1"))

    tool = child.as_tool(name="kid", description="Ask the child agent.")
    return Agent(FunctionAdapter(model), instructions="You delegate.", tools=[tool], **kwargs)  # type: ignore[arg-type]


def test_agent_tool_takes_an_input_and_gives_the_childs_text(tmp_path: Path) -> None:
    child = Agent(ScriptedAdapter([_turn("child answer")]), instructions="You answer.")
    tool = child.as_tool(name="kid", description="Ask the child agent.")
    assert tool.params_type is AgentInput
    assert tool.result_type is str
    assert tool.parameters_schema()["required"] == ["input"]
    store = Store.open(f"sqlite:///{tmp_path / 'runs.db'}")
    response = _parent(child, {"input": "what is up"}).run_sync("go", store=store, session="root")
    assert response.text == "parent read: child answer"  # the model reads the text as written
    (execution,) = response.tool_executions
    assert execution.result.value == "child answer"


def test_agent_tool_with_a_typed_output_and_params_type() -> None:
    child = Agent(
        ScriptedAdapter([_turn('{"claim": "water is wet", "confidence": 0.9}')]),
        instructions="Research $subject.",
        params_type=Topic,
        output_type=Finding,
    )
    tool = child.as_tool(name="kid", description="Research a topic.")
    assert tool.params_type is Topic
    assert tool.result_type is Finding
    response = _parent(child, {"subject": "water"}).run_sync("go")
    (execution,) = response.tool_executions
    assert execution.result.value == Finding("water is wet", 0.9)
    assert '"claim":"water is wet"' in response.text


def test_child_runs_in_its_own_session_of_the_parent_store_linked_from_the_result(tmp_path: Path) -> None:
    child = Agent(ScriptedAdapter([_turn("child answer")]), instructions="You answer.")
    store = Store.open(f"sqlite:///{tmp_path / 'runs.db'}")
    _parent(child, {"input": "hi"}).run_sync("go", store=store, session="root")
    assert sorted(store.session_ids()) == ["root", "root/kid:c1"]
    result = next(c for c in Transcript(store, "root").log() if c.content.role == "tool")
    assert result.metadata[CHILD_SESSION_KEY] == "root/kid:c1"
    child_messages = [c.content for c in Transcript(store, "root/kid:c1").log()]
    assert [m.role for m in child_messages] == ["system", "user", "assistant"]
    assert child_messages[1].content == "hi"


def test_reused_call_id_never_continues_an_earlier_calls_child_session(tmp_path: Path) -> None:
    """A model that sends ``c1`` every turn gets a new child conversation for each call."""
    child = Agent(ScriptedAdapter([_turn("first"), _turn("second")]), instructions="You answer.")
    replies = iter(
        [
            tool_call_turn(tool_call("kid", {"input": "one"}, id="c1")),
            tool_call_turn(tool_call("kid", {"input": "two"}, id="c1")),
            _turn("done"),
        ]
    )
    parent = Agent(
        FunctionAdapter(lambda _request: next(replies)),
        instructions="You delegate.",
        tools=[child.as_tool(name="kid", description="Ask the child agent.")],
    )
    store = Store.open(f"sqlite:///{tmp_path / 'runs.db'}")
    parent.run_sync("go", store=store, session="root")
    assert sorted(store.session_ids()) == ["root", "root/kid:c1", "root/kid:c1#2"]
    second = [c.content.content for c in Transcript(store, "root/kid:c1#2").log()]
    assert second[1:] == ["two", "second"]  # its own conversation, not the first call's continued


def test_failing_child_is_a_failed_result_the_parent_reads_with_one_event_and_state_rolled_back() -> None:
    def broken(_request: ModelRequest) -> AssistantTurn:
        raise ConfigurationError("the child's model is not configured")

    @dataclass(frozen=True)
    class Note:
        text: str

    child = Agent(FunctionAdapter(broken), instructions="You answer.")
    session = Session(session_id="root")
    session[Note].append(Note("before"))
    invoked: list[ToolInvoked] = []
    session.bus.subscribe(ToolInvoked, invoked.append)
    response = _parent(child, {"input": "hi"}).run_sync("go", session=session)
    assert response.text.startswith("parent read: Agent 'kid' failed:")
    assert "not configured" in response.text
    (execution,) = response.tool_executions
    assert not execution.success
    assert len(invoked) == 1
    assert session[Note].all() == (Note("before"),)


def test_agent_tool_outside_a_run_is_a_failed_result_naming_why() -> None:
    child = Agent(ScriptedAdapter([_turn("never")]), instructions="You answer.")
    tool = child.as_tool(name="kid", description="Ask the child agent.")
    dispatcher = ToolDispatcher([tool], session=Session())
    execution = asyncio.run(dispatcher.execute_async(ToolCall("c1", "kid", {"input": "hi"})))
    assert not execution.success
    assert "only inside a run" in execution.message


def test_agent_with_several_params_types_is_refused_as_a_tool() -> None:
    from weakprompt.prompt import MarkdownSection, PromptTemplate

    @dataclass(frozen=True)
    class Other:
        name: str

    template = PromptTemplate(
        ns="t",
        key="two",
        sections=[
            MarkdownSection(title="A", key="a", template="$subject", params_type=Topic),
            MarkdownSection(title="B", key="b", template="$name", params_type=Other),
        ],
    )
    agent = Agent(ScriptedAdapter([]), template=template)
    with pytest.raises(ConfigurationError, match="several params types"):
        agent.as_tool(name="kid", description="Two params.")
