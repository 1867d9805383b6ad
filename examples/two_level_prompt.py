"""A two-level prompt: a parent section with a child that owns a tool.

Run: ``.venv/bin/python examples/two_level_prompt.py``. Prints the rendered text,
the tools on offer and their schemas, then the same prompt with the child
section disabled (its text and its tool disappear together).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from weakprompt import MarkdownSection, Prompt, PromptTemplate, ToolContext, ToolExample, ToolResult, tool


@dataclass(frozen=True)
class Task:
    customer: str
    allow_lookup: bool = True


@dataclass(frozen=True)
class LookupOrder:
    order_id: str = field(metadata={"description": "Order number, e.g. A-1001."})


@dataclass(frozen=True)
class OrderStatus:
    order_id: str
    status: str


@tool(
    examples=(
        ToolExample(
            description="Check one order",
            input=LookupOrder("A-1001"),
            output=OrderStatus("A-1001", "shipped"),
        ),
    )
)
def lookup_order(params: LookupOrder, *, context: ToolContext) -> ToolResult[OrderStatus]:
    """Look up the shipping status of an order."""
    return ToolResult.ok(OrderStatus(params.order_id, "shipped"), message="found")


template = PromptTemplate(
    ns="examples",
    key="support",
    sections=[
        MarkdownSection(
            title="Role",
            key="role",
            template="You help $customer with questions about their orders.",
            params_type=Task,
            children=[
                MarkdownSection(
                    title="Order lookup",
                    key="lookup",
                    template="Call `lookup_order` before answering any question about an order.",
                    params_type=Task,
                    enabled=lambda task: task.allow_lookup,
                    tools=[lookup_order],
                ),
            ],
        ),
        MarkdownSection(title="Style", key="style", template="Answer in two sentences at most."),
    ],
)


def main() -> None:
    prompt = Prompt(template).bind(Task(customer="Dana"))
    rendered = prompt.render()
    print(rendered.text)
    print()
    print("tools:", ", ".join(rendered.tool_names))
    for schema, digest in zip(rendered.tool_schemas, rendered.tool_hashes, strict=True):
        print(json.dumps(schema, indent=2, sort_keys=True))
        print("sha256:", digest)
    print()
    print("--- with the lookup section disabled ---")
    without = prompt.bind(Task(customer="Dana", allow_lookup=False)).render()
    print(without.text)
    print("tools:", ", ".join(without.tool_names) or "(none)")


if __name__ == "__main__":
    main()
