"""Usage of agents called as tools rolls up exactly, and a budget can cap one subtree."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from weakprompt import Agent, ConfigurationError, FunctionAdapter, ModelRequest
from weakprompt.adapters.testing import tool_call, tool_call_turn
from weakprompt.budget import Budget, BudgetTracker
from weakprompt.errors import BudgetExceededError, PromptEvaluationError
from weakprompt.messages import AssistantTurn, Usage
from weakprompt.tools import AnyTool


@attrs.frozen
class Node:
    """One agent of a generated tree: what each of its model calls costs, whether it fails, its children."""

    first: Usage
    last: Usage
    fails: bool
    children: tuple[Node, ...]


def _usage() -> st.SearchStrategy[Usage]:
    small = st.integers(min_value=0, max_value=1000)
    return st.builds(
        Usage,
        input_tokens=small,
        output_tokens=small,
        cached_input_tokens=st.integers(min_value=0, max_value=50),
        model_calls=st.just(1),
        reasoning_tokens=st.integers(min_value=0, max_value=50),
    )


def _nodes(depth: int) -> st.SearchStrategy[Node]:
    children = st.just(()) if depth == 0 else st.lists(_nodes(depth - 1), max_size=2).map(tuple)
    return st.builds(Node, first=_usage(), last=_usage(), fails=st.booleans(), children=children)


def _spent(node: Node) -> Usage:
    """What the leaves of ``node``'s subtree spent, added up: every model call that answered."""
    own = node.first if node.children else Usage()
    if not node.fails:
        own = own + node.last
    return sum((_spent(child) for child in node.children), own)


def _agent(node: Node, numbers: Iterator[int], *, budget: Budget | None = None) -> Agent[None]:
    """The agent of ``node``: calls all its children at once, then answers (or fails)."""
    tools: list[AnyTool] = [
        _agent(child, numbers).as_tool(name=f"child_{index}", description="Ask a sub-agent.")
        for index, child in enumerate(node.children)
    ]
    number = next(numbers)

    def model(request: ModelRequest) -> AssistantTurn:
        asked = any(message.role == "tool" for message in request.context.messages)
        if node.children and not asked:
            calls = [tool_call(t.name, {"input": "go"}, id=f"n{number}-{i}") for i, t in enumerate(tools)]
            return attrs.evolve(tool_call_turn(*calls), usage=node.first)
        if node.fails:
            raise ConfigurationError(f"agent {number} broke")
        return AssistantTurn(text=f"agent {number} done", usage=node.last)

    return Agent(FunctionAdapter(model), instructions=f"Agent {number}.", tools=tools, budget=budget)


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(root=_nodes(3).map(lambda n: attrs.evolve(n, fails=False)))
def test_the_roots_usage_is_exactly_the_sum_of_its_leaves_over_generated_trees(root: Node) -> None:
    """Depth up to 4 (root and three levels), parallel children, failed children at any level."""
    tracker = BudgetTracker(Budget())
    response = _agent(root, itertools.count()).run_sync("go", budget=tracker)
    expected = _spent(root)
    assert response.usage == expected
    assert tracker.usage == expected  # the budget above every subtree counts every leaf too


def _looping(calls: int) -> Agent[None]:
    """A child that makes ``calls`` model calls (tool calls to a sub-agent) before it answers."""
    leaf = Agent(
        FunctionAdapter(lambda _r: AssistantTurn(text="leaf", usage=Usage(input_tokens=1, model_calls=1))),
        instructions="Leaf.",
    )
    tool = leaf.as_tool(name="leaf", description="Ask the leaf.")
    made = itertools.count()

    def model(request: ModelRequest) -> AssistantTurn:
        if next(made) + 1 < calls:
            turn = tool_call_turn(tool_call("leaf", {"input": "x"}, id=f"l{len(request.context.messages)}"))
            return attrs.evolve(turn, usage=Usage(input_tokens=10, model_calls=1))
        return AssistantTurn(text="child done", usage=Usage(input_tokens=10, model_calls=1))

    return Agent(FunctionAdapter(model), instructions="Child.", tools=[tool])


def _calling(tool: AnyTool) -> Agent[None]:
    def model(request: ModelRequest) -> AssistantTurn:
        last = request.context.messages[-1]
        if last.role == "tool":
            read = f"parent read: {last.content}"
            return AssistantTurn(text=read, usage=Usage(input_tokens=1, model_calls=1))
        return tool_call_turn(tool_call(tool.name, {"input": "work"}, id="p1"))

    return Agent(FunctionAdapter(model), instructions="Parent.", tools=[tool])


def test_a_subtrees_own_budget_fails_that_call_readably_and_the_parent_goes_on() -> None:
    child = _looping(5).as_tool(name="kid", description="Ask the child.", budget=Budget(max_model_calls=3))
    response = _calling(child).run_sync("go")
    stopped = "Agent 'kid' stopped: its budget ran out (model calls 3 reached max_model_calls=3)"
    assert stopped in response.text
    (execution,) = response.tool_executions
    assert not execution.success
    # what the subtree spent before it stopped is counted: 2 calls of the child and 1 of its leaf (the
    # 3 the budget allows), then the parent's 2
    assert response.usage.model_calls == 5


def test_a_budget_above_the_subtree_stops_the_run_that_set_it() -> None:
    child = _looping(5).as_tool(name="kid", description="Ask the child.", budget=Budget(max_model_calls=50))
    with pytest.raises(PromptEvaluationError, match="max_model_calls=3") as raised:
        _calling(child).run_sync("go", budget=Budget(max_model_calls=3))
    cause: BaseException | None = raised.value
    while cause is not None and not isinstance(cause, BudgetExceededError):
        cause = cause.__cause__
    assert isinstance(cause, BudgetExceededError)


def test_a_subtree_tracker_counts_tool_calls_and_headroom_up_the_tree() -> None:
    from weakprompt.runtime.child_runs import SubtreeTracker

    top = BudgetTracker(Budget(max_total_tokens=100, max_tool_calls=5))
    middle = SubtreeTracker(Budget(max_total_tokens=30), top)
    unlimited = SubtreeTracker(None, middle)
    unlimited.record(Usage(input_tokens=20))
    unlimited.take_tool_calls(2)
    assert (top.usage, middle.usage) == (Usage(input_tokens=20), Usage(input_tokens=20))
    assert top.tool_calls == middle.tool_calls == 2
    assert unlimited.remaining_tokens() == 10
    assert SubtreeTracker(None, None).remaining_tokens() is None
    assert SubtreeTracker(Budget(max_total_tokens=7), None).remaining_tokens() == 7
    assert middle.own_exceeded() == ()
    unlimited.record(Usage(output_tokens=10))
    assert middle.own_exceeded() and not unlimited.own_exceeded()
    assert unlimited.exceeded()  # a budget above is exceeded: check() refuses here too


def test_a_child_agents_own_budget_default_caps_its_subtree_when_as_tool_gives_none() -> None:
    looping = _looping(5)
    capped = Agent(looping.adapter, template=looping.prompt, budget=Budget(max_model_calls=2))
    response = _calling(capped.as_tool(name="kid", description="Ask the child.")).run_sync("go")
    assert (
        "Agent 'kid' stopped: its budget ran out (model calls 2 reached max_model_calls=2)" in response.text
    )
