"""Shared prompts, tools and helpers for the evaluation-loop and CLI tests."""

from __future__ import annotations

from dataclasses import dataclass, field

from weakprompt.events import EventBus
from weakprompt.prompt import MarkdownSection, Prompt, PromptTemplate, Visibility
from weakprompt.tools import ToolContext, ToolResult, tool


@dataclass(frozen=True)
class AddParams:
    a: int = field(metadata={"description": "first addend"})
    b: int = field(metadata={"description": "second addend"})


@dataclass(frozen=True)
class Sum:
    total: int


@tool(name="add", description="Add two integers.")
def add(params: AddParams, *, context: ToolContext) -> ToolResult[Sum]:
    return ToolResult.ok(Sum(params.a + params.b), message="added")


@dataclass(frozen=True)
class EchoParams:
    text: str


@tool(name="echo", description="Repeat a text back.")
def echo(params: EchoParams, *, context: ToolContext) -> ToolResult[None]:
    return ToolResult(message=f"echo: {params.text}")


@dataclass(frozen=True)
class SecretParams:
    name: str


@tool(name="secret_lookup", description="Look up a secret code by name.")
def secret_lookup(params: SecretParams, *, context: ToolContext) -> ToolResult[None]:
    return ToolResult(message=f"code for {params.name} is 42")


@dataclass(frozen=True)
class Answer:
    value: int
    note: str


def arithmetic_template(*, output: bool = False) -> PromptTemplate[Answer]:
    """Two sections with tools: ``add`` at the top, ``echo`` in a child section."""
    return PromptTemplate(
        ns="tests/loop",
        key="arith",
        name="arithmetic",
        output_type=Answer if output else None,
        sections=[
            MarkdownSection(
                title="Task",
                key="task",
                template="Add numbers with the add tool.",
                tools=[add],
                children=[
                    MarkdownSection(title="Echo", key="echo", template="Echo text when asked.", tools=[echo]),
                ],
            ),
        ],
    )


def arithmetic_prompt(*, output: bool = False) -> Prompt[Answer]:
    return Prompt(arithmetic_template(output=output))


def disclosure_prompt() -> Prompt[None]:
    """A summarized section hiding ``secret_lookup`` behind ``open_sections``."""
    template: PromptTemplate[None] = PromptTemplate(
        ns="tests/loop",
        key="disclosure",
        sections=[
            MarkdownSection(title="Task", key="task", template="Answer questions.", tools=[echo]),
            MarkdownSection(
                title="Secrets",
                key="secrets",
                template="FULL SECRET MANUAL: use secret_lookup for codes.",
                summary="How to look up secret codes.",
                visibility=Visibility.SUMMARY,
                tools=[secret_lookup],
            ),
        ],
    )
    return Prompt(template)


class Recorder:
    """Collects every event dispatched on a dispatcher, in order."""

    def __init__(self, dispatcher: EventBus) -> None:
        self.events: list[object] = []
        dispatcher.subscribe_all(self.events.append)

    def of(self, kind: type[object]) -> list[object]:
        return [e for e in self.events if isinstance(e, kind)]
