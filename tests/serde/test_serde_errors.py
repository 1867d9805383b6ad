"""SerdeError: the message a model reads, and the issue records behind it."""

from __future__ import annotations

import dataclasses
import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from weakprompt.serde import SerdeError, SerdeIssue, parse
from weakprompt.serde.errors import describe_value


@dataclasses.dataclass
class Row:
    values: list[int]


def test_message_lists_every_issue_compactly() -> None:
    with pytest.raises(SerdeError) as caught:
        parse(Row, {"values": [1, "two", 3.5], "colour": "red"})
    text = str(caught.value)
    assert text.splitlines() == [
        "invalid Row (3 problems):",
        '- $.values[1]: expected integer; received string "two"',
        "- $.values[2]: expected integer; received number 3.5",
        '- $.colour: expected only known fields (values); received unknown field "colour"',
    ]


def test_single_problem_message_and_non_class_target() -> None:
    with pytest.raises(SerdeError) as caught:
        parse(list[int] | None, "x")
    assert str(caught.value).startswith("invalid list[int] | None (1 problem):")


def test_long_issue_lists_are_cut() -> None:
    with pytest.raises(SerdeError) as caught:
        parse(list[int], ["x"] * 30)
    lines = str(caught.value).splitlines()
    assert len(caught.value.issues) == 30
    assert lines[-1] == "- ... and 10 more"
    assert len(lines) == 22


def test_serde_error_pickles_with_its_issues() -> None:
    err = SerdeError([SerdeIssue("$.a", "integer", "null")], target="Row")
    again = pickle.loads(pickle.dumps(err))
    assert again.issues == err.issues
    assert str(again) == str(err)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (None, "null"),
        (True, "boolean true"),
        (False, "boolean false"),
        (12, "integer 12"),
        (10**60, "integer " + "1" + "0" * 39 + "..."),
        (1.5, "number 1.5"),
        ("hi", 'string "hi"'),
        ('a"b\nc\\', 'string "a\\"b\\nc\\\\"'),
        ("x" * 100, 'string "' + "x" * 37 + '..."'),
        ({}, "empty object"),
        ({"a": 1, "b": 2}, "object with keys {a, b}"),
        ({str(i): i for i in range(7)}, "object with keys {0, 1, 2, 3, 4, ...}"),
        ([], "empty array"),
        ([1], "array of 1 item"),
        ((1, 2), "array of 2 items"),
        (object(), "non-JSON value of type object"),
    ],
)
def test_received_values_are_abbreviated(value: object, text: str) -> None:
    assert describe_value(value) == text


_JSON = st.recursive(
    st.none() | st.text() | st.integers(),
    lambda inner: st.lists(inner, max_size=8) | st.dictionaries(st.text(), inner, max_size=8),
    max_leaves=10,
)


@given(_JSON)
def test_descriptions_stay_short(value: object) -> None:
    assert len(describe_value(value)) <= 130
