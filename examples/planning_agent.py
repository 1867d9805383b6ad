"""An agent that keeps its todo list in the session with the planning tools.

Run: ``.venv/bin/python examples/planning_agent.py [--strategy react|plan_act_reflect|...] [--scripted]``.

What it shows:

- ``PlanningToolsSection`` added to a prompt next to the task section: its copy
  (for the chosen strategy) and its four tools render together;
- by default, ``evaluate()`` on the embedded local model (SmolLM2 through
  llama.cpp, no API key): the first turn forces ``planning_setup_plan`` (a
  135M model will not reliably pick a tool unprompted) and the plan the model
  wrote appears in ``session[Plan]``;
- with ``--scripted``, no model at all: a scripted adapter sends one turn with
  several planning calls (one of them wrong) to show that they apply in order
  and that the failed one changes nothing.

Exit status 0 when the plan ended up in the session, 1 otherwise.
"""

from __future__ import annotations

import argparse
import sys

from weakprompt import (
    ForceTool,
    MarkdownSection,
    Prompt,
    PromptTemplate,
    ScriptedAdapter,
    Session,
    WeakpromptError,
    evaluate,
)
from weakprompt.adapters.testing import text_turn, tool_call, tool_call_turn
from weakprompt.contrib.planning import Plan, PlanningStrategy, PlanningToolsSection
from weakprompt.runtime import ProviderAdapter, ToolChoice

TASK = "Plan how to get the flat ready for guests tonight: tidy, shop for dinner, cook."


def build_prompt(session: Session, strategy: PlanningStrategy) -> Prompt[None]:
    template: PromptTemplate[None] = PromptTemplate(
        ns="examples/planning",
        key="agent",
        sections=[
            MarkdownSection(
                title="Role",
                key="role",
                template="You are a careful assistant. Keep a plan for every task before you act on it.",
            ),
            PlanningToolsSection(session=session, strategy=strategy),
        ],
    )
    return Prompt(template)


def scripted_adapter() -> ScriptedAdapter:
    """What a capable model might send: several planning calls in one turn."""
    return ScriptedAdapter(
        [
            tool_call_turn(
                tool_call(
                    "planning_setup_plan",
                    {"objective": "Get the flat ready for guests", "initial_steps": ["Tidy", "Shop", "Cook"]},
                ),
                tool_call("planning_update_step", {"step_id": 1, "status": "done"}),
                tool_call("planning_update_step", {"step_id": 9, "status": "done"}),  # no such step
                tool_call("planning_update_step", {"step_id": 2, "status": "in_progress"}),
            ),
            text_turn("Tidying is done; now shopping."),
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--strategy",
        choices=[strategy.value for strategy in PlanningStrategy],
        default=PlanningStrategy.REACT.value,
    )
    parser.add_argument("--scripted", action="store_true", help="use a scripted adapter instead of the model")
    args = parser.parse_args(argv)

    session = Session()
    prompt = build_prompt(session, PlanningStrategy(args.strategy))
    print(prompt.render(session).text)
    print("=" * 72)

    adapter: ProviderAdapter
    choice: ToolChoice
    if args.scripted:
        adapter, choice = scripted_adapter(), "auto"
    else:
        from weakprompt import LocalAdapter

        adapter, choice = LocalAdapter(max_tokens=200), ForceTool("planning_setup_plan")
    try:
        response = evaluate(
            prompt, adapter=adapter, session=session, input=TASK, tool_choice=choice, max_turns=4
        )
    except WeakpromptError as error:
        print(f"evaluation failed: {error}", file=sys.stderr)
        return 1

    for execution in response.tool_executions:
        outcome = "ok" if execution.success else "FAILED"
        print(f"[{outcome}] {execution.event.name} {execution.event.arguments}")
        print("    " + execution.message.replace("\n", "\n    "))
    print(f"final answer: {response.text!r}")
    print("=" * 72)

    plan = session[Plan].latest()
    if plan is None:
        print("no plan in the session", file=sys.stderr)
        return 1
    print("session[Plan].latest():")
    print(plan.render())
    return 0


if __name__ == "__main__":
    sys.exit(main())
