"""A tree of agents for the nested-approval tests: a root that calls two sub-agents in one reply.

``scout`` looks something up (no approval); ``clerk`` files a report, which
needs approval. Every handler run and every model call is appended to a log
file, so a test can count them across processes.
"""

from __future__ import annotations

from pathlib import Path

from weakprompt import Agent, FunctionAdapter, ModelRequest, tool
from weakprompt.adapters.testing import tool_call, tool_call_turn
from weakprompt.messages import AssistantTurn


def note(log: Path, line: str) -> None:
    with log.open("a", encoding="utf-8") as out:
        out.write(line + "\n")


def counts(log: Path) -> dict[str, int]:
    """How many times each line was logged."""
    seen: dict[str, int] = {}
    for line in log.read_text(encoding="utf-8").splitlines() if log.exists() else ():
        seen[line] = seen.get(line, 0) + 1
    return seen


def _answered(request: ModelRequest) -> list[str]:
    # a plain -> str result reaches the model as JSON text: shown here without its quotes
    return [m.content.strip('"') for m in request.context.messages if m.role == "tool"]


def tree(log: Path) -> Agent[None]:
    """The root agent (its sub-agents inside), built the same way in every process."""

    @tool
    def lookup(topic: str) -> str:
        """Look a topic up."""
        note(log, "handler:lookup")
        return f"notes on {topic}"

    @tool(requires_approval=True)
    def file_report(title: str) -> str:
        """File a report (a person approves it first)."""
        note(log, "handler:file_report")
        return f"filed {title}"

    def scout_model(request: ModelRequest) -> AssistantTurn:
        note(log, "model:scout")
        read = _answered(request)
        if not read:
            return tool_call_turn(tool_call("lookup", {"topic": "tides"}, id="s1"))
        return AssistantTurn(text=f"scout: {read[-1]}")

    def clerk_model(request: ModelRequest) -> AssistantTurn:
        note(log, "model:clerk")
        read = _answered(request)
        if not read:
            return tool_call_turn(tool_call("file_report", {"title": "tides"}, id="k1"))
        return AssistantTurn(text=f"clerk: {read[-1]}")

    def root_model(request: ModelRequest) -> AssistantTurn:
        note(log, "model:root")
        read = _answered(request)
        if not read:
            return tool_call_turn(
                tool_call("scout", {"input": "research tides"}, id="r1"),
                tool_call("clerk", {"input": "file a report on tides"}, id="r2"),
            )
        return AssistantTurn(text="root: " + " | ".join(read))

    scout = Agent(FunctionAdapter(scout_model), instructions="You research.", tools=[lookup])
    clerk = Agent(FunctionAdapter(clerk_model), instructions="You file reports.", tools=[file_report])
    return Agent(
        FunctionAdapter(root_model),
        instructions="You plan.",
        tools=[
            scout.as_tool(name="scout", description="Research a topic."),
            clerk.as_tool(name="clerk", description="File a report."),
        ],
    )
