"""Structured output: schema exposure and parsing the model's final answer."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

from weakprompt.errors import OutputParseError
from weakprompt.prompt import MarkdownSection, Prompt, PromptTemplate, extract_json, parse_output


@dataclass(frozen=True)
class Answer:
    title: str
    score: int


def template(output_type: object) -> PromptTemplate[object]:
    return PromptTemplate(
        ns="t",
        key="out.put",
        sections=[MarkdownSection(title="Task", key="task", template="Answer.")],
        output_type=output_type,  # type: ignore[arg-type]
    )


def test_rendered_exposes_schema_and_parses_plain_json() -> None:
    rendered = Prompt(template(Answer)).render()
    assert rendered.output_type is Answer
    assert rendered.output_schema is not None
    assert rendered.output_schema["type"] == "object"
    assert rendered.output_name == "out_put_output"
    assert rendered.parse_output('{"title": "x", "score": 3}') == Answer("x", 3)


def test_parses_json_inside_a_fence_with_prose_around_it() -> None:
    text = 'Here you go:\n```json\n{"title": "t", "score": 1}\n```\nAnything else?'
    assert parse_output(Answer, text) == Answer("t", 1)


def test_parses_unlabelled_fence_and_embedded_object() -> None:
    assert parse_output(Answer, '```\n{"title": "u", "score": 2}\n```') == Answer("u", 2)
    assert parse_output(Answer, 'Result: {"title": "v", "score": 4}. Done') == Answer("v", 4)


def test_list_output() -> None:
    rendered = Prompt(template(list[Answer])).render()
    assert rendered.parse_output('[{"title": "a", "score": 1}]') == [Answer("a", 1)]
    assert rendered.parse_output('Sure: [{"title": "a", "score": 1}]') == [Answer("a", 1)]


def test_schema_mismatch_reports_paths() -> None:
    with pytest.raises(OutputParseError) as info:
        parse_output(Answer, '{"title": "x", "score": "high"}')
    assert "score" in str(info.value)
    assert "Answer" in str(info.value)
    with pytest.raises(OutputParseError, match=r"list\[.*Answer\]"):
        parse_output(list[Answer], '[{"title": 1, "score": 1}]')


def test_text_without_json_is_an_error() -> None:
    with pytest.raises(OutputParseError, match="contains no JSON value"):
        parse_output(Answer, "I could not decide. " * 20)


def test_prompt_without_output_type_refuses_to_parse() -> None:
    rendered = Prompt(
        PromptTemplate(ns="t", key="k", sections=[MarkdownSection(title="A", key="a", template="")])
    ).render()
    assert rendered.output_name is None
    with pytest.raises(OutputParseError, match="declares no output_type"):
        rendered.parse_output("{}")


@given(st.text(max_size=30), st.integers(-1000, 1000), st.sampled_from(["plain", "fence", "prose"]))
def test_round_trip_through_any_wrapping(title: str, score: int, wrapping: str) -> None:
    import json

    body = json.dumps({"title": title, "score": score})
    text = {"plain": body, "fence": f"```json\n{body}\n```", "prose": f"Answer below.\n{body}\nThanks."}[
        wrapping
    ]
    assert parse_output(Answer, text) == Answer(title, score)
    assert extract_json(text) == {"title": title, "score": score}
