"""Tool-result hooks inside evaluate(): default summarizer, usage, budget, events, rejection."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from hooks_support import GREP_OUTPUT, summarizer
from weakprompt.adapters.testing import FunctionAdapter, tool_call, tool_call_turn
from weakprompt.budget import Budget, BudgetTracker
from weakprompt.errors import BudgetExceededError
from weakprompt.events import ToolResultSummarized
from weakprompt.messages import AssistantTurn, Usage
from weakprompt.prompt import MarkdownSection, Prompt, PromptTemplate
from weakprompt.runtime import ModelRequest, ToolResultStored, evaluate
from weakprompt.session import Session
from weakprompt.store import Store
from weakprompt.tools import ToolContext, ToolResult, tool
from weakprompt.transcript import TOOL_SUMMARY_SYSTEM_PROMPT, PendingToolResult, Transcript


@dataclass(frozen=True)
class Pattern:
    pattern: str = ""
    n: int = 0


@tool(name="grep", description="Search the code base.")
def grep(params: Pattern, *, context: ToolContext) -> ToolResult[None]:
    return ToolResult(message=GREP_OUTPUT)


PROMPT = Prompt(
    PromptTemplate(
        ns="tests/hooks",
        key="loop",
        name="hooks-loop",
        sections=[MarkdownSection(title="Task", key="task", template="Find main.", tools=[grep])],
    )
)

AGENT_USAGE = Usage(input_tokens=10, output_tokens=2, model_calls=1)
SUMMARY_USAGE = Usage(input_tokens=100, output_tokens=5, model_calls=1)


class Agent:
    """Calls grep once, then answers with the last tool message it saw; also writes summaries."""

    def __init__(self) -> None:
        self.summary_requests: list[ModelRequest] = []
        self.agent_requests: list[ModelRequest] = []
        self.adapter = FunctionAdapter(self.reply, name="agent", model="m1")

    def reply(self, request: ModelRequest) -> AssistantTurn:
        messages = request.context.messages
        if messages[0].content == TOOL_SUMMARY_SYSTEM_PROMPT:
            self.summary_requests.append(request)
            return AssistantTurn(text="src/app.py:10 defines main", usage=SUMMARY_USAGE)
        self.agent_requests.append(request)
        if messages[-1].role == "user":
            return tool_call_turn(tool_call("grep", {"pattern": "main"}, id="g1"), usage=AGENT_USAGE)
        return AssistantTurn(text=f"saw: {messages[-1].content}", usage=AGENT_USAGE)


@pytest.fixture
def transcript() -> Iterator[Transcript]:
    with Store.open("sqlite://") as store:
        yield Transcript(store, "loop-hooks")


def test_the_evaluation_adapter_is_the_default_summarizer(transcript: Transcript) -> None:
    agent = Agent()
    session = Session()
    summarized: list[ToolResultSummarized] = []
    committed: list[ToolResultStored] = []
    session.bus.subscribe(ToolResultSummarized, summarized.append)
    session.bus.subscribe(ToolResultStored, committed.append)
    transcript.configure_tool_summarization(auto_threshold=100)
    tracker = BudgetTracker(Budget())

    response = evaluate(
        PROMPT, adapter=agent.adapter, session=session, input="where?", transcript=transcript, budget=tracker
    )

    assert len(agent.summary_requests) == 1
    assert GREP_OUTPUT in agent.summary_requests[0].context.messages[-1].content
    # the model's second turn read the summary, not the raw output
    assert response.text == "saw: src/app.py:10 defines main"
    assert response.usage == AGENT_USAGE + AGENT_USAGE + SUMMARY_USAGE
    assert tracker.usage == response.usage
    [event] = summarized
    assert event.summarizer == "agent:m1" and event.triggered_by == "tool_summarization:auto_threshold"
    assert committed[0].content == "src/app.py:10 defines main"
    assert committed[0].commit_hash == event.commit_hash
    result = transcript.find_tool_results()[0]
    assert transcript.get_blob(str(result.metadata["summarized_from"])).content == GREP_OUTPUT
    assert transcript.hooks.current_evaluation() is None


def test_a_configured_summarizer_still_counts_in_the_evaluation(transcript: Transcript) -> None:
    agent = Agent()
    own = summarizer("short")
    transcript.configure_tool_summarization(instructions={"grep": "paths"}, summarizer=own)
    response = evaluate(PROMPT, adapter=agent.adapter, session=Session(), input="q", transcript=transcript)
    assert agent.summary_requests == [] and len(own.requests) == 1
    assert response.text == "saw: short"
    assert response.usage == AGENT_USAGE + AGENT_USAGE + Usage(
        input_tokens=50, output_tokens=7, model_calls=1
    )


def test_summaries_spend_the_evaluation_budget(transcript: Transcript) -> None:
    agent = Agent()
    transcript.configure_tool_summarization(auto_threshold=100)
    with pytest.raises(BudgetExceededError, match="model calls 2 reached max_model_calls=2"):
        evaluate(
            PROMPT,
            adapter=agent.adapter,
            session=Session(),
            input="q",
            transcript=transcript,
            budget=Budget(max_model_calls=2),
        )
    assert len(agent.summary_requests) == 1 and len(agent.agent_requests) == 1
    assert transcript.hooks.current_evaluation() is None  # unbound even when the evaluation fails


def test_a_rejected_result_is_answered_with_a_placeholder(transcript: Transcript) -> None:
    agent = Agent()
    committed: list[ToolResultStored] = []
    session = Session()
    session.bus.subscribe(ToolResultStored, committed.append)

    def refuse(pending: PendingToolResult) -> None:
        pending.reject("too noisy")

    transcript.on("tool_result", refuse)
    response = evaluate(PROMPT, adapter=agent.adapter, session=session, input="q", transcript=transcript)
    expected = "The result of this grep call was withheld: too noisy."
    assert response.text == f"saw: {expected}"
    [result] = transcript.find_tool_results()
    assert (result.content.tool_call_id, result.content.is_error) == ("g1", True)
    assert result.metadata["withheld"] is True
    assert str(result.metadata["triggered_by"]).endswith("refuse")
    assert (committed[0].content, committed[0].is_error) == (expected, True)
    assert GREP_OUTPUT not in [c.content.content for c in transcript.log()]


def test_hooks_see_what_the_output_pipeline_would_commit(transcript: Transcript) -> None:
    big = "\n".join(f"line {i:05d} of a very long listing" for i in range(2000))  # over 12288 bytes
    outputs = iter([GREP_OUTPUT, big])
    agent = Agent()

    def reply(request: ModelRequest) -> AssistantTurn:
        messages = request.context.messages
        if messages[0].content == TOOL_SUMMARY_SYSTEM_PROMPT:
            return agent.reply(request)
        tool_turns = sum(1 for m in messages if m.role == "tool")
        if tool_turns < 2:
            return tool_call_turn(
                tool_call("fetch", {"n": tool_turns}, id=f"f{tool_turns}"), usage=AGENT_USAGE
            )
        return AssistantTurn(text="done", usage=AGENT_USAGE)

    @tool(name="fetch", description="Fetch the next output.")
    def fetch(params: Pattern, *, context: ToolContext) -> ToolResult[None]:
        return ToolResult(message=next(outputs))

    prompt = Prompt(
        PromptTemplate(
            ns="tests/hooks",
            key="pipeline",
            name="hooks-pipeline",
            sections=[MarkdownSection(title="Task", key="task", template="Fetch twice.", tools=[fetch])],
        )
    )
    transcript.configure_tool_summarization(auto_threshold=100)
    adapter = FunctionAdapter(reply, name="agent", model="m1")
    evaluate(prompt, adapter=adapter, session=Session(), input="go", transcript=transcript)

    first, second = transcript.find_tool_results(name="fetch")
    # inline (under the byte cap) and long: summarized, and still linked to its stored output
    assert first.content.content == "src/app.py:10 defines main"
    assert transcript.get_blob(str(first.metadata["summarized_from"])).content == GREP_OUTPUT
    assert isinstance(first.metadata["stored_output"], dict)
    # oversized: the model must keep the handle message, so the hook leaves it alone
    assert 'tool_output(handle = "' in second.content.content
    assert "summarized_from" not in second.metadata
    assert len(agent.summary_requests) == 1
