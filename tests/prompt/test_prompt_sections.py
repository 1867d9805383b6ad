"""Sections: keys, params types, placeholder checks and enabled predicates."""

from __future__ import annotations

from dataclasses import dataclass

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from weakprompt.errors import PromptValidationError
from weakprompt.prompt import KEY_PATTERN, MarkdownSection, Visibility, normalize_key


@dataclass(frozen=True)
class Greeting:
    name: str
    count: int = 1


@attrs.frozen
class AttrsParams:
    topic: str


@dataclass(frozen=True)
class Other:
    name: str


def test_key_is_normalised() -> None:
    section = MarkdownSection(title="T", key="  Tool Usage ", template="x")
    assert section.key == "tool-usage"


@pytest.mark.parametrize("bad", ["", "-lead", "has/slash", "x" * 65, "ünï", "a!b"])
def test_invalid_keys_are_rejected_with_the_key_named(bad: str) -> None:
    with pytest.raises(PromptValidationError, match="section key"):
        MarkdownSection(title="T", key=bad, template="x")


def test_non_string_key_is_rejected() -> None:
    with pytest.raises(PromptValidationError, match="must be a string"):
        normalize_key(3)  # type: ignore[arg-type]


@given(st.from_regex(KEY_PATTERN, fullmatch=True))
def test_valid_keys_survive_normalisation_unchanged(key: str) -> None:
    assert normalize_key(key) == key


def test_params_type_comes_from_default_params() -> None:
    section = MarkdownSection(title="Hi", key="hi", template="Hello $name", default_params=Greeting("a"))
    assert section.params_type is Greeting
    assert section.render_body(Greeting("Bo", 2)) == "Hello Bo"


def test_params_type_can_be_given_explicitly_for_attrs_classes() -> None:
    section = MarkdownSection(title="T", key="t", template="About ${topic}.", params_type=AttrsParams)
    assert section.render_body(AttrsParams("cats")) == "About cats."


def test_default_params_and_params_type_must_agree() -> None:
    with pytest.raises(PromptValidationError, match="default_params is a Greeting but params_type is Other"):
        MarkdownSection(title="T", key="t", template="x", default_params=Greeting("a"), params_type=Other)


def test_params_type_must_be_a_dataclass_or_attrs_class() -> None:
    with pytest.raises(
        PromptValidationError, match="must be a dataclass, an attrs class or a pydantic model"
    ):
        MarkdownSection(title="T", key="t", template="x", params_type=dict)  # type: ignore[arg-type]


def test_placeholder_without_field_fails_at_construction() -> None:
    with pytest.raises(PromptValidationError, match=r"\$nmae have no matching field on Greeting"):
        MarkdownSection(title="T", key="t", template="Hi $nmae", params_type=Greeting)


def test_placeholder_without_any_params_type_fails() -> None:
    with pytest.raises(PromptValidationError, match="no params type"):
        MarkdownSection(title="T", key="t", template="Hi $name")


def test_broken_template_syntax_fails_at_construction() -> None:
    with pytest.raises(PromptValidationError, match="invalid template syntax"):
        MarkdownSection(title="T", key="t", template="costs $ 5", params_type=Greeting)


def test_summary_placeholders_are_checked_too() -> None:
    with pytest.raises(PromptValidationError, match="summary"):
        MarkdownSection(title="T", key="t", template="x", summary="about $nope", params_type=Greeting)


def test_dollar_escape_and_value_formatting() -> None:
    section = MarkdownSection(
        title="T",
        key="t",
        template="""
            Price $$5 for $name,
              count=$count""",
        params_type=Greeting,
    )
    assert section.render_body(Greeting("Al", 3)) == "Price $5 for Al,\n  count=3"
    static = MarkdownSection(title="T", key="s", template="  only $$ literal  ")
    assert static.render_body(None) == "only $ literal"


def test_non_string_values_render_as_json() -> None:
    @dataclass
    class Rich:
        flag: bool
        items: list[str]
        maybe: str | None

    section = MarkdownSection(title="T", key="t", template="$flag $items $maybe", params_type=Rich)
    assert section.render_body(Rich(True, ["a", "b"], None)) == 'true ["a", "b"] null'


def test_enum_values_render_as_their_value() -> None:
    import enum

    class Color(enum.Enum):
        RED = "red"

    @dataclass
    class Paint:
        color: Color

    section = MarkdownSection(title="T", key="t", template="$color", params_type=Paint)
    assert section.render_body(Paint(Color.RED)) == "red"


def test_enabled_predicate_over_params_only() -> None:
    section = MarkdownSection(
        title="T", key="t", template="x", params_type=Greeting, enabled=lambda p: p.count > 1
    )
    assert section.is_enabled(Greeting("a", 2), None)
    assert not section.is_enabled(Greeting("a", 1), None)


def test_enabled_predicate_may_take_the_session() -> None:
    seen: list[object] = []

    def predicate(params: Greeting, session: object) -> bool:
        seen.append(session)
        return session is not None

    section = MarkdownSection(title="T", key="t", template="x", params_type=Greeting, enabled=predicate)
    marker = object()
    assert section.is_enabled(Greeting("a"), marker)  # type: ignore[arg-type]
    assert not section.is_enabled(Greeting("a"), None)
    assert seen == [marker, None]


def test_enabled_varargs_predicate_gets_the_session() -> None:
    section = MarkdownSection(title="T", key="t", template="x", enabled=lambda *args: len(args) == 2)
    assert section.is_enabled(None, None)


def test_enabled_builtin_callable_falls_back_to_params_only() -> None:
    section = MarkdownSection(title="T", key="t", template="x", params_type=Greeting, enabled=bool)
    assert section.is_enabled(Greeting("a"), None)


def test_enabled_must_be_bool_or_callable() -> None:
    with pytest.raises(PromptValidationError, match="enabled must be"):
        MarkdownSection(title="T", key="t", template="x", enabled="yes")  # type: ignore[arg-type]


def test_summary_visibility_needs_summary() -> None:
    with pytest.raises(PromptValidationError, match="needs a summary"):
        MarkdownSection(title="T", key="t", template="x", visibility=Visibility.SUMMARY)
    with pytest.raises(PromptValidationError, match="must not be blank"):
        MarkdownSection(title="T", key="t", template="x", summary="  ")


def test_render_summary_without_summary_raises() -> None:
    section = MarkdownSection(title="T", key="t", template="x")
    with pytest.raises(PromptValidationError, match="has no summary"):
        section.render_summary(None)


def test_empty_title_and_non_section_children_are_rejected() -> None:
    with pytest.raises(PromptValidationError, match="title must not be empty"):
        MarkdownSection(title=" ", key="t", template="x")
    with pytest.raises(PromptValidationError, match="is not a Section"):
        MarkdownSection(title="T", key="t", template="x", children=["nope"])  # type: ignore[list-item]


def test_sections_are_frozen() -> None:
    section = MarkdownSection(title="T", key="t", template="x")
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        section.title = "other"  # type: ignore[misc]


def test_override_bodies_are_checked_against_fields() -> None:
    section = MarkdownSection(title="T", key="t", template="x", params_type=Greeting)
    assert section.validate_override("Yo $name").render(Greeting("Z")) == "Yo Z"
    with pytest.raises(PromptValidationError, match="override of section 't'"):
        section.validate_override("Yo $missing")


def test_predicate_with_default_capture_gets_params_only() -> None:
    wanted = "a"
    section = MarkdownSection(
        title="T", key="t", template="x", params_type=Greeting, enabled=lambda p, want=wanted: p.name == want
    )
    assert section.is_enabled(Greeting("a"), object())  # type: ignore[arg-type]
    assert not section.is_enabled(Greeting("b"), object())  # type: ignore[arg-type]


def test_field_values_format_once_and_behave_as_a_mapping() -> None:
    from weakprompt.prompt.template import FieldValues, format_value

    values = FieldValues(Greeting("Al", 2))
    assert len(values) == 0
    assert values["count"] == "2"
    assert values["count"] is values["count"]
    assert list(values) == ["count"] and len(values) == 1
    with pytest.raises(KeyError):
        values["missing"]
    with pytest.raises(KeyError):
        FieldValues(None)["name"]
    assert format_value(1.5) == "1.5"
    assert format_value(float("inf")) == "Infinity"
    assert format_value(False) == "false"
