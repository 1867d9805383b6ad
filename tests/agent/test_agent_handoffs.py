"""Handoffs: the conversation passes to another agent (its prompt, tools, output type), recorded."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from weakprompt import (
    Agent,
    FunctionAdapter,
    MarkdownSection,
    ModelRequest,
    PromptTemplate,
    ScriptedAdapter,
    Session,
    Store,
)
from weakprompt.adapters.testing import tool_call, tool_call_turn
from weakprompt.agent import Handoff, without_tool_calls
from weakprompt.errors import ConfigurationError
from weakprompt.messages import AssistantTurn
from weakprompt.runtime.handoff_runs import HANDOFF_KEY
from weakprompt.tools import Tool, ToolContext, ToolResult, tool
from weakprompt.transcript import CommitOperation, Transcript


@tool
def refund(order: str) -> str:
    """Refund an order."""
    return f"refunded {order}"


@tool
def lookup_order(order: str) -> str:
    """Look an order up."""
    return f"order {order}: shipped"


def billing_model(request: ModelRequest) -> AssistantTurn | str:
    """The billing agent: refunds, then answers (it sees its own prompt and tools)."""
    assert request.context.messages[0].content.endswith("You handle billing.")
    assert [t.name for t in request.tools] == ["refund"]
    last = request.context.messages[-1]
    if last.role == "tool" and last.name == "refund":
        return "Refunded A1."
    return tool_call_turn(tool_call("refund", {"order": "A1"}, id="r1"))


def billing() -> Agent[None]:
    return Agent(
        FunctionAdapter(billing_model), instructions="You handle billing.", tools=[refund], name="billing"
    )


def triage(*targets: object, replies: list[object] | None = None, **kwargs: object) -> Agent[None]:
    script = replies or [
        tool_call_turn(tool_call("lookup_order", {"order": "A1"}, id="l1")),
        tool_call_turn(tool_call("transfer_to_billing", {"reason": "refund"}, id="t1")),
    ]
    return Agent(
        ScriptedAdapter(script),  # type: ignore[arg-type]
        instructions="You triage.",
        tools=[lookup_order],
        name="triage",
        handoffs=targets,  # type: ignore[arg-type]
        **kwargs,  # type: ignore[arg-type]
    )


def test_a_transfer_call_hands_the_session_to_the_target_and_the_system_edit_records_it(
    tmp_path: Path,
) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'h.db'}")
    session = Session()
    response = triage(billing(), store=store).run_sync("refund A1 please", session=session)
    assert response.text == "Refunded A1."
    assert response.turns == 4 and [e.event.name for e in response.tool_executions] == [
        "lookup_order",
        "transfer_to_billing",
        "refund",
    ]
    assert response.session is session and response.session_id == session.session_id
    log = Transcript(store, session.session_id).log()
    edits = [c for c in log if c.operation is CommitOperation.EDIT and c.role == "system"]
    (edit,) = edits
    handoff = edit.metadata[HANDOFF_KEY]
    assert handoff["from"] == "triage" and handoff["to"] == "billing" and handoff["call_id"] == "t1"
    transfer_result = next(c for c in log if c.role == "tool" and c.content.name == "transfer_to_billing")
    assert handoff["at"] == transfer_result.hash
    assert edit.text.endswith("You handle billing.")


def test_without_a_store_the_conversation_is_handed_over_as_history() -> None:
    seen: list[list[str]] = []

    def model(request: ModelRequest) -> str:
        seen.append([m.role for m in request.context.messages])
        return "billing here"

    target = Agent(FunctionAdapter(model), instructions="You handle billing.", name="billing")
    response = triage(target).run_sync("refund A1")
    assert response.text == "billing here"
    assert seen == [["system", "user", "assistant", "tool", "assistant", "tool"]]
    assert [m.role for m in response.messages] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
    ]


def test_an_input_filter_chooses_what_history_the_target_sees(tmp_path: Path) -> None:
    seen: list[list[str]] = []

    def model(request: ModelRequest) -> AssistantTurn | str:
        seen.append([m.role for m in request.context.messages])
        if request.context.messages[-1].role == "tool":
            return "done"
        return tool_call_turn(tool_call("refund", {"order": "A1"}))

    target = Agent(FunctionAdapter(model), instructions="Billing.", tools=[refund], name="billing")
    store = Store.open(f"sqlite:///{tmp_path / 'h.db'}")
    triage(Handoff(target, input_filter=without_tool_calls), store=store).run_sync("refund A1", session="s")
    # before the handoff only the user's message is kept; the target's own turns are all seen
    assert seen == [["system", "user"], ["system", "user", "assistant", "tool"]]


def test_a_filter_that_invents_messages_is_refused() -> None:
    from weakprompt.messages import Message

    target = Agent(ScriptedAdapter(["x"]), instructions="Billing.", name="billing")
    agent = triage(Handoff(target, input_filter=lambda messages: [Message("user", "made up")]))
    with pytest.raises(ConfigurationError, match="history filter"):
        agent.run_sync("refund A1")


def test_handoffs_chain_and_the_response_counts_every_agents_work() -> None:
    last = Agent(ScriptedAdapter(["final word"]), instructions="Last.", name="last")
    middle = Agent(
        ScriptedAdapter([tool_call_turn(tool_call("transfer_to_last", {}))]),
        instructions="Middle.",
        name="billing",
        handoffs=[last],
    )
    response = triage(middle).run_sync("go")
    assert response.text == "final word" and response.turns == 4
    assert response.usage.model_calls == 4


@dataclass(frozen=True)
class Ticket:
    team: str


def test_the_output_type_is_the_last_agents_and_the_targets_must_share_it() -> None:
    target = Agent(
        ScriptedAdapter(['{"team": "billing"}']), instructions="B.", output_type=Ticket, name="billing"
    )
    first = Agent(
        ScriptedAdapter([tool_call_turn(tool_call("transfer_to_billing", {}))]),
        instructions="Route.",
        output_type=Ticket,
        handoffs=[target],
    )
    assert first.run_sync("route me").output == Ticket("billing")
    with pytest.raises(ConfigurationError, match="share one"):
        Agent(ScriptedAdapter(["x"]), instructions="Route.", handoffs=[target])  # type: ignore[list-item]


def test_a_template_agent_offers_the_transfer_tool_in_its_own_section() -> None:
    handoff = Handoff(billing(), description="Billing questions.")
    template: PromptTemplate[None] = PromptTemplate(
        ns="tests/handoff",
        key="t",
        sections=[MarkdownSection(title="Route", key="route", template="Route.", tools=[handoff.tool])],
    )
    model = ScriptedAdapter([tool_call_turn(tool_call("transfer_to_billing", {}))])
    agent = Agent(model, template=template, handoffs=[handoff])
    assert agent.run_sync("refund").text == "Refunded A1."
    with pytest.raises(ConfigurationError, match=r"add the Handoff's \.tool"):
        bare = PromptTemplate(
            ns="tests/handoff", key="u", sections=[MarkdownSection(title="R", key="r", template="Route.")]
        )
        Agent(model, template=bare, handoffs=[handoff])


def test_bad_handoffs_are_refused_by_name() -> None:
    with pytest.raises(ConfigurationError, match=r"handoffs\[0\] is a str"):
        triage("billing")
    with pytest.raises(ConfigurationError, match="agent must be an Agent"):
        Handoff("billing")  # type: ignore[arg-type]


def test_a_run_that_answers_without_transferring_is_not_handed_on() -> None:
    agent = triage(billing(), replies=["I can answer that myself."])
    assert agent.run_sync("hi").text == "I can answer that myself."


def test_the_async_run_follows_a_handoff_too() -> None:
    import asyncio

    assert asyncio.run(triage(billing()).run("refund A1")).text == "Refunded A1."


def test_a_run_that_used_tools_then_answered_is_not_handed_on() -> None:
    replies = [tool_call_turn(tool_call("lookup_order", {"order": "A1"})), "It shipped."]
    assert triage(billing(), replies=replies).run_sync("where is A1?").text == "It shipped."


@dataclass(frozen=True)
class Nothing:
    pass


def _close(params: Nothing, *, context: ToolContext) -> ToolResult[None]:
    return ToolResult.ok(None, message="closed")


def test_another_tool_that_ends_the_run_is_not_a_handoff() -> None:
    closing = Tool(name="close_ticket", description="Close the ticket.", handler=_close, ends_run=True)
    agent = Agent(
        ScriptedAdapter([tool_call_turn(tool_call("close_ticket", {}))]),
        instructions="x",
        tools=[closing],
        handoffs=[billing()],
    )
    response = agent.run_sync("close it")
    assert response.turns == 1 and [e.event.name for e in response.tool_executions] == ["close_ticket"]


def test_a_filter_that_keeps_everything_changes_nothing(tmp_path: Path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'h.db'}")
    agent = triage(Handoff(billing(), input_filter=lambda messages: messages), store=store)
    assert agent.run_sync("refund A1", session="s").text == "Refunded A1."


@tool(required=True)
def charge(amount: int) -> str:
    """Charge (required)."""
    if amount > 100:
        raise ValueError("declined")
    return "charged"


def test_a_required_call_that_failed_before_the_handoff_is_recovered_by_the_targets_retry() -> None:
    retry = Agent(
        ScriptedAdapter([tool_call_turn(tool_call("charge", {"amount": 5})), "charged"]),
        instructions="Retry.",
        tools=[charge],
        name="billing",
    )
    first = Agent(
        ScriptedAdapter(
            [
                tool_call_turn(tool_call("charge", {"amount": 500})),
                tool_call_turn(tool_call("transfer_to_billing", {})),
            ]
        ),
        instructions="Charge.",
        tools=[charge],
        handoffs=[retry],
    )
    assert first.run_sync("pay").verdict.ok
    stuck = Agent(ScriptedAdapter(["cannot help"]), instructions="No.", name="billing")
    failing = Agent(
        ScriptedAdapter(
            [
                tool_call_turn(tool_call("charge", {"amount": 500}, id="c1")),
                tool_call_turn(tool_call("transfer_to_billing", {})),
            ]
        ),
        instructions="Charge.",
        tools=[charge],
        handoffs=[stuck],
    )
    verdict = failing.run_sync("pay").verdict
    assert not verdict.ok and verdict.failed[0].call_id == "c1" and verdict.required == ("charge",)
