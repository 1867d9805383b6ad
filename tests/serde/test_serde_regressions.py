"""Named regression tests for the ancestor's schema bugs, plus the issue's must-hold examples."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Literal

import attrs
import pytest
from jsonschema import Draft202012Validator

from weakprompt.serde import Meta, SerdeError, parse, schema


@dataclasses.dataclass(frozen=True)
class Choice:
    pick: Literal["a", "b"] | None


@dataclasses.dataclass(frozen=True)
class MaybeText:
    text: str | None


@dataclasses.dataclass(frozen=True)
class Described:
    query: str = dataclasses.field(metadata={"description": "What to search for."})
    limit: Annotated[int, Meta(description="How many hits to return.", ge=1)] = 10


@attrs.frozen
class AttrsDescribed:
    name: str = attrs.field(metadata={"description": "The person's name."})


def _accepts(tp: type, value: object) -> bool:
    return Draft202012Validator(schema(tp)).is_valid(value)


def test_regression_literal_or_none_is_not_an_empty_schema() -> None:
    prop = schema(Choice)["properties"]
    assert isinstance(prop, dict)
    assert prop["pick"] != {}
    for good in ("a", "b", None):
        assert _accepts(Choice, {"pick": good})
        assert parse(Choice, {"pick": good}) == Choice(good)
    assert not _accepts(Choice, {"pick": "c"})
    with pytest.raises(SerdeError) as caught:
        parse(Choice, {"pick": "c"})
    assert caught.value.issues[0].path == "$.pick"


def test_regression_optional_str_accepts_null() -> None:
    assert _accepts(MaybeText, {"text": None})
    assert _accepts(MaybeText, {"text": "hi"})
    assert not _accepts(MaybeText, {"text": 3})
    assert parse(MaybeText, {"text": None}) == MaybeText(None)


def test_regression_field_descriptions_appear_in_schema() -> None:
    props = schema(Described)["properties"]
    assert isinstance(props, dict)
    assert props["query"] == {"type": "string", "description": "What to search for."}
    limit = props["limit"]
    assert isinstance(limit, dict)
    assert limit["description"] == "How many hits to return."
    assert limit["minimum"] == 1
    assert limit["default"] == 10
    attrs_props = schema(AttrsDescribed)["properties"]
    assert isinstance(attrs_props, dict)
    assert attrs_props["name"] == {"type": "string", "description": "The person's name."}


def test_regression_descriptions_survive_strict_mode() -> None:
    props = schema(Described, strict=True)["properties"]
    assert isinstance(props, dict)
    query = props["query"]
    assert isinstance(query, dict)
    assert query["description"] == "What to search for."


def test_extra_key_forbidden_names_the_key() -> None:
    with pytest.raises(SerdeError) as caught:
        parse(MaybeText, {"text": "x", "colour": "red"})
    assert "colour" in str(caught.value)
    assert caught.value.issues[0].path == "$.colour"


def test_wrong_type_names_path_and_expected_type() -> None:
    with pytest.raises(SerdeError) as caught:
        parse(Described, {"query": "x", "limit": "3"})
    (issue,) = caught.value.issues
    assert issue.path == "$.limit"
    assert "integer" in issue.expected
    assert issue.received == 'string "3"'
    assert "$.limit" in str(caught.value)
