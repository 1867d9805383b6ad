"""A run's verdict: a run whose required tool failed never looks successful."""

from __future__ import annotations

import pytest

from weakprompt import Agent, MarkdownSection, Prompt, PromptTemplate, ScriptedAdapter, Store
from weakprompt.adapters.testing import tool_call, tool_call_turn
from weakprompt.runtime import FailedCall, RequiredToolFailed, RunEvent, RunFinished, RunVerdict
from weakprompt.tools import ToolResult, tool


@tool(required=True)
def charge(amount: int) -> ToolResult[str]:
    """Charge the card (the run depends on it)."""
    if amount > 100:
        return ToolResult.error("card declined")
    return ToolResult.ok(f"charged {amount}")


@tool
def lookup(name: str) -> str:
    """Look a name up (optional)."""
    raise KeyError(name)


@tool
def notify(text: str) -> str:
    """Tell someone."""
    return "sent"


def _agent(replies: list[object], **kwargs: object) -> Agent[None]:
    return Agent(
        ScriptedAdapter(replies),  # type: ignore[arg-type]
        instructions="Take the payment.",
        tools=[charge, lookup, notify],
        **kwargs,  # type: ignore[arg-type]
    )


def test_a_failed_required_call_fails_the_verdict_whatever_the_answer_says() -> None:
    events: list[RunEvent[None]] = []
    agent = _agent(
        [tool_call_turn(tool_call("charge", {"amount": 500}, id="c1")), "All done, payment taken!"],
        on_event=events.append,
    )
    response = agent.run_sync("pay 500")
    assert response.text == "All done, payment taken!"
    assert response.verdict == RunVerdict(
        ok=False,
        failed=(FailedCall("c1", "charge", response.tool_executions[0].message),),
        required=("charge",),
    )
    finished = events[-1]
    assert isinstance(finished, RunFinished) and finished.response.verdict.ok is False


def test_a_retry_that_succeeds_makes_the_verdict_ok() -> None:
    agent = _agent(
        [
            tool_call_turn(tool_call("charge", {"amount": 500})),
            tool_call_turn(tool_call("charge", {"amount": 50})),
            "charged 50 instead",
        ]
    )
    response = agent.run_sync("pay")
    assert response.failed_tool_calls == 1
    assert response.verdict.ok and response.verdict.failed == () and response.verdict.uncalled == ()


def test_a_run_with_no_required_tools_has_an_ok_verdict_even_when_a_tool_failed() -> None:
    agent = Agent(
        ScriptedAdapter([tool_call_turn(tool_call("lookup", {"name": "x"})), "not found"]),
        instructions="x",
        tools=[lookup],
    )
    response = agent.run_sync("find x")
    assert response.failed_tool_calls == 1 and response.verdict == RunVerdict()


def test_an_optional_tool_failing_beside_a_required_one_that_succeeded_is_ok() -> None:
    agent = _agent(
        [tool_call_turn(tool_call("lookup", {"name": "x"}), tool_call("charge", {"amount": 5})), "done"]
    )
    assert agent.run_sync("pay").verdict.ok


def test_a_required_section_makes_its_tools_and_its_childrens_required() -> None:
    template: PromptTemplate[None] = PromptTemplate(
        ns="tests/verdict",
        key="sections",
        sections=[
            MarkdownSection(
                title="Pay",
                key="pay",
                template="Pay.",
                tools=[lookup],
                required=True,
                children=[MarkdownSection(title="Tell", key="tell", template="Tell.", tools=[notify])],
            )
        ],
    )
    agent = Agent(
        ScriptedAdapter([tool_call_turn(tool_call("lookup", {"name": "x"}, id="c9")), "done"]),
        template=Prompt(template),
    )
    verdict = agent.run_sync("go").verdict
    assert not verdict.ok and verdict.required == ("lookup", "notify") and verdict.uncalled == ("notify",)
    assert verdict.failed[0].call_id == "c9" and verdict.failed[0].tool == "lookup"


def test_strict_verdict_raises_with_the_stored_response() -> None:
    store = Store.open("sqlite://")
    replies = [tool_call_turn(tool_call("charge", {"amount": 500})), "ok!"]
    agent = _agent(replies, store=store, strict_verdict=True)
    with pytest.raises(RequiredToolFailed, match="charge") as raised:
        agent.run_sync("pay", session="s")
    assert raised.value.verdict.ok is False and raised.value.response.text == "ok!"
    assert raised.value.response.head is not None


def test_strict_verdict_per_call_and_a_passing_run_answers() -> None:
    agent = _agent([tool_call_turn(tool_call("charge", {"amount": 5})), "paid"])
    assert agent.run_sync("pay", strict_verdict=True).text == "paid"
    failing = _agent([tool_call_turn(tool_call("charge", {"amount": 500})), "paid"])
    with pytest.raises(RequiredToolFailed):
        failing.run_sync("pay", strict_verdict=True)
