"""evaluate(...).output: typed by the prompt's output type, None without one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import assert_type

from weakprompt import (
    FunctionAdapter,
    MarkdownSection,
    ModelRequest,
    Prompt,
    PromptResponse,
    PromptTemplate,
    Session,
    evaluate,
)


@dataclass(frozen=True)
class Answer:
    text: str


def reply(request: ModelRequest) -> str:
    return '{"text": "hi"}'


SECTIONS = [MarkdownSection(title="Task", key="task", template="Say hi.")]

typed = PromptTemplate(ns="typing", key="typed", sections=SECTIONS, output_type=Answer)
assert_type(typed, PromptTemplate[Answer])
plain = PromptTemplate(ns="typing", key="plain", sections=SECTIONS)
assert_type(plain, PromptTemplate[None])
many = PromptTemplate(ns="typing", key="many", sections=SECTIONS, output_type=list[Answer])
assert_type(many, PromptTemplate[list[Answer]])

# A template typed Answer but built without an output type would answer None: refused.
wrong = PromptTemplate[Answer](ns="typing", key="wrong", sections=SECTIONS)  # pyright: ignore[reportCallIssue]


def run_typed() -> str:
    response = evaluate(Prompt(typed), adapter=FunctionAdapter(reply), session=Session())
    assert_type(response, PromptResponse[Answer])
    assert_type(response.output, Answer)
    return response.output.text  # no None check, no cast


def run_plain() -> str:
    response = evaluate(Prompt(plain), adapter=FunctionAdapter(reply), session=Session())
    assert_type(response.output, None)
    return response.text


def run_many() -> list[str]:
    response = evaluate(Prompt(many).bind(), adapter=FunctionAdapter(reply), session=Session())
    return [answer.text for answer in response.output]
