"""Progressive disclosure: summarized sections and the open_sections tool."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from weakprompt.errors import PromptRenderError, VisibilityExpansionRequired
from weakprompt.prompt import (
    OPEN_SECTIONS_TOOL,
    MarkdownSection,
    OpenSectionsParams,
    Prompt,
    PromptTemplate,
    Visibility,
)
from weakprompt.session import Session
from weakprompt.tools import Tool, ToolContext, ToolResult


@dataclass(frozen=True)
class Query:
    text: str


def grep(params: Query, *, context: ToolContext) -> ToolResult[None]:
    return ToolResult.ok(None)


def make_prompt() -> Prompt[None]:
    advanced = MarkdownSection(
        title="Advanced search",
        key="advanced",
        template="Full manual for searching.",
        summary="How to run advanced searches.",
        visibility=Visibility.SUMMARY,
        tools=[Tool(name="grep", description="Search files.", handler=grep)],
        children=[
            MarkdownSection(
                title="Regex",
                key="regex",
                template="Regex details.",
                tools=[Tool(name="regex_grep", description="Regex search.", handler=grep)],
            )
        ],
    )
    template = PromptTemplate(
        ns="t",
        key="disclosure",
        sections=[
            MarkdownSection(title="Basics", key="basics", template="Be helpful.", children=[advanced]),
            MarkdownSection(title="End", key="end", template="Bye."),
        ],
    )
    return Prompt(template)


def call_open_sections(rendered_tool: Tool[OpenSectionsParams, None], keys: list[str]) -> ToolResult[None]:
    context = ToolContext(session=Session())
    return rendered_tool.handler(
        OpenSectionsParams(section_keys=keys, reason="need details"), context=context
    )


def test_summarized_section_shows_summary_without_children_or_tools() -> None:
    rendered = make_prompt().render()
    assert "How to run advanced searches." in rendered.text
    assert 'section_keys=["advanced"]' in rendered.text
    assert "Full manual" not in rendered.text
    assert "Regex details." not in rendered.text
    assert rendered.tool_names == (OPEN_SECTIONS_TOOL,)
    assert rendered.summarized_keys == ("advanced",)
    assert [(s.number, s.summarized) for s in rendered.sections] == [
        ("1", False),
        ("1.1", True),
        ("2", False),
    ]


def test_open_sections_raises_expansion_and_rerender_includes_children() -> None:
    prompt = make_prompt()
    rendered = prompt.render()
    open_tool = rendered.tool_by_name(OPEN_SECTIONS_TOOL)
    assert open_tool is not None
    with pytest.raises(VisibilityExpansionRequired) as info:
        call_open_sections(open_tool, ["advanced", "advanced"])
    assert info.value.section_keys == ("advanced",)
    assert info.value.reason == "need details"

    expanded = prompt.with_expanded(info.value.section_keys).render()
    assert "Full manual for searching." in expanded.text
    assert "Regex details." in expanded.text
    assert "How to run advanced searches." not in expanded.text
    assert expanded.tool_names == ("grep", "regex_grep")
    assert expanded.summarized_keys == ()
    assert expanded.expanded_keys == frozenset({"advanced"})
    # The per-call form gives the same render and leaves the prompt unchanged.
    assert prompt.render(expanded=["advanced"]).text == expanded.text
    assert prompt.expanded == frozenset()


def test_unknown_key_is_a_failed_result_listing_valid_keys() -> None:
    open_tool = make_prompt().render().tool_by_name(OPEN_SECTIONS_TOOL)
    assert open_tool is not None
    result = call_open_sections(open_tool, ["advanced", "nope"])
    assert not result.success
    assert "unknown section key(s): nope" in result.message
    assert "advanced" in result.message.split("open:")[1]
    empty = call_open_sections(open_tool, [])
    assert not empty.success and "no section keys" in empty.message


def test_open_sections_schema_is_stable_and_strict_about_fields() -> None:
    first = make_prompt().render()
    second = make_prompt().render()
    assert first.tool_hashes == second.tool_hashes
    schema = first.tool_schema(OPEN_SECTIONS_TOOL)
    assert schema is not None
    params = schema["parameters"]
    assert isinstance(params, dict)
    assert set(params["properties"]) == {"section_keys", "reason"}  # type: ignore[arg-type]


def test_expanding_unknown_keys_is_an_error() -> None:
    prompt = make_prompt()
    with pytest.raises(PromptRenderError, match="cannot expand unknown section key"):
        prompt.with_expanded(["basics"])
    with pytest.raises(PromptRenderError, match="sections with a summary: advanced"):
        prompt.render(expanded=["zzz"])


def test_summary_sections_with_full_visibility_render_fully() -> None:
    template = PromptTemplate(
        ns="t",
        key="full",
        sections=[MarkdownSection(title="A", key="a", template="long text", summary="short")],
    )
    rendered = Prompt(template).render()
    assert "long text" in rendered.text
    assert rendered.tools == ()


def test_through_the_real_dispatcher_expansion_is_raised_and_unknown_keys_fail_softly() -> None:
    import json

    from weakprompt.messages import ToolCall
    from weakprompt.runtime import ToolDispatcher

    prompt = make_prompt()
    rendered = prompt.render()
    dispatcher = ToolDispatcher(rendered.tools, session=Session(), prompt=prompt, rendered_prompt=rendered)
    good = json.dumps({"section_keys": ["advanced"], "reason": "need the manual"})
    with pytest.raises(VisibilityExpansionRequired) as info:
        dispatcher.execute(ToolCall(id="c1", name=OPEN_SECTIONS_TOOL, arguments=good))
    assert info.value.section_keys == ("advanced",)

    bad = json.dumps({"section_keys": ["basics"], "reason": "curious"})
    execution = dispatcher.execute(ToolCall(id="c2", name=OPEN_SECTIONS_TOOL, arguments=bad))
    assert not execution.result.success
    assert "unknown section key(s): basics" in execution.result.message
