"""Rendering: numbering, enable/disable of text and tools, determinism, binding."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from hypothesis import given
from hypothesis import strategies as st

from weakprompt.errors import PromptRenderError
from weakprompt.prompt import AnySection, MarkdownSection, Prompt, PromptTemplate
from weakprompt.tools import Tool, ToolContext, ToolExample, ToolResult


@dataclass(frozen=True)
class Flags:
    on: frozenset[str] = frozenset()


@dataclass(frozen=True)
class LookupArgs:
    entity_id: str = field(metadata={"description": "Entity to fetch."})


@dataclass(frozen=True)
class LookupResult:
    url: str


def lookup(params: LookupArgs, *, context: ToolContext) -> ToolResult[LookupResult]:
    return ToolResult.ok(LookupResult(url=f"https://x/{params.entity_id}"))


def make_tool(
    name: str, *, examples: tuple[ToolExample[LookupArgs, LookupResult], ...] = ()
) -> Tool[LookupArgs, LookupResult]:
    return Tool(name=name, description=f"Tool {name}.", handler=lookup, examples=examples)


@dataclass(frozen=True)
class Greeting:
    name: str


@dataclass(frozen=True)
class Style:
    tone: str


def two_level() -> PromptTemplate[None]:
    return PromptTemplate(
        ns="tests/render",
        key="two-level",
        sections=[
            MarkdownSection(
                title="Intro",
                key="intro",
                template="Hello $name.",
                params_type=Greeting,
                children=[
                    MarkdownSection(
                        title="Lookup",
                        key="lookup",
                        template="Use the lookup tool.",
                        tools=[
                            make_tool(
                                "lookup_entity",
                                examples=(
                                    ToolExample(
                                        description="Basic lookup",
                                        input=LookupArgs("abc"),
                                        output=LookupResult("https://x/abc"),
                                    ),
                                ),
                            )
                        ],
                    ),
                    MarkdownSection(title="Tone", key="tone", template="Be $tone.", params_type=Style),
                ],
            ),
            MarkdownSection(title="Finish", key="finish", template="Reply briefly."),
        ],
    )


def test_two_level_render_text_is_numbered_and_documents_examples() -> None:
    rendered = Prompt(two_level()).bind(Greeting("Ann"), Style("kind")).render()
    assert rendered.text == (
        "## 1. Intro\n\nHello Ann.\n\n"
        "### 1.1. Lookup\n\nUse the lookup tool.\n\n"
        "Examples for `lookup_entity`:\n"
        "- Basic lookup\n"
        '  call: {"entity_id": "abc"}\n'
        '  result: {"url": "https://x/abc"}\n\n'
        "### 1.2. Tone\n\nBe kind.\n\n"
        "## 2. Finish\n\nReply briefly."
    )
    assert rendered.tool_names == ("lookup_entity",)
    assert [s.number for s in rendered.sections] == ["1", "1.1", "1.2", "2"]
    assert rendered.sections[1].key == "lookup"
    assert rendered.sections[1].path_text == "intro/lookup"


def test_tool_schemas_are_provider_neutral_and_hashed() -> None:
    from weakprompt.canonical import content_hash

    rendered = Prompt(two_level()).bind(Greeting("Ann"), Style("kind")).render()
    (schema,) = rendered.tool_schemas
    assert schema["name"] == "lookup_entity"
    assert schema["description"] == "Tool lookup_entity."
    assert schema["parameters"]["properties"]["entity_id"]["description"] == "Entity to fetch."  # type: ignore[index,call-overload]
    assert rendered.tool_hashes == (content_hash(schema),)
    assert rendered.tool_by_name("lookup_entity") is rendered.tools[0]
    assert rendered.tool_schema("lookup_entity") is schema
    assert rendered.tool_by_name("nope") is None
    assert rendered.tool_schema("nope") is None


def test_missing_params_name_the_section() -> None:
    prompt = Prompt(two_level()).bind(Greeting("Ann"))
    with pytest.raises(PromptRenderError, match=r"section 'intro/tone' needs Style params"):
        prompt.render()


def test_bind_returns_a_new_prompt_and_leaves_the_original_alone() -> None:
    base = Prompt(two_level())
    bound = base.bind(Greeting("Ann"), Style("kind"))
    assert bound is not base
    assert base.params(Greeting) is None
    assert bound.params(Greeting) == Greeting("Ann")
    rebound = bound.bind(Greeting("Bob"))
    assert "Hello Bob." in rebound.render().text
    assert "Hello Ann." in bound.render().text


def test_bind_rejects_unknown_and_repeated_types() -> None:
    prompt = Prompt(two_level())
    with pytest.raises(PromptRenderError, match="no section takes Flags params"):
        prompt.bind(Flags())
    with pytest.raises(PromptRenderError, match="two Greeting values"):
        prompt.bind(Greeting("a"), Greeting("b"))


def test_bind_accepts_a_subclass_instance_when_unambiguous() -> None:
    @dataclass(frozen=True)
    class LoudGreeting(Greeting):
        pass

    prompt = Prompt(two_level()).bind(LoudGreeting("Zed"), Style("calm"))
    assert "Hello Zed." in prompt.render().text


def test_bind_rejects_an_instance_matching_two_declared_types() -> None:
    @dataclass(frozen=True)
    class A:
        x: str = "a"

    @dataclass(frozen=True)
    class B:
        y: str = "b"

    @dataclass(frozen=True)
    class Both(A, B):
        pass

    template = PromptTemplate(
        ns="t",
        key="amb",
        sections=[
            MarkdownSection(title="A", key="a", template="$x", params_type=A),
            MarkdownSection(title="B", key="b", template="$y", params_type=B),
        ],
    )
    with pytest.raises(PromptRenderError, match="matches several section params types"):
        Prompt(template).bind(Both())


def test_default_params_are_used_when_nothing_is_bound() -> None:
    template = PromptTemplate(
        ns="t",
        key="defaults",
        sections=[MarkdownSection(title="Hi", key="hi", template="Hi $name", default_params=Greeting("you"))],
    )
    assert Prompt(template).render().text == "## 1. Hi\n\nHi you"
    assert Prompt(template).bind(Greeting("me")).render().text == "## 1. Hi\n\nHi me"


def test_disabled_section_does_not_need_params() -> None:
    template = PromptTemplate(
        ns="t",
        key="off",
        sections=[
            MarkdownSection(title="Off", key="off", template="$name", params_type=Greeting, enabled=False),
            MarkdownSection(title="On", key="on", template="on"),
        ],
    )
    assert Prompt(template).render().text == "## 1. On\n\non"


def test_enabled_predicate_can_read_the_session() -> None:
    template = PromptTemplate(
        ns="t",
        key="session",
        sections=[
            MarkdownSection(title="S", key="s", template="with session", enabled=lambda _p, s: s is not None),
            MarkdownSection(title="E", key="e", template="always"),
        ],
    )
    from weakprompt.session import Session

    assert "with session" not in Prompt(template).render().text
    assert "with session" in Prompt(template).render(Session()).text


def test_empty_body_renders_heading_only_and_deep_headings_cap_at_six() -> None:
    def chain(depth: int) -> AnySection:
        children = [chain(depth + 1)] if depth < 6 else []
        return MarkdownSection(title=f"D{depth}", key=f"d{depth}", template="", children=children)

    template = PromptTemplate(ns="t", key="deep", sections=[chain(0)])
    lines = Prompt(template).render().text.split("\n\n")
    assert lines[0] == "## 1. D0"
    assert lines[4] == "###### 1.1.1.1.1. D4"
    assert lines[6] == "###### 1.1.1.1.1.1.1. D6"


def test_numbering_skips_disabled_siblings() -> None:
    template = PromptTemplate(
        ns="t",
        key="numbers",
        sections=[
            MarkdownSection(title="A", key="a", template="a", enabled=False),
            MarkdownSection(title="B", key="b", template="b"),
        ],
    )
    assert Prompt(template).render().text == "## 1. B\n\nb"


# -- property tests over random trees ---------------------------------------------------------


@dataclass(frozen=True)
class Shape:
    """A generated tree: each node has a key, tool count and children."""

    key: str
    tools: int
    children: tuple[Shape, ...]


def shapes() -> st.SearchStrategy[tuple[Shape, ...]]:
    counter = iter(range(10**9))

    def leaf(tools: int) -> Shape:
        return Shape(key=f"s{next(counter)}", tools=tools, children=())

    def node(args: tuple[int, tuple[Shape, ...]]) -> Shape:
        return Shape(key=f"s{next(counter)}", tools=args[0], children=args[1])

    tree = st.recursive(
        st.integers(0, 2).map(leaf),
        lambda kids: st.tuples(st.integers(0, 2), st.lists(kids, max_size=3).map(tuple)).map(node),
        max_leaves=12,
    )
    return st.lists(tree, min_size=1, max_size=4).map(tuple)


def walk(shapes_: tuple[Shape, ...]) -> list[Shape]:
    out: list[Shape] = []
    for s in shapes_:
        out.append(s)
        out.extend(walk(s.children))
    return out


def build(shapes_: tuple[Shape, ...]) -> tuple[AnySection, ...]:
    def section(s: Shape) -> AnySection:
        return MarkdownSection(
            title=s.key.upper(),
            key=s.key,
            template=f"body-of-{s.key}.",
            params_type=Flags,
            enabled=lambda flags, key=s.key: key in flags.on,
            tools=[make_tool(f"{s.key}_t{i}") for i in range(s.tools)],
            children=[section(c) for c in s.children],
        )

    return tuple(section(s) for s in shapes_)


def expected_visible(shapes_: tuple[Shape, ...], on: frozenset[str]) -> list[Shape]:
    out: list[Shape] = []
    for s in shapes_:
        if s.key in on:
            out.append(s)
            out.extend(expected_visible(s.children, on))
    return out


@given(shapes(), st.data())
def test_disabled_sections_drop_text_and_tools_and_reenabling_restores(
    tree: tuple[Shape, ...], data: st.DataObject
) -> None:
    everything = walk(tree)
    all_keys = frozenset(s.key for s in everything)
    on = frozenset(data.draw(st.sets(st.sampled_from(sorted(all_keys)))))
    prompt = Prompt(PromptTemplate(ns="prop", key="tree", sections=build(tree)))

    full = prompt.bind(Flags(all_keys)).render()
    partial = prompt.bind(Flags(on)).render()
    restored = prompt.bind(Flags(all_keys)).render()

    visible = expected_visible(tree, on)
    visible_keys = {s.key for s in visible}
    # Text: exactly the visible sections' bodies, in declaration order.
    for s in everything:
        assert (f"body-of-{s.key}." in partial.text) == (s.key in visible_keys)
    positions = [partial.text.index(f"body-of-{s.key}.") for s in visible]
    assert positions == sorted(positions)
    # Tools: exactly the visible sections' tools, in declaration order.
    assert partial.tool_names == tuple(f"{s.key}_t{i}" for s in visible for i in range(s.tools))
    assert [s.key for s in partial.sections] == [s.key for s in visible]
    # Re-enabling restores the full render byte for byte.
    assert full.tool_names == tuple(f"{s.key}_t{i}" for s in everything for i in range(s.tools))
    assert restored.text == full.text
    assert restored.tool_hashes == full.tool_hashes


@given(shapes(), st.data())
def test_rendering_is_deterministic(tree: tuple[Shape, ...], data: st.DataObject) -> None:
    keys = sorted(s.key for s in walk(tree))
    on = frozenset(data.draw(st.sets(st.sampled_from(keys))))
    # Two independently built templates with the same content render identically.
    first = Prompt(PromptTemplate(ns="prop", key="det", sections=build(tree))).bind(Flags(on)).render()
    second = Prompt(PromptTemplate(ns="prop", key="det", sections=build(tree))).bind(Flags(on)).render()
    assert first.text.encode() == second.text.encode()
    assert first.tool_hashes == second.tool_hashes
    assert first.tool_schemas == second.tool_schemas


def test_second_render_hits_the_schema_cache() -> None:
    template = two_level()
    prompt = Prompt(template).bind(Greeting("a"), Style("b"))
    prompt.render()
    misses = template.schema_cache.misses
    hits = template.schema_cache.hits
    prompt.render()
    assert template.schema_cache.misses == misses
    assert template.schema_cache.hits == hits + 1
