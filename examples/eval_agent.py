"""Evaluate a small agent against a dataset, then compare two versions of its prompt; no key needed.

The agent answers questions about orders with a typed ``Answer``; its model
is a plain function standing in for a real one (swap in any adapter). The
dataset's cases expect an answer and check the tool trajectory (the order
was looked up, nothing was cancelled); an LLM judge (a function model too)
grades the wording. Prompt A says to look orders up; prompt B says to answer
from memory, and the comparison shows which cases that breaks.

Run: ``python examples/eval_agent.py [--db evals.db]``. The same runs from
the command line: ``weakprompt eval examples/eval_agent.py:dataset
examples/eval_agent.py:agent_a --db evals.db``.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass

from weakprompt import Agent, AssistantTurn, FunctionAdapter, ModelRequest, Store, tool
from weakprompt.adapters.testing import text_turn, tool_call, tool_call_turn
from weakprompt.evals import (
    Called,
    Case,
    Dataset,
    ExpectedOutput,
    LLMJudge,
    MaxTurns,
    NeverCalled,
    compare_experiments,
    format_comparison,
    format_report,
    run_experiment_sync,
)

ORDERS = {"A-1": "shipped", "A-2": "delivered", "A-3": "processing"}
GUESSES = {"A-1": "shipped", "A-2": "shipped", "A-3": "shipped"}  # what B's "memory" says


@dataclass(frozen=True)
class Answer:
    order_id: str
    status: str


@tool
def lookup_order(order_id: str) -> str:
    """The status of an order."""
    return ORDERS.get(order_id, "unknown")


@tool
def cancel_order(order_id: str) -> str:
    """Cancel an order (never needed to answer a question)."""
    return "cancelled"


def support_model(request: ModelRequest) -> AssistantTurn:
    """Looks the order up when the instructions say so; otherwise answers from its 'memory'."""
    messages = request.context.messages
    order_id = next(m.content for m in messages if m.role == "user").split()[-1].rstrip("?")
    looks_up = "Look every order up" in messages[0].content
    if looks_up and messages[-1].role == "user":
        return tool_call_turn(tool_call("lookup_order", {"order_id": order_id}))
    status = messages[-1].content.strip('"') if looks_up else GUESSES.get(order_id, "unknown")
    return text_turn(json.dumps({"order_id": order_id, "status": status}))


def judge_model(request: ModelRequest) -> str:
    """A stand-in judge: passes an answer that names a known status."""
    said = request.context.messages[-1].content
    known = any(f'"{status}"' in said for status in set(ORDERS.values()))
    reason = "names a status" if known else "no status named"
    return json.dumps({"passed": known, "score": 1.0 if known else 0.0, "reason": reason})


def make_agent(instructions: str) -> Agent[Answer]:
    return Agent(
        FunctionAdapter(support_model),
        instructions=instructions,
        tools=[lookup_order, cancel_order],
        output_type=Answer,
    )


def agent_a() -> Agent[Answer]:
    return make_agent("You answer questions about orders. Look every order up before answering.")


def agent_b() -> Agent[Answer]:
    return make_agent("You answer questions about orders from what you remember.")


def dataset() -> Dataset[object, Answer]:
    judge = LLMJudge(FunctionAdapter(judge_model), rubric="The answer names the order's status.")
    return Dataset(
        name="orders",
        cases=[
            Case(
                name=f"status of {order_id}",
                input=f"Where is my order {order_id}?",
                expected=Answer(order_id, status),
                evaluators=[Called("lookup_order", {"order_id": order_id})],
                metadata={"order": order_id},
            )
            for order_id, status in ORDERS.items()
        ],
        evaluators=[ExpectedOutput(), NeverCalled("cancel_order"), MaxTurns(3), judge],
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", default="sqlite://", help="where the results go (default: in memory)")
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    data = dataset()
    with Store.open(args.db) as store:
        a = run_experiment_sync(agent_a(), data, store=store, name="prompt A", repeat=args.repeat)
        print(format_report(a))
        print()
        b = run_experiment_sync(agent_b(), data, store=store, name="prompt B", repeat=args.repeat)
        print(format_report(b))
        print()
        print(format_comparison(compare_experiments(a, b)))
        run = a.runs[0]
        print(f"\nthe first run of {run.case_name!r} is session {run.session_id!r} in the store")


if __name__ == "__main__":
    main()
