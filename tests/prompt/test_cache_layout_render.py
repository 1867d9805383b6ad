"""Volatility decides the layout: stable text first, turn text out of the system message."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

from weakprompt.prompt import CacheLayoutWarning, MarkdownSection, Prompt, PromptTemplate
from weakprompt.tools import ToolContext, ToolResult, tool


@dataclass(frozen=True)
class State:
    step: int


@dataclass(frozen=True)
class Mode:
    on: bool


@dataclass(frozen=True)
class Q:
    q: str


@tool(name="lookup", description="Look something up.")
def lookup(params: Q, *, context: ToolContext) -> ToolResult[None]:
    return ToolResult(message=params.q)


@tool(name="ping", description="Ping.")
def ping(params: Q, *, context: ToolContext) -> ToolResult[None]:
    return ToolResult(message="pong")


def _template() -> PromptTemplate[None]:
    return PromptTemplate(
        ns="tests/cache",
        key="layout",
        sections=[
            MarkdownSection(
                title="State", key="state", template="Step $step.", params_type=State, volatility="turn"
            ),
            MarkdownSection(title="User", key="user", template="Session facts.", volatility="session"),
            MarkdownSection(title="Role", key="role", template="You help.", tools=[lookup]),
        ],
    )


def test_turn_section_renders_after_the_conversation_not_in_the_system_message() -> None:
    rendered = Prompt(_template()).bind(State(3)).render()
    assert rendered.text == "## 1. Role\n\nYou help.\n\n## 2. User\n\nSession facts."
    assert rendered.turn_text == "## 3. State\n\nStep 3."
    assert rendered.stable_text == "## 1. Role\n\nYou help."
    assert [s.path_text for s in rendered.sections] == ["role", "user", "state"]
    assert {s.key: s.volatility for s in rendered.sections}["state"] == "turn"


def test_only_the_turn_text_changes_when_the_turn_state_changes() -> None:
    prompt = Prompt(_template())
    first, second = prompt.bind(State(1)).render(), prompt.bind(State(2)).render()
    assert first.text == second.text
    assert first.cache_key == second.cache_key
    assert first.cache_key.startswith("tests/cache/layout@")
    assert first.turn_text != second.turn_text


def test_cache_key_follows_the_stable_text_and_the_tools() -> None:
    base = Prompt(_template()).bind(State(1)).render()
    changed = PromptTemplate(
        ns="tests/cache",
        key="layout",
        sections=[MarkdownSection(title="Role", key="role", template="You help a lot.", tools=[lookup])],
    )
    assert Prompt(changed).render().cache_key != base.cache_key


def test_a_template_without_volatile_sections_renders_as_before() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        template = PromptTemplate(
            ns="tests/cache",
            key="plain",
            sections=[
                MarkdownSection(
                    title="A",
                    key="a",
                    template="a",
                    children=[MarkdownSection(title="B", key="b", template="b")],
                ),
                MarkdownSection(title="C", key="c", template="c"),
            ],
        )
    rendered = Prompt(template).render()
    assert rendered.text == "## 1. A\n\na\n\n### 1.1. B\n\nb\n\n## 2. C\n\nc"
    assert rendered.turn_text == ""
    assert rendered.stable_chars == len(rendered.text)
    assert not template.has_turn_sections


def test_a_session_child_stays_under_its_stable_parent() -> None:
    template = PromptTemplate(
        ns="tests/cache",
        key="nested",
        sections=[
            MarkdownSection(
                title="A",
                key="a",
                template="a",
                children=[
                    MarkdownSection(title="S", key="s", template="s", volatility="session"),
                    MarkdownSection(title="B", key="b", template="b"),
                ],
            ),
        ],
    )
    rendered = Prompt(template).render()
    assert rendered.text == "## 1. A\n\na\n\n### 1.1. B\n\nb\n\n### 1.2. S\n\ns"
    assert rendered.stable_text == "## 1. A\n\na\n\n### 1.1. B\n\nb"


def test_turn_section_owning_tools_warns_naming_its_path() -> None:
    with pytest.warns(
        CacheLayoutWarning, match=r"section 'outer/live' is rendered every turn but owns tools"
    ):
        PromptTemplate(
            ns="tests/cache",
            key="warn",
            sections=[
                MarkdownSection(
                    title="Outer",
                    key="outer",
                    template="o",
                    children=[
                        MarkdownSection(
                            title="Live", key="live", template="l", volatility="turn", tools=[ping]
                        )
                    ],
                )
            ],
        )


def test_stable_child_under_turn_parent_warns_naming_its_path() -> None:
    with pytest.warns(
        CacheLayoutWarning, match=r"section 'plan/rules' is declared 'stable' but sits under a 'turn'"
    ):
        PromptTemplate(
            ns="tests/cache",
            key="warn2",
            sections=[
                MarkdownSection(
                    title="Plan",
                    key="plan",
                    template="p",
                    volatility="turn",
                    children=[MarkdownSection(title="Rules", key="rules", template="r")],
                )
            ],
        )


@given(on=st.booleans())
def test_tool_order_does_not_depend_on_which_turn_section_is_enabled(on: bool) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CacheLayoutWarning)
        template = PromptTemplate(
            ns="tests/cache",
            key="tools",
            sections=[
                MarkdownSection(
                    title="Live",
                    key="live",
                    template="l",
                    params_type=Mode,
                    volatility="turn",
                    enabled=lambda mode: mode.on,
                    tools=[ping],
                ),
                MarkdownSection(title="Role", key="role", template="r", tools=[lookup]),
            ],
        )
    rendered = Prompt(template).bind(Mode(on)).render()
    assert rendered.tool_names == (("lookup", "ping") if on else ("lookup",))
    assert rendered.tool_hashes[0] == Prompt(template).bind(Mode(not on)).render().tool_hashes[0]
