"""A research agent that calls two sub-agents, one of which needs approval (no API key, no model download).

Run: ``.venv/bin/python examples/research_team.py [--auto-approve] [--db PATH]``.

What it shows (``docs/how-to/sub-agents.md``, ``specs/SUBAGENTS.md``):

- ``librarian.as_tool(...)`` and ``publisher.as_tool(...)``: two agents
  offered to a third as tools. The lead calls both in one reply, so they run
  at the same time, each as a run of its own in its own session of the same
  SQLite store (``lead/librarian:c1``, ``lead/publisher:c2``);
- the librarian's events reach the lead's stream wrapped in ``ChildEvent``,
  tagged with their path;
- the publisher's ``publish`` tool needs approval: the publisher pauses, so
  the lead pauses too. ``waiting_calls`` shows what waits, anywhere in the
  tree; the script decides it (as a person would) and ``lead.resume``
  continues the publisher where it stopped, then the lead. With
  ``--auto-approve`` an inline ``approve=`` callback decides instead, and the
  run never pauses;
- the lead's usage is the sum of every agent's.

The models are scripted (``FunctionAdapter``): swap in ``OpenAIAdapter(...)``
or any other adapter to run it for real.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from dataclasses import dataclass
from pathlib import Path

from weakprompt import (
    Agent,
    Approve,
    AssistantTurn,
    FunctionAdapter,
    ModelRequest,
    PausedRun,
    Store,
    ToolCall,
    tool,
)
from weakprompt.agent import waiting_calls
from weakprompt.events import ChildEvent, RunFinished
from weakprompt.runtime import Decision, PromptResponse


@dataclass(frozen=True)
class Brief:
    topic: str
    points: list[str]


@tool
def search_notes(query: str) -> list[str]:
    """Search the team's notes.

    Args:
        query: What to look for.
    """
    return [f"{query}: tides follow the moon", f"{query}: spring tides are the largest"]


@tool(requires_approval=True)
def publish(title: str) -> str:
    """Publish a post on the team's blog (a person approves it first).

    Args:
        title: The post's title.
    """
    return f"published '{title}'"


def _tool_results(request: ModelRequest) -> list[str]:
    return [m.content for m in request.context.messages if m.role == "tool"]


def librarian_model(request: ModelRequest) -> AssistantTurn | str:
    found = _tool_results(request)
    if not found:
        return AssistantTurn(tool_calls=(ToolCall("s1", "search_notes", {"query": "tides"}),))
    return '{"topic": "tides", "points": ["they follow the moon", "spring tides are the largest"]}'


def publisher_model(request: ModelRequest) -> AssistantTurn | str:
    done = _tool_results(request)
    if not done:
        return AssistantTurn(tool_calls=(ToolCall("p1", "publish", {"title": "Why tides happen"}),))
    return f"The post is out: {done[-1]}"


def lead_model(request: ModelRequest) -> AssistantTurn | str:
    read = _tool_results(request)
    if not read:
        return AssistantTurn(
            tool_calls=(
                ToolCall("c1", "librarian", {"input": "Find what our notes say about tides."}),
                ToolCall("c2", "publisher", {"input": "Publish a post titled 'Why tides happen'."}),
            )
        )
    return "Research done. Librarian: " + read[0] + " Publisher: " + read[1]


def build_lead(store: Store) -> Agent[None]:
    librarian = Agent(
        FunctionAdapter(librarian_model),
        instructions="You search the notes and report what they say.",
        tools=[search_notes],
        output_type=Brief,
    )
    publisher = Agent(
        FunctionAdapter(publisher_model),
        instructions="You publish posts on the team's blog.",
        tools=[publish],
    )
    return Agent(
        FunctionAdapter(lead_model),
        instructions="You lead research: ask the librarian, then have the publisher post the result.",
        tools=[
            librarian.as_tool(name="librarian", description="Searches the team's notes on a topic."),
            publisher.as_tool(name="publisher", description="Publishes a post on the blog."),
        ],
        store=store,
    )


def approve_all(paused: PausedRun) -> list[Decision]:
    """The inline approver of ``--auto-approve``: says yes to every waiting call, inside the run."""
    return [Approve(call.call_id, call.token) for call in paused.pending]


async def main(db: Path, auto_approve: bool) -> None:
    store = Store.open(f"sqlite:///{db}")
    lead = build_lead(store)
    overrides = {"approve": approve_all} if auto_approve else {}
    finished: PromptResponse[None] | None = None
    async with lead.stream("Research tides and publish a post.", session="lead", **overrides) as events:
        async for event in events:
            if isinstance(event, ChildEvent) and isinstance(event.event, RunFinished):
                child = event.event.response
                said = "waits for approval" if child.paused else f"answered: {child.text}"
                print(f"[{' > '.join(event.path)}] {said}")
            elif isinstance(event, RunFinished):
                finished = event.response  # the lead's own answer: its events are not wrapped
    assert finished is not None
    if finished.paused is None:  # --auto-approve: nothing waited
        print(finished.text)
        print(f"usage: {finished.usage.model_calls} model calls in the whole tree")
        return
    # The publisher waits for approval, so the lead waits too: find what waits, and decide it.
    for waiting in waiting_calls(lead, "lead"):
        print(f"waiting: {waiting.call.tool}({waiting.call.arguments}) in {' > '.join(waiting.path)}")
    decisions = [Approve(w.call.call_id, w.call.token) for w in waiting_calls(lead, "lead")]
    done = await lead.resume("lead", decisions, decided_by="editor")
    print(done.text)
    print(f"usage after the approval: {done.usage.model_calls} model calls")
    print("sessions:", ", ".join(sorted(store.session_ids())))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--auto-approve", action="store_true", help="approve inline instead of pausing")
    parser.add_argument("--db", type=Path, default=None, help="SQLite file (default: a temporary one)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        asyncio.run(main(args.db or Path(folder) / "research.db", args.auto_approve))
