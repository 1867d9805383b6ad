"""Template validation: duplicate tools, examples, keys, output types."""

from __future__ import annotations

from dataclasses import dataclass

import attrs
import pytest

from weakprompt.errors import PromptValidationError
from weakprompt.prompt import MarkdownSection, PromptTemplate, Section
from weakprompt.tools import Tool, ToolContext, ToolExample, ToolResult


@dataclass(frozen=True)
class Args:
    query: str


@dataclass(frozen=True)
class Found:
    hits: int


def search(params: Args, *, context: ToolContext) -> ToolResult[Found]:
    return ToolResult.ok(Found(hits=len(params.query)))


def untyped_result(params: Args, *, context: ToolContext) -> ToolResult[None]:
    return ToolResult.ok(None)


def tool(name: str, **kwargs: object) -> Tool[Args, Found]:
    return Tool(name=name, description="Search.", handler=search, **kwargs)  # type: ignore[arg-type]


def test_duplicate_tool_names_name_both_sections() -> None:
    with pytest.raises(PromptValidationError) as info:
        PromptTemplate(
            ns="t",
            key="dup",
            sections=[
                MarkdownSection(title="A", key="a", template="a", tools=[tool("search")]),
                MarkdownSection(
                    title="B",
                    key="b",
                    template="b",
                    children=[MarkdownSection(title="C", key="c", template="c", tools=[tool("search")])],
                ),
            ],
        )
    message = str(info.value)
    assert "'search'" in message
    assert "section 'a'" in message
    assert "section 'b/c'" in message


def test_open_sections_is_a_reserved_tool_name() -> None:
    with pytest.raises(PromptValidationError, match="reserved"):
        PromptTemplate(
            ns="t",
            key="r",
            sections=[MarkdownSection(title="A", key="a", template="a", tools=[tool("open_sections")])],
        )


def test_sibling_keys_must_be_unique() -> None:
    with pytest.raises(PromptValidationError, match="share the path 'a'"):
        PromptTemplate(
            ns="t",
            key="k",
            sections=[
                MarkdownSection(title="A", key="a", template="a"),
                MarkdownSection(title="A2", key="A", template="a"),
            ],
        )


def test_same_key_under_different_parents_is_fine() -> None:
    template = PromptTemplate(
        ns="t",
        key="k",
        sections=[
            MarkdownSection(
                title="A",
                key="a",
                children=[MarkdownSection(title="N", key="notes", template="")],
                template="",
            ),
            MarkdownSection(
                title="B",
                key="b",
                children=[MarkdownSection(title="N", key="notes", template="")],
                template="",
            ),
        ],
    )
    assert [n.path for n in template.nodes] == [("a",), ("a", "notes"), ("b",), ("b", "notes")]
    assert template.section_at(("b", "notes")) is template.sections[1].children[0]
    assert template.section_at(("zzz",)) is None


def test_summary_keys_must_be_unique_across_the_tree() -> None:
    def summarized() -> MarkdownSection[None]:
        return MarkdownSection(title="N", key="notes", template="n", summary="short")

    with pytest.raises(PromptValidationError, match="both have a summary under the key 'notes'"):
        PromptTemplate(
            ns="t",
            key="k",
            sections=[
                MarkdownSection(title="A", key="a", template="", children=[summarized()]),
                MarkdownSection(title="B", key="b", template="", children=[summarized()]),
            ],
        )


def test_template_needs_sections_of_section_type() -> None:
    with pytest.raises(PromptValidationError, match="at least one section"):
        PromptTemplate(ns="t", key="k", sections=[])
    with pytest.raises(PromptValidationError, match="is not a Section"):
        PromptTemplate(ns="t", key="k", sections=["text"])  # type: ignore[list-item]


@pytest.mark.parametrize("ns", ["", "Bad NS", "a//b", "/a", "a/"])
def test_namespace_is_validated(ns: str) -> None:
    with pytest.raises(PromptValidationError, match="namespace"):
        PromptTemplate(ns=ns, key="k", sections=[MarkdownSection(title="A", key="a", template="")])


def test_prompt_key_is_normalised_and_validated() -> None:
    template = PromptTemplate(
        ns="a/b", key="My Prompt", sections=[MarkdownSection(title="A", key="a", template="")]
    )
    assert template.key == "my-prompt"
    assert template.display_name == "a/b/my-prompt"
    with pytest.raises(PromptValidationError, match="prompt key"):
        PromptTemplate(ns="a", key="!", sections=[MarkdownSection(title="A", key="a", template="")])


def test_examples_are_validated_through_serde() -> None:
    @dataclass(frozen=True)
    class Bounded:
        hits: int

    # An example whose output claims the result type but holds a value of the wrong type.
    bad = ToolExample(description="bad", input=Args("q"), output=Found(hits="many"))  # type: ignore[arg-type]
    with pytest.raises(PromptValidationError, match=r"tool 'search' example 0: output does not match"):
        PromptTemplate(
            ns="t",
            key="k",
            sections=[
                MarkdownSection(title="A", key="a", template="", tools=[tool("search", examples=(bad,))])
            ],
        )
    bad_input = ToolExample(description="bad", input=Args(query=5), output=Found(1))  # type: ignore[arg-type]
    with pytest.raises(PromptValidationError, match="input does not match"):
        PromptTemplate(
            ns="t",
            key="k",
            sections=[
                MarkdownSection(
                    title="A", key="a", template="", tools=[tool("search", examples=(bad_input,))]
                )
            ],
        )
    del Bounded


def test_example_without_result_type_renders_call_only() -> None:
    example = ToolExample(description="fire and forget", input=Args("q"), output=None)
    t = Tool(name="ping", description="Ping.", handler=untyped_result, examples=(example,))
    template = PromptTemplate(
        ns="t", key="k", sections=[MarkdownSection(title="A", key="a", template="", tools=[t])]
    )
    assert template.examples_text("ping") == 'Examples for `ping`:\n- fire and forget\n  call: {"query": "q"}'
    assert template.examples_text("unknown") == ""
    assert template.tool_owner("ping") == ("a",)
    assert template.tool_named("ping") is t


def test_output_type_is_validated_and_schema_computed() -> None:
    template = PromptTemplate(
        ns="t", key="k", sections=[MarkdownSection(title="A", key="a", template="")], output_type=Found
    )
    assert template.output_schema is not None
    assert template.output_schema["type"] == "object"
    listed = PromptTemplate(
        ns="t", key="k", sections=[MarkdownSection(title="A", key="a", template="")], output_type=list[Found]
    )
    assert listed.output_schema is not None and listed.output_schema["type"] == "array"
    for bad in (dict, list[int], int, list):
        with pytest.raises(PromptValidationError, match="output_type"):
            PromptTemplate(
                ns="t",
                key="k",
                sections=[MarkdownSection(title="A", key="a", template="")],
                output_type=bad,  # type: ignore[arg-type]
            )


def test_descriptor_lists_overridable_sections_and_tools() -> None:
    import hashlib

    template = PromptTemplate(
        ns="t",
        key="k",
        sections=[
            MarkdownSection(title="A", key="a", template="aaa", tools=[tool("search")]),
            MarkdownSection(
                title="B",
                key="b",
                template="bbb",
                accepts_overrides=False,
                tools=[tool("fixed", accepts_overrides=False)],
                children=[MarkdownSection(title="C", key="c", template="ccc")],
            ),
        ],
    )
    d = template.descriptor
    assert [s.path for s in d.sections] == [("a",), ("b", "c")]
    assert d.sections[0].content_hash == hashlib.sha256(b"aaa").hexdigest()
    assert d.sections[1].path_text == "b/c"
    assert [t.name for t in d.tools] == ["search"]
    assert d.tools[0].section_path == ("a",)
    assert d.section(("b",)) is None and d.section(("a",)) is d.sections[0]
    assert d.tool("fixed") is None and d.tool("search") is d.tools[0]


def test_custom_section_subclass_renders() -> None:
    @attrs.frozen(kw_only=True, eq=False)
    class Shout(Section[None]):
        text: str

        @property
        def override_source(self) -> str:
            return self.text

        def render_body(self, params: None, *, override: object = None, values: object = None) -> str:
            return self.text.upper()

    from weakprompt.prompt import Prompt

    template = PromptTemplate(ns="t", key="k", sections=[Shout(title="S", key="s", text="hey")])
    assert Prompt(template).render().text == "## 1. S\n\nHEY"
