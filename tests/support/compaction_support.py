"""Shared by the compaction tests and the benchmark: a request validity check and a long session."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from weakprompt.adapters.testing import FunctionAdapter, text_turn, tool_call, tool_call_turn
from weakprompt.messages import AssistantTurn, Message
from weakprompt.model import ModelRequest
from weakprompt.tools import ToolContext, ToolResult, tool


def request_problems(messages: Sequence[Message]) -> list[str]:
    """What a provider would refuse in ``messages``: unpaired calls/results, bad order, loose reasoning.

    The rules every supported provider shares: each tool result answers a
    call of the assistant message right before its run of results; each
    call is answered before the next non-tool message; no two assistant
    messages in a row; reasoning parts only in assistant messages.
    """
    problems: list[str] = []
    open_calls: set[str] = set()
    previous: Message | None = None
    for index, message in enumerate(messages):
        if message.role == "tool":
            if message.tool_call_id not in open_calls:
                problems.append(f"{index}: tool result {message.tool_call_id!r} without its call")
            open_calls.discard(message.tool_call_id or "")
        else:
            if open_calls:
                problems.append(f"{index}: calls {sorted(open_calls)} have no result")
                open_calls = set()
            if message.role == "assistant":
                if previous is not None and previous.role == "assistant":
                    problems.append(f"{index}: two assistant messages in a row")
                open_calls = {call.id for call in message.tool_calls}
        if message.role != "assistant" and any(p.kind == "reasoning" for p in message.parts):
            problems.append(f"{index}: reasoning outside an assistant message")
        previous = message
    if open_calls:
        problems.append(f"end: calls {sorted(open_calls)} have no result")
    return problems


@dataclass(frozen=True)
class LookupParams:
    topic: str
    size: int = 0  # characters of filler (0: the tool's default)


def lookup_text(topic: str, filler: int) -> str:
    """A long tool result with one planted fact in the middle of its filler."""
    pad = ("Background notes, nothing to keep here. " * (filler // 40 + 1))[:filler]
    fact = f"FACT {topic}: the code for {topic} is {topic.upper()}-{len(topic) * 7}"
    return f"{pad[: filler // 2]}\n{fact}\n{pad[filler // 2 :]}"


def make_lookup(filler: int = 1600):
    @tool(name="lookup", description="Look a topic up in the notes.")
    def lookup(params: LookupParams, *, context: ToolContext) -> ToolResult[None]:
        return ToolResult(message=lookup_text(params.topic, params.size or filler))

    return lookup


@dataclass
class LongSession:
    """A deterministic model: ``steps`` lookups, then a recall per fact topic, then an answer.

    ``recalled`` collects the text every ``recall_history`` result showed it.
    """

    steps: int
    recall_topics: tuple[str, ...] = ()
    calls: int = 0
    recalled: list[str] = field(default_factory=list[str])
    requests: list[ModelRequest] = field(default_factory=list[ModelRequest])

    def topic(self, step: int) -> str:
        return f"topic{step}"

    def __call__(self, request: ModelRequest) -> AssistantTurn:
        self.requests.append(request)
        last = request.context.messages[-1]
        if last.role == "tool" and last.name == "recall_history":
            self.recalled.append(last.content)
        step, self.calls = self.calls, self.calls + 1
        if step < self.steps:
            return tool_call_turn(tool_call("lookup", {"topic": self.topic(step)}), text=f"step {step}")
        index = step - self.steps
        if index < len(self.recall_topics):
            query = f"FACT {self.recall_topics[index]}:"
            return tool_call_turn(tool_call("recall_history", {"query": query}))
        return text_turn("done")


def summarizer() -> FunctionAdapter:
    """A cheap deterministic summarizer: the first lines of what it is asked to condense."""

    def answer(request: ModelRequest) -> AssistantTurn:
        text = request.context.messages[-1].content
        return text_turn("Earlier: " + " / ".join(line[:60] for line in text.splitlines()[2:8]))

    return FunctionAdapter(answer, name="cheap", model="summarizer")
