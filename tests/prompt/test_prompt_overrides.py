"""Overrides: descriptor hashes, the local store, stale overrides, param descriptions."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from weakprompt.errors import PromptRenderError, PromptValidationError
from weakprompt.prompt import (
    LocalOverridesStore,
    MarkdownSection,
    OverriddenTool,
    OverridesStore,
    Prompt,
    PromptOverrides,
    PromptTemplate,
    SectionOverride,
    ToolOverride,
)
from weakprompt.tools import Tool, ToolContext, ToolResult


@dataclass(frozen=True)
class Params:
    who: str


@dataclass(frozen=True)
class FetchArgs:
    url: str = field(metadata={"description": "Address to fetch."})
    retries: int = 0


def fetch(params: FetchArgs, *, context: ToolContext) -> ToolResult[None]:
    return ToolResult.ok(None)


FETCH = Tool(name="fetch", description="Fetch a page.", handler=fetch)


def template() -> PromptTemplate[None]:
    return PromptTemplate(
        ns="tests/overrides",
        key="demo",
        sections=[
            MarkdownSection(title="Intro", key="intro", template="Hi $who.", params_type=Params),
            MarkdownSection(
                title="Web",
                key="web",
                template="Use fetch.",
                tools=[FETCH],
                children=[
                    MarkdownSection(title="Fixed", key="fixed", template="Fixed.", accepts_overrides=False)
                ],
            ),
        ],
    )


def store_with(tmp_path: Path, overrides: PromptOverrides) -> LocalOverridesStore:
    store = LocalOverridesStore(tmp_path)
    store.save(overrides)
    return store


class MemoryStore:
    """Any object with load/save is an OverridesStore; keeps one bundle as given."""

    def __init__(self, overrides: PromptOverrides) -> None:
        self.overrides = overrides

    def load(self, ns: str, key: str, tag: str) -> PromptOverrides | None:
        return self.overrides

    def save(self, overrides: PromptOverrides) -> Path:
        self.overrides = overrides
        return Path("memory")


def hashes(t: PromptTemplate[None]) -> tuple[str, str, str]:
    d = t.descriptor
    intro, web = d.sections
    (tool,) = d.tools
    return intro.content_hash, web.content_hash, tool.content_hash


def test_matching_section_override_is_applied(tmp_path: Path) -> None:
    t = template()
    intro_hash, _, _ = hashes(t)
    store = store_with(
        tmp_path,
        PromptOverrides(
            ns=t.ns,
            key=t.key,
            sections={"intro": SectionOverride(expected_hash=intro_hash, body="Hello, $who!")},
        ),
    )
    text = Prompt(t, overrides_store=store).bind(Params("Ann")).render().text
    assert text.startswith("## 1. Intro\n\nHello, Ann!")


def test_stale_section_override_is_skipped_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    t = template()
    store = store_with(
        tmp_path,
        PromptOverrides(
            ns=t.ns, key=t.key, sections={"intro": SectionOverride(expected_hash="0" * 64, body="HACKED")}
        ),
    )
    with caplog.at_level(logging.WARNING, logger="weakprompt.prompt"):
        text = Prompt(t, overrides_store=store).bind(Params("Ann")).render().text
    assert "HACKED" not in text
    assert "Hi Ann." in text
    (record,) = caplog.records
    assert record.levelno == logging.WARNING
    assert "'intro' skipped: stale" in record.getMessage()


@pytest.mark.parametrize(
    ("path", "body", "problem"),
    [
        ("nowhere", "x", "no such section"),
        ("web/fixed", "x", "does not accept overrides"),
        ("intro", "Hi $nobody", "no matching field"),
    ],
)
def test_unusable_section_overrides_are_skipped(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, path: str, body: str, problem: str
) -> None:
    t = template()
    fixed_hash = __import__("hashlib").sha256(b"Fixed.").hexdigest()
    expected = {"intro": hashes(t)[0], "web/fixed": fixed_hash}.get(path, "x")
    store = store_with(
        tmp_path, PromptOverrides(ns=t.ns, key=t.key, sections={path: SectionOverride(expected, body)})
    )
    with caplog.at_level(logging.WARNING, logger="weakprompt.prompt"):
        rendered = Prompt(t, overrides_store=store).bind(Params("Ann")).render()
    assert rendered.text == Prompt(t).bind(Params("Ann")).render().text
    assert problem in caplog.text


def test_tool_override_reaches_schema_and_offered_tool(tmp_path: Path) -> None:
    t = template()
    _, _, tool_hash = hashes(t)
    store = store_with(
        tmp_path,
        PromptOverrides(
            ns=t.ns,
            key=t.key,
            tools={
                "fetch": ToolOverride(
                    name="fetch",
                    expected_hash=tool_hash,
                    description="Download one web page.",
                    param_descriptions={"retries": "How often to retry.", "url": "Absolute URL."},
                )
            },
        ),
    )
    plain = Prompt(t).bind(Params("a")).render()
    rendered = Prompt(t, overrides_store=store).bind(Params("a")).render()
    schema = rendered.tool_schema("fetch")
    assert schema is not None
    assert schema["description"] == "Download one web page."
    props = schema["parameters"]["properties"]  # type: ignore[index,call-overload]
    assert props["retries"]["description"] == "How often to retry."
    assert props["url"]["description"] == "Absolute URL."
    assert rendered.tool_hashes != plain.tool_hashes
    # The offered tool itself advertises the same thing, so adapters reading tool.spec() agree.
    offered = rendered.tool_by_name("fetch")
    assert isinstance(offered, OverriddenTool)
    assert offered.spec() == schema
    assert offered.handler is FETCH.handler
    assert offered.parameters_schema(strict=True)["properties"]["url"]["description"] == "Absolute URL."  # type: ignore[index,call-overload]
    # The declared tool and its cached schema are untouched.
    assert FETCH.spec()["description"] == "Fetch a page."
    assert plain.tool_schema("fetch") == FETCH.spec()
    assert FETCH.parameters_schema()["properties"]["url"]["description"] == "Address to fetch."  # type: ignore[index,call-overload]


def test_param_only_override_keeps_the_description(tmp_path: Path) -> None:
    t = template()
    store = store_with(
        tmp_path,
        PromptOverrides(
            ns=t.ns,
            key=t.key,
            tools={
                "fetch": ToolOverride(
                    name="fetch", expected_hash=hashes(t)[2], param_descriptions={"url": "U"}
                )
            },
        ),
    )
    schema = Prompt(t, overrides_store=store).bind(Params("a")).render().tool_schema("fetch")
    assert schema is not None and schema["description"] == "Fetch a page."


@pytest.mark.parametrize(
    ("name", "override", "problem"),
    [
        ("fetch", ToolOverride(name="fetch", expected_hash="bad", description="New."), "stale"),
        ("ghost", ToolOverride(name="ghost", expected_hash="x", description="New."), "no such tool"),
        ("fetch", ToolOverride(name="other", expected_hash="x", description="New."), "names tool 'other'"),
        ("fetch", None, "unknown parameter(s) nope"),
        ("fetch", "long", "1-200 characters"),
    ],
)
def test_unusable_tool_overrides_are_skipped(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, name: str, override: object, problem: str
) -> None:
    t = template()
    good = hashes(t)[2]
    if override is None:
        override = ToolOverride(name="fetch", expected_hash=good, param_descriptions={"nope": "x"})
    elif override == "long":
        override = ToolOverride(name="fetch", expected_hash=good, description="x" * 201)
    assert isinstance(override, ToolOverride)
    store = MemoryStore(PromptOverrides(ns=t.ns, key=t.key, tools={name: override}))
    assert isinstance(store, OverridesStore)
    with caplog.at_level(logging.WARNING, logger="weakprompt.prompt"):
        rendered = Prompt(t, overrides_store=store).bind(Params("a")).render()
    assert rendered.tool_schema("fetch") == FETCH.spec()
    assert problem in caplog.text


def test_tool_that_refuses_overrides_is_not_overridden(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    locked = Tool(name="locked", description="Locked.", handler=fetch, accepts_overrides=False)
    t = PromptTemplate(
        ns="t", key="k", sections=[MarkdownSection(title="A", key="a", template="", tools=[locked])]
    )
    store = store_with(
        tmp_path,
        PromptOverrides(
            ns="t",
            key="k",
            tools={"locked": ToolOverride(name="locked", expected_hash="x", description="Y.")},
        ),
    )
    with caplog.at_level(logging.WARNING, logger="weakprompt.prompt"):
        rendered = Prompt(t, overrides_store=store).render()
    assert rendered.tool_schemas[0]["description"] == "Locked."
    assert "does not accept overrides" in caplog.text


def test_store_versions_and_round_trip(tmp_path: Path) -> None:
    store = LocalOverridesStore(tmp_path)
    assert isinstance(store, OverridesStore)
    assert store.load("a/b", "k", "latest") is None
    first = PromptOverrides(ns="a/b", key="k", sections={"x": SectionOverride("h1", "one")})
    second = PromptOverrides(
        ns="a/b",
        key="k",
        sections={"x": SectionOverride("h2", "two")},
        tools={
            "t": ToolOverride(name="t", expected_hash="th", description=None, param_descriptions={"p": "d"})
        },
    )
    p1 = store.save(first)
    p2 = store.save(second)
    assert p1 == tmp_path / "a" / "b" / "k" / "latest" / "v000001.json"
    assert p2.name == "v000002.json"
    assert store.versions("a/b", "k", "latest") == (1, 2)
    assert store.load("a/b", "k", "latest") == second
    assert store.load("a/b", "k", "latest", version=1) == first
    assert not list(p1.parent.glob(".tmp-*"))
    with pytest.raises(PromptRenderError, match="no version 7"):
        store.load("a/b", "k", "latest", version=7)
    # Tags are separate folders.
    assert store.load("a/b", "k", "beta") is None


@given(
    st.dictionaries(
        st.from_regex(r"[a-z]{1,5}(/[a-z]{1,5})?", fullmatch=True),
        st.tuples(st.text(), st.text()),
        max_size=3,
    ),
    st.dictionaries(
        st.from_regex(r"[a-z_]{1,8}", fullmatch=True),
        st.tuples(
            st.text(), st.none() | st.text(), st.dictionaries(st.text(min_size=1), st.text(), max_size=2)
        ),
        max_size=3,
    ),
)
def test_overrides_json_round_trip(
    sections: dict[str, tuple[str, str]], tools: dict[str, tuple[str, str | None, dict[str, str]]]
) -> None:
    overrides = PromptOverrides(
        ns="n",
        key="k",
        tag="v1",
        sections={p: SectionOverride(h, b) for p, (h, b) in sections.items()},
        tools={
            n: ToolOverride(name=n, expected_hash=h, description=d, param_descriptions=pd)
            for n, (h, d, pd) in tools.items()
        },
    )
    assert PromptOverrides.from_json(json.loads(json.dumps(overrides.to_json()))) == overrides


def test_invalid_json_on_disk_names_the_file(tmp_path: Path) -> None:
    store = LocalOverridesStore(tmp_path)
    folder = store.folder("n", "k", "latest")
    folder.mkdir(parents=True)
    bad = folder / "v000001.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(PromptRenderError, match=r"v000001\.json is not valid JSON"):
        store.load("n", "k", "latest")
    t = PromptTemplate(ns="n", key="k", sections=[MarkdownSection(title="A", key="a", template="")])
    with pytest.raises(PromptRenderError, match="not valid JSON"):
        Prompt(t, overrides_store=store).render()


@pytest.mark.parametrize(
    ("document", "problem"),
    [
        ([], r"\$: expected an object"),
        ({"format": 99}, "unsupported format 99"),
        (
            {"format": 1, "ns": "n", "key": "k", "tag": "latest", "sections": {"a": {"body": "x"}}},
            r"\$\.sections\['a'\]\.expected_hash",
        ),
        (
            {"format": 1, "ns": "n", "key": "k", "tag": "latest", "tools": {"t": 3}},
            r"\$\.tools\['t'\]: expected an object",
        ),
        (
            {
                "format": 1,
                "ns": "n",
                "key": "k",
                "tag": "latest",
                "tools": {"t": {"expected_hash": "h", "description": 5}},
            },
            "description: expected a string",
        ),
        ({"format": 1, "ns": "other", "key": "k", "tag": "latest"}, "is for other/k@latest"),
    ],
)
def test_malformed_documents_are_rejected_with_their_path(
    tmp_path: Path, document: object, problem: str
) -> None:
    store = LocalOverridesStore(tmp_path)
    folder = store.folder("n", "k", "latest")
    folder.mkdir(parents=True)
    (folder / "v000001.json").write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(PromptRenderError, match=problem) as info:
        store.load("n", "k", "latest")
    assert "v000001.json" in str(info.value)


def test_store_rejects_unsafe_names(tmp_path: Path) -> None:
    store = LocalOverridesStore(tmp_path)
    with pytest.raises(PromptValidationError, match="namespace"):
        store.folder("../escape", "k", "latest")
    with pytest.raises(PromptValidationError, match="tag"):
        store.folder("n", "k", "../x")
    with pytest.raises(PromptValidationError, match="tag"):
        Prompt(template(), tag="Not Valid!")


def test_prompt_tag_selects_overrides(tmp_path: Path) -> None:
    t = template()
    store = LocalOverridesStore(tmp_path)
    store.save(
        PromptOverrides(
            ns=t.ns, key=t.key, tag="beta", sections={"intro": SectionOverride(hashes(t)[0], "Beta $who")}
        )
    )
    assert "Beta Ann" in Prompt(t, overrides_store=store, tag="beta").bind(Params("Ann")).render().text
    assert "Hi Ann." in Prompt(t, overrides_store=store).bind(Params("Ann")).render().text
    assert Prompt(t).load_overrides() is None


def test_save_never_overwrites_an_existing_version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = LocalOverridesStore(tmp_path)
    store.save(PromptOverrides(ns="n", key="k", sections={"a": SectionOverride("h", "one")}))
    real = LocalOverridesStore.versions
    calls = {"n": 0}

    def stale_versions(self: LocalOverridesStore, ns: str, key: str, tag: str) -> tuple[int, ...]:
        # The first look misses the version another writer just created.
        calls["n"] += 1
        return () if calls["n"] == 1 else real(self, ns, key, tag)

    monkeypatch.setattr(LocalOverridesStore, "versions", stale_versions)
    path = store.save(PromptOverrides(ns="n", key="k", sections={"a": SectionOverride("h", "two")}))
    monkeypatch.undo()
    assert path.name == "v000002.json"
    assert store.load("n", "k", "latest", version=1).sections["a"].body == "one"  # type: ignore[union-attr]
