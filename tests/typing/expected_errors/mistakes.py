"""Deliberate mistakes: each marked line must be reported, with the rule named after ``expect:``."""

from __future__ import annotations

from dataclasses import dataclass

from weakprompt import (
    Agent,
    FunctionAdapter,
    MarkdownSection,
    Prompt,
    PromptTemplate,
    Session,
    Tool,
    ToolArguments,
    ToolResult,
    evaluate,
    tool,
)


@dataclass(frozen=True)
class Answer:
    text: str


SECTIONS = [MarkdownSection(title="Task", key="task", template="Say hi.")]
plain = Prompt(PromptTemplate(ns="typing", key="plain", sections=SECTIONS))
response = evaluate(plain, adapter=FunctionAdapter(lambda request: "hi"), session=Session())
answer: Answer = response.output  # expect: reportAssignmentType


@tool
def hello(name: str) -> ToolResult[int]:
    """Say hello."""
    return ToolResult.ok(len(name))


wrong_result: Tool[ToolArguments, str] = hello  # expect: reportAssignmentType


@tool
def shout(name: str) -> str:
    """Shout a name."""
    return name.upper()


wrong_plain_result: Tool[ToolArguments, int] = shout  # expect: reportAssignmentType


text_agent = Agent(FunctionAdapter(lambda request: "hi"), instructions="Say hi.")
agent_answer: Answer = text_agent.run_sync("hi").output  # expect: reportAssignmentType
typed_agent = Agent(FunctionAdapter(lambda request: "{}"), instructions="Answer.", output_type=Answer)
typed_agent.run_sync("hi", max_turns=None)  # expect: reportArgumentType


def check_text(answer: str) -> None:
    assert answer


typed = Prompt(PromptTemplate(ns="typing", key="typed", output_type=Answer, sections=SECTIONS))
# a validator of another type than the prompt's output
evaluate(
    typed,
    adapter=FunctionAdapter(lambda request: "{}"),
    session=Session(),
    output_validators=(check_text,),  # expect: reportArgumentType
)
